/* Tests the tiled (flash-style) attention kernels against a naive reference that
   builds the full T x T probability matrix: sequence lengths below, at, across and
   far past the 64-row tile, causal and not, f64 and f32, large scores (the online
   softmax rescaling), the backward against central differences across tile borders,
   and bit-identical results for 1 and 2 threads. */
#include <omp.h>

#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

struct Grads {
  Buf dq, dk, dv;
};

/* The reference of masked_attention and cross-attention: q [B, Tq, H*Dh] over k, v
   [B, Tk, Hkv*Dh] (query head h reads key/value head h / (H / Hkv)), key j of batch
   row b hidden where mask[b, j] == 0 (mask may be null), and a row with no visible
   key giving 0 and no gradient: in double, one whole Tq x Tk matrix at a time. */
Buf naiveGeneral(const Buf &q, const Buf &k, const Buf &v, const Buf *mask, const Buf *dy, int64_t H, int64_t Hkv,
                 bool causal, Grads *g) {
  const int64_t B = q.type.shape[0], Tq = q.type.shape[1], C = q.type.shape[2], Tk = k.type.shape[1];
  const int64_t Dh = C / H, Ck = Hkv * Dh;
  const double scale = 1.0 / std::sqrt((double)Dh);
  Buf y(DType::F64, q.type.shape);
  if (g) *g = {Buf(DType::F64, q.type.shape), Buf(DType::F64, k.type.shape), Buf(DType::F64, k.type.shape)};
  auto qa = [&](int64_t b, int64_t t, int64_t h, int64_t e) { return (b * Tq + t) * C + h * Dh + e; };
  auto ka = [&](int64_t b, int64_t t, int64_t h, int64_t e) { return (b * Tk + t) * Ck + (h / (H / Hkv)) * Dh + e; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> P(Tq * Tk, 0.0), dP(Tq * Tk, 0.0);
      for (int64_t i = 0; i < Tq; ++i) {
        double mx = -INFINITY;
        std::vector<bool> seen(Tk);
        for (int64_t j = 0; j < Tk; ++j)
          seen[j] = !(causal && j > i) && !(mask && mask->get(b * Tk + j) == 0.0);
        for (int64_t j = 0; j < Tk; ++j) {
          double d = 0;
          for (int64_t e = 0; e < Dh; ++e) d += q.get(qa(b, i, h, e)) * k.get(ka(b, j, h, e));
          P[i * Tk + j] = d * scale;
          if (seen[j]) mx = std::max(mx, P[i * Tk + j]);
        }
        double z = 0;
        for (int64_t j = 0; j < Tk; ++j) z += (P[i * Tk + j] = seen[j] ? std::exp(P[i * Tk + j] - mx) : 0.0);
        for (int64_t j = 0; j < Tk; ++j) P[i * Tk + j] = z > 0 ? P[i * Tk + j] / z : 0.0;
        for (int64_t e = 0; e < Dh; ++e) {
          double o = 0;
          for (int64_t j = 0; j < Tk; ++j) o += P[i * Tk + j] * v.get(ka(b, j, h, e));
          y.set(qa(b, i, h, e), o);
        }
      }
      if (!g) continue;
      for (int64_t i = 0; i < Tq; ++i) {
        double rowDot = 0;
        for (int64_t j = 0; j < Tk; ++j) {
          double d = 0;
          for (int64_t e = 0; e < Dh; ++e) d += dy->get(qa(b, i, h, e)) * v.get(ka(b, j, h, e));
          dP[i * Tk + j] = d;
          rowDot += P[i * Tk + j] * d;
        }
        for (int64_t j = 0; j < Tk; ++j) dP[i * Tk + j] = P[i * Tk + j] * (dP[i * Tk + j] - rowDot) * scale;
      }
      for (int64_t e = 0; e < Dh; ++e) {
        for (int64_t i = 0; i < Tq; ++i) {
          double dq = 0;
          for (int64_t j = 0; j < Tk; ++j) dq += dP[i * Tk + j] * k.get(ka(b, j, h, e));
          g->dq.set(qa(b, i, h, e), dq);
        }
        for (int64_t j = 0; j < Tk; ++j) {  // dk, dv summed over the query heads of a group
          double dk = 0, dv = 0;
          for (int64_t i = 0; i < Tq; ++i) {
            dk += dP[i * Tk + j] * q.get(qa(b, i, h, e));
            dv += P[i * Tk + j] * dy->get(qa(b, i, h, e));
          }
          g->dk.set(ka(b, j, h, e), g->dk.get(ka(b, j, h, e)) + dk);
          g->dv.set(ka(b, j, h, e), g->dv.get(ka(b, j, h, e)) + dv);
        }
      }
    }
  return y;
}

/* Plain and causal self-attention (no padding mask, as many key/value heads as
   query heads): naiveGeneral's special case. */
Buf naive(const Buf &q, const Buf &k, const Buf &v, const Buf *dy, int64_t H, bool causal, Grads *g) {
  return naiveGeneral(q, k, v, nullptr, dy, H, H, causal, g);
}

Attrs att(int64_t H, bool causal) { return attrs({{"num_heads", H}, {"causal", causal}}); }

TEST(Attention, TiledForwardMatchesNaive) {
  for (DType dt : {DType::F64, DType::F32})
    for (bool causal : {false, true})
      for (int64_t T : {1, 5, 63, 64, 65, 130, 200})
        for (int64_t H : {1, 3}) {
          Shape s{2, T, 6 * H};
          Buf q = randn(s), k = randn(s), v = randn(s);
          Buf y = runKernel("attention", {q.as(dt), k.as(dt), v.as(dt)}, {{dt, s}}, att(H, causal))[0];
          double tol = dt == DType::F64 ? 1e-12 : 2e-5;
          EXPECT_TRUE(allClose(y, naive(q, k, v, nullptr, H, causal, nullptr), tol, tol))
              << dtypeName(dt) << " T=" << T << " H=" << H << " causal=" << causal;
        }
}

/* Scores of +-100 and more: the running max changes from tile to tile, and a tile's
   rows must be rescaled exactly; exp of the raw scores would overflow. */
TEST(Attention, LargeScores) {
  for (bool causal : {false, true}) {
    Shape s{1, 150, 8};
    Buf q = randn(s, DType::F64, 12.0), k = randn(s, DType::F64, 12.0), v = randn(s), dy = randn(s);
    // Later keys score higher, so the max grows from one key tile to the next.
    for (int64_t t = 0; t < 150; ++t) k.set(t * 8, k.get(t * 8) + 0.5 * (double)t);
    Grads ref;
    Buf yRef = naive(q, k, v, &dy, 2, causal, &ref);
    Buf y = runKernel("attention", {q, k, v}, {q.type}, att(2, causal))[0];
    EXPECT_TRUE(allClose(y, yRef, 1e-10, 1e-10)) << "causal=" << causal;
    auto d = runKernel("attention_grad", {q, k, v, dy}, {q.type, q.type, q.type}, att(2, causal));
    EXPECT_TRUE(allClose(d[0], ref.dq, 1e-9, 1e-9)) << "dq causal=" << causal;
    EXPECT_TRUE(allClose(d[1], ref.dk, 1e-9, 1e-9)) << "dk causal=" << causal;
    EXPECT_TRUE(allClose(d[2], ref.dv, 1e-9, 1e-9)) << "dv causal=" << causal;
  }
}

TEST(Attention, TiledBackwardMatchesNaive) {
  for (DType dt : {DType::F64, DType::F32})
    for (bool causal : {false, true})
      for (int64_t T : {1, 7, 64, 65, 130}) {
        const int64_t H = 2;
        Shape s{2, T, 4 * H};
        Buf q = randn(s), k = randn(s), v = randn(s), dy = randn(s);
        Grads ref;
        naive(q, k, v, &dy, H, causal, &ref);
        auto d = runKernel("attention_grad", {q.as(dt), k.as(dt), v.as(dt), dy.as(dt)}, {{dt, s}, {dt, s}, {dt, s}},
                           att(H, causal));
        double tol = dt == DType::F64 ? 1e-11 : 1e-4;
        EXPECT_TRUE(allClose(d[0], ref.dq, tol, tol)) << dtypeName(dt) << " dq T=" << T << " causal=" << causal;
        EXPECT_TRUE(allClose(d[1], ref.dk, tol, tol)) << dtypeName(dt) << " dk T=" << T << " causal=" << causal;
        EXPECT_TRUE(allClose(d[2], ref.dv, tol, tol)) << dtypeName(dt) << " dv T=" << T << " causal=" << causal;
      }
}

/* Finite differences of the tiled forward itself, with T spanning two tiles and
   a partial third, so both kernels' tile seams are covered independently of the
   naive reference. */
TEST(Attention, BackwardMatchesFiniteDifferences) {
  for (bool causal : {false, true}) {
    Shape s{1, 131, 4};
    Buf q = randn(s), k = randn(s), v = randn(s), dy = randn(s);
    Attrs a = att(2, causal);
    auto d = runKernel("attention_grad", {q, k, v, dy}, {q.type, q.type, q.type}, a);
    auto f = [&](const std::vector<Buf> &in) { return runKernel("attention", in, {q.type}, a)[0]; };
    const char *names[] = {"dq", "dk", "dv"};
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(allClose(d[i], finiteDiff(f, {q, k, v}, i, dy), 1e-6, 1e-7)) << names[i] << " causal=" << causal;
  }
}

/* attention_stats returns attention's output bit for bit and each row's logsumexp;
   attention_grad_stats, which reads them, returns attention_grad's gradients bit for
   bit (the recompute it skips is the same function over the same query blocks), over
   several 128-query tiles, grouped heads and both masks. */
TEST(Attention, StatsPairMatchesRecomputingPair) {
  for (DType dt : {DType::F64, DType::F32})
    for (bool causal : {false, true})
      for (int64_t T : {5, 130, 260}) {
        const int64_t H = 4, Hkv = 2, Dh = 8;
        Shape s{2, T, H * Dh}, skv{2, T, Hkv * Dh};
        Buf q = randn(s, dt), k = randn(skv, dt), v = randn(skv, dt), dy = randn(s, dt);
        Attrs a = attrs({{"num_heads", H}, {"causal", causal}, {"num_kv_heads", Hkv}});
        Buf y = runKernel("attention", {q, k, v}, {q.type}, a)[0];
        auto st = runKernel("attention_stats", {q, k, v}, {q.type, {dt, {2, H, T}}}, a);
        EXPECT_EQ(std::memcmp(st[0].data(), y.data(), y.type.bytes()), 0) << "y T=" << T << " causal=" << causal;
        // lse against the naive row logsumexp of the scaled, masked scores.
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
              double mx = -INFINITY, sum = 0;
              std::vector<double> sc;
              for (int64_t j = 0; j <= (causal ? i : T - 1); ++j) {
                double dot = 0;
                for (int64_t e = 0; e < Dh; ++e)
                  dot += q.get((b * T + i) * H * Dh + h * Dh + e) * k.get((b * T + j) * Hkv * Dh + h / 2 * Dh + e);
                sc.push_back(dot / std::sqrt((double)Dh));
                mx = std::max(mx, sc.back());
              }
              for (double x : sc) sum += std::exp(x - mx);
              EXPECT_NEAR(st[1].get((b * H + h) * T + i), mx + std::log(sum), dt == DType::F64 ? 1e-10 : 1e-4);
            }
        auto ref = runKernel("attention_grad", {q, k, v, dy}, {q.type, k.type, v.type}, a);
        auto got = runKernel("attention_grad_stats", {q, k, v, st[0], st[1], dy}, {q.type, k.type, v.type}, a);
        for (size_t i = 0; i < 3; ++i)
          EXPECT_EQ(std::memcmp(got[i].data(), ref[i].data(), ref[i].type.bytes()), 0)
              << "gradient " << i << " T=" << T << " causal=" << causal << " " << dtypeName(dt);
      }
}

/* The packed ops read q, k, v as column blocks of one qkv [B, T, (H + 2*Hkv)*Dh] and
   write dq, dk, dv as those of one dqkv: the unpacked ops' bits (the same tile math over
   other strides), over several 128-query tiles, grouped heads and the causal mask. */
TEST(Attention, PackedOpsMatchUnpacked) {
  for (DType dt : {DType::F64, DType::F32})
    for (bool causal : {false, true})
      for (int64_t T : {5, 130}) {
        const int64_t B = 2, H = 4, Hkv = 2, Dh = 8, W = (H + 2 * Hkv) * Dh;
        const int64_t cols[3] = {0, H * Dh, (H + Hkv) * Dh}, widths[3] = {H * Dh, Hkv * Dh, Hkv * Dh};
        Buf qkv = randn({B, T, W}, dt), dy = randn({B, T, H * Dh}, dt);
        std::vector<Buf> parts;  // q, k, v copied out of qkv
        for (int p = 0; p < 3; ++p) {
          parts.emplace_back(dt, Shape{B, T, widths[p]});
          for (int64_t r = 0; r < B * T; ++r)
            for (int64_t c = 0; c < widths[p]; ++c) parts[p].set(r * widths[p] + c, qkv.get(r * W + cols[p] + c));
        }
        Attrs a = attrs({{"num_heads", H}, {"causal", causal}, {"num_kv_heads", Hkv}});
        const TensorType yT{dt, {B, T, H * Dh}}, lseT{dt, {B, H, T}};
        const std::string what = "T=" + std::to_string(T) + " causal=" + std::to_string(causal) + " " + dtypeName(dt);
        auto same = [&](const Buf &x, const Buf &y) {
          return x.type.dtype == y.type.dtype && x.type.shape == y.type.shape && std::memcmp(x.data(), y.data(), x.type.bytes()) == 0;
        };
        auto ref = runKernel("attention_stats", {parts[0], parts[1], parts[2]}, {yT, lseT}, a);
        auto got = runKernel("packed_attention_stats", {qkv}, {yT, lseT}, a);
        EXPECT_TRUE(same(got[0], ref[0])) << "y " << what;
        EXPECT_TRUE(same(got[1], ref[1])) << "lse " << what;
        EXPECT_TRUE(same(runKernel("packed_attention", {qkv}, {yT}, a)[0], ref[0])) << "forward " << what;
        auto grads = runKernel("attention_grad_stats", {parts[0], parts[1], parts[2], ref[0], ref[1], dy},
                               {parts[0].type, parts[1].type, parts[2].type}, a);
        Buf dqkv = runKernel("packed_attention_grad_stats", {qkv, ref[0], ref[1], dy}, {qkv.type}, a)[0];
        int64_t differ = 0;
        for (int p = 0; p < 3; ++p)
          for (int64_t r = 0; r < B * T; ++r)
            for (int64_t c = 0; c < widths[p]; ++c)
              differ += dqkv.get(r * W + cols[p] + c) != grads[p].get(r * widths[p] + c);
        EXPECT_EQ(differ, 0) << "dqkv " << what;
      }
}

/* Work is split into items whose arithmetic does not depend on which thread runs
   them, so the bits do not depend on the thread count. */
TEST(Attention, SameBitsForAnyThreadCount) {
  Shape s{3, 100, 16};
  Buf q = randn(s, DType::F32), k = randn(s, DType::F32), v = randn(s, DType::F32), dy = randn(s, DType::F32);
  std::vector<std::vector<Buf>> runs;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<Buf> r = runKernel("attention", {q, k, v}, {q.type}, att(4, true));
    for (Buf &g : runKernel("attention_grad", {q, k, v, dy}, {q.type, q.type, q.type}, att(4, true)))
      r.push_back(std::move(g));
    runs.push_back(std::move(r));
  }
  omp_set_num_threads(saved);
  for (size_t t = 1; t < runs.size(); ++t)
    for (size_t i = 0; i < runs[0].size(); ++i)
      EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[t][i].data(), runs[0][i].type.bytes()), 0)
          << "output " << i << " differs between 1 and " << t + 1 << " threads";
}

/* cached_attention of C new queries at `offset` over a cache of W rows equals rows
   offset .. offset + C - 1 of causal attention over the first offset + C rows,
   whatever the rest of the cache holds; grouped-query heads too. Keys longer than
   a 128-key tile and offsets across it cover the tiling. */
TEST(Attention, CachedMatchesCausalRows) {
  for (DType dt : {DType::F64, DType::F32})
    for (int64_t W : {4, 70, 200})
      for (int64_t C : {int64_t(1), std::min<int64_t>(W, 3), W})
        for (int64_t offset : {int64_t(0), (W - C) / 2, W - C})
          for (int64_t kvHeads : {2, 1}) {
            const int64_t H = 2, Dh = 4, L = offset + C;
            Buf full = randn({1, L, H * Dh}), kf = randn({1, L, kvHeads * Dh}), vf = randn({1, L, kvHeads * Dh});
            // Causal attention over the L positions (grouped heads expanded for the reference).
            Buf ke(DType::F64, {1, L, H * Dh}), ve(DType::F64, {1, L, H * Dh});
            for (int64_t t = 0; t < L; ++t)
              for (int64_t h = 0; h < H; ++h)
                for (int64_t e = 0; e < Dh; ++e) {
                  int64_t g = h / (H / kvHeads);
                  ke.set((t * H + h) * Dh + e, kf.get((t * kvHeads + g) * Dh + e));
                  ve.set((t * H + h) * Dh + e, vf.get((t * kvHeads + g) * Dh + e));
                }
            Buf ref = naive(full, ke, ve, nullptr, H, true, nullptr);
            // The cache: the L rows, then garbage the queries must not see.
            Buf kc = randn({1, W, kvHeads * Dh}, DType::F64, 50.0), vc = randn({1, W, kvHeads * Dh}, DType::F64, 50.0);
            for (int64_t i = 0; i < L * kvHeads * Dh; ++i) kc.set(i, kf.get(i)), vc.set(i, vf.get(i));
            Buf q(DType::F64, {1, C, H * Dh});
            for (int64_t i = 0; i < C * H * Dh; ++i) q.set(i, full.get(offset * H * Dh + i));
            Buf off(DType::I32, {});
            off.set(0, (double)offset);
            Buf y = runKernel("cached_attention", {q.as(dt), kc.as(dt), vc.as(dt), off}, {{dt, {1, C, H * Dh}}},
                              attrs({{"num_heads", H}, {"num_kv_heads", kvHeads}}))[0];
            Buf want(DType::F64, {1, C, H * Dh});
            for (int64_t i = 0; i < C * H * Dh; ++i) want.set(i, ref.get(offset * H * Dh + i));
            double tol = dt == DType::F64 ? 1e-12 : 2e-5;
            EXPECT_TRUE(allClose(y, want, tol, tol))
                << dtypeName(dt) << " W=" << W << " C=" << C << " offset=" << offset << " kv=" << kvHeads;
          }
}

Attrs attKv(int64_t H, int64_t Hkv, bool causal) {
  return attrs({{"num_heads", H}, {"num_kv_heads", Hkv}, {"causal", causal}});
}

/* A padding mask [B, Tk]: row 0 padded at the end (a key tile of 128 and more wholly
   masked when Tk is long), row 1 with every key masked, row 2 with holes. */
Buf paddingMask(int64_t Tk) {
  Buf m(DType::F64, {3, Tk});
  for (int64_t j = 0; j < Tk; ++j) {
    m.set(j, j < std::max<int64_t>(1, Tk / 3) ? 1.0 : 0.0);
    m.set(Tk + j, 0.0);
    m.set(2 * Tk + j, j % 3 == 1 ? 0.0 : 1.0);
  }
  return m;
}

/* masked_attention and its grad against the reference: padded rows, a fully masked
   batch row, grouped heads, cross-attention (Tk != Tq) across the 128-key tile, causal
   with the mask; f64 and f32. */
TEST(Attention, MaskedMatchesNaive) {
  struct Case {
    int64_t Tq, Tk;
    bool causal;
  };
  for (DType dt : {DType::F64, DType::F32})
    for (Case c : {Case{1, 1, false}, Case{5, 7, false}, Case{7, 5, false}, Case{130, 300, false},
                   Case{65, 65, true}, Case{200, 200, true}, Case{3, 140, false}})
      for (int64_t Hkv : {4, 2, 1}) {
        const int64_t H = 4, Dh = 4;
        Buf q = randn({3, c.Tq, H * Dh}), k = randn({3, c.Tk, Hkv * Dh}), v = randn({3, c.Tk, Hkv * Dh}),
            dy = randn({3, c.Tq, H * Dh}), mask = paddingMask(c.Tk);
        Grads ref;
        Buf yRef = naiveGeneral(q, k, v, &mask, &dy, H, Hkv, c.causal, &ref);
        Attrs a = attKv(H, Hkv, c.causal);
        Buf y = runKernel("masked_attention", {q.as(dt), k.as(dt), v.as(dt), mask.as(dt)}, {{dt, q.type.shape}},
                          a)[0];
        auto d = runKernel("masked_attention_grad", {q.as(dt), k.as(dt), v.as(dt), mask.as(dt), dy.as(dt)},
                           {{dt, q.type.shape}, {dt, k.type.shape}, {dt, k.type.shape}}, a);
        const double tol = dt == DType::F64 ? 1e-11 : 1e-4;
        std::string what = std::string(dtypeName(dt)) + " Tq=" + std::to_string(c.Tq) + " Tk=" +
                           std::to_string(c.Tk) + " causal=" + std::to_string(c.causal) + " Hkv=" + std::to_string(Hkv);
        EXPECT_TRUE(allClose(y, yRef, tol, tol)) << "y " << what;
        EXPECT_TRUE(allClose(d[0], ref.dq, tol, tol)) << "dq " << what;
        EXPECT_TRUE(allClose(d[1], ref.dk, tol, tol)) << "dk " << what;
        EXPECT_TRUE(allClose(d[2], ref.dv, tol, tol)) << "dv " << what;
        // Batch row 1 has no visible key: output and gradients exactly 0.
        for (int64_t i = 0; i < c.Tq * H * Dh; ++i) {
          ASSERT_EQ(y.get(c.Tq * H * Dh + i), 0.0) << what;
          ASSERT_EQ(d[0].get(c.Tq * H * Dh + i), 0.0) << what;
        }
        for (int64_t i = 0; i < c.Tk * Hkv * Dh; ++i) {
          ASSERT_EQ(d[1].get(c.Tk * Hkv * Dh + i), 0.0) << what;
          ASSERT_EQ(d[2].get(c.Tk * Hkv * Dh + i), 0.0) << what;
        }
      }
}

/* Masked keys get probability exactly 0: whatever their keys and values hold
   (here scores that would dominate the softmax), the output and dq keep their bits,
   and their dk, dv are exactly 0. */
TEST(Attention, MaskedKeysHaveNoInfluence) {
  const int64_t Tq = 20, Tk = 150;
  Buf q = randn({3, Tq, 8}, DType::F32), k = randn({3, Tk, 8}, DType::F32), v = randn({3, Tk, 8}, DType::F32),
      dy = randn({3, Tq, 8}, DType::F32), mask = paddingMask(Tk).as(DType::F32);
  Buf k2 = k, v2 = v;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < Tk; ++j)
      if (mask.get(b * Tk + j) == 0.0)
        for (int64_t e = 0; e < 8; ++e) k2.set((b * Tk + j) * 8 + e, 40.0), v2.set((b * Tk + j) * 8 + e, -1e4);
  Attrs a = att(2, false);
  for (const char *op : {"masked_attention", "masked_attention_grad"}) {
    bool grad = std::string(op) == "masked_attention_grad";
    std::vector<Buf> in1{q, k, v, mask}, in2{q, k2, v2, mask};
    std::vector<TensorType> out{q.type};
    if (grad) in1.push_back(dy), in2.push_back(dy), out = {q.type, k.type, k.type};
    auto r1 = runKernel(op, in1, out, a), r2 = runKernel(op, in2, out, a);
    EXPECT_EQ(std::memcmp(r1[0].data(), r2[0].data(), r1[0].type.bytes()), 0) << op;
    if (!grad) continue;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < Tk; ++j)
        if (mask.get(b * Tk + j) == 0.0)
          for (int64_t e = 0; e < 8; ++e) {
            ASSERT_EQ(r2[1].get((b * Tk + j) * 8 + e), 0.0) << "dk of masked key " << j;
            ASSERT_EQ(r2[2].get((b * Tk + j) * 8 + e), 0.0) << "dv of masked key " << j;
          }
  }
}

/* Cross-attention without a mask (lm.attention with Tk != Tq) and grouped heads. */
TEST(Attention, CrossAttentionMatchesNaive) {
  for (auto [Tq, Tk] : {std::pair<int64_t, int64_t>{3, 9}, {150, 20}, {9, 260}})
    for (int64_t Hkv : {2, 1}) {
      const int64_t H = 2, Dh = 4;
      Buf q = randn({2, Tq, H * Dh}), k = randn({2, Tk, Hkv * Dh}), v = randn({2, Tk, Hkv * Dh}),
          dy = randn({2, Tq, H * Dh});
      Grads ref;
      Buf yRef = naiveGeneral(q, k, v, nullptr, &dy, H, Hkv, false, &ref);
      Attrs a = attKv(H, Hkv, false);
      Buf y = runKernel("attention", {q, k, v}, {q.type}, a)[0];
      auto d = runKernel("attention_grad", {q, k, v, dy}, {q.type, k.type, k.type}, a);
      EXPECT_TRUE(allClose(y, yRef, 1e-11, 1e-11)) << "Tq=" << Tq << " Tk=" << Tk;
      EXPECT_TRUE(allClose(d[0], ref.dq, 1e-11, 1e-11)) << "dq Tq=" << Tq << " Tk=" << Tk;
      EXPECT_TRUE(allClose(d[1], ref.dk, 1e-11, 1e-11)) << "dk Tq=" << Tq << " Tk=" << Tk;
      EXPECT_TRUE(allClose(d[2], ref.dv, 1e-11, 1e-11)) << "dv Tq=" << Tq << " Tk=" << Tk;
    }
}

/* Finite differences of the masked forward (the mask held fixed) across tile seams. */
TEST(Attention, MaskedBackwardMatchesFiniteDifferences) {
  for (bool causal : {false, true}) {
    // One batch row (the cost of finite differences): holes, then keys 100 .. 130
    // padded, so the third key tile (128 .. 130) is wholly masked.
    const int64_t T = 131;
    Buf q = randn({1, T, 4}), k = randn({1, T, 4}), v = randn({1, T, 4}), dy = randn({1, T, 4}),
        mask(DType::F64, {1, T});
    for (int64_t j = 0; j < T; ++j) mask.set(j, j < 100 && j % 3 != 1 ? 1.0 : 0.0);
    Attrs a = att(2, causal);
    auto d = runKernel("masked_attention_grad", {q, k, v, mask, dy}, {q.type, q.type, q.type}, a);
    auto f = [&](const std::vector<Buf> &in) {
      return runKernel("masked_attention", {in[0], in[1], in[2], mask}, {q.type}, a)[0];
    };
    const char *names[] = {"dq", "dk", "dv"};
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(allClose(d[i], finiteDiff(f, {q, k, v}, i, dy), 1e-6, 1e-7)) << names[i] << " causal=" << causal;
  }
}

/* The mask's checks: its shape [B, Tk] and q's element type; causal needs Tk = Tq. */
TEST(Attention, MaskedChecks) {
  const KernelDef *def = findKernel("masked_attention");
  ASSERT_NE(def, nullptr);
  TensorType q{DType::F32, {2, 4, 8}}, k{DType::F32, {2, 6, 8}};
  Attrs a = withDefaults("masked_attention", att(2, false));
  EXPECT_EQ(def->check({q, k, k, {DType::F32, {2, 6}}}, {q}, a), "");
  EXPECT_NE(def->check({q, k, k, {DType::F32, {2, 4}}}, {q}, a).find("mask [2, 4] must be [2, 6]"), std::string::npos);
  EXPECT_NE(def->check({q, k, k, {DType::F64, {2, 6}}}, {q}, a).find("mask"), std::string::npos);
  EXPECT_NE(def->check({q, k, k, {DType::F32, {2, 6}}}, {q}, withDefaults("masked_attention", att(2, true))).find("causal attention needs as many keys"),
            std::string::npos);
}

TEST(Attention, CachedRefusesAnOffsetOutsideTheCache) {
  Buf q = randn({1, 2, 8}), kc = randn({1, 5, 8}), off(DType::I32, {});
  off.set(0, 4);
  try {
    runKernel("cached_attention", {q, kc, kc, off}, {q.type}, attrs({{"num_heads", int64_t(2)}}));
    FAIL() << "offset 4 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("offset 4 with 2 new positions leaves the cache of 5 positions (it must "
                                         "be in [0, 3])"),
              std::string::npos)
        << e.what();
  }
}

/* dynamic_slice and cache_write move exactly the rows at the offset; cache_write
   in place (output = input buffer) leaves the other rows alone. */
TEST(Decode, DynamicSliceAndCacheWrite) {
  for (DType dt : {DType::F64, DType::F32, DType::I32}) {
    Buf x = randn({3, 7, 2}).as(dt), off(DType::I32, {});
    off.set(0, 2);
    Buf y = runKernel("dynamic_slice", {x, off}, {{dt, {3, 3, 2}}},
                      attrs({{"axis", int64_t(1)}, {"start", int64_t(1)}, {"size", int64_t(3)}}))[0];
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(y.get((a * 3 + r) * 2 + c), x.get((a * 7 + 3 + r) * 2 + c)) << dtypeName(dt);
    off.set(0, 4);  // 4 + 1 + 3 > 7
    EXPECT_THROW(runKernel("dynamic_slice", {x, off}, {{dt, {3, 3, 2}}},
                           attrs({{"axis", int64_t(1)}, {"start", int64_t(1)}, {"size", int64_t(3)}})),
                 Error);
  }
  Buf cache = randn({2, 5, 3}), rows = randn({2, 2, 3}), off(DType::I32, {});
  off.set(0, 3);
  Buf out = runKernel("cache_write", {cache, rows, off}, {cache.type}, Attrs())[0];
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(out.get((b * 5 + t) * 3 + c), t >= 3 ? rows.get((b * 2 + t - 3) * 3 + c) : cache.get((b * 5 + t) * 3 + c));
  // In place.
  Buf same = cache;
  Attrs none;
  KernelCall call{{same.ref(), rows.ref(), off.ref()}, {same.ref()}, none};
  findKernel("cache_write")->run(call);
  EXPECT_TRUE(allClose(same, out, 0, 1e-300));
  off.set(0, 4);
  EXPECT_THROW(runKernel("cache_write", {cache, rows, off}, {cache.type}, Attrs()), Error);
}

}  // namespace
}  // namespace lmrt::kernels::test
