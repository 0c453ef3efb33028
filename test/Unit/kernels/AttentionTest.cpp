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

/* y = softmax(q kᵀ / sqrt(Dh) + mask) v per head and, from dy, the three gradients,
   all in double with the whole T x T matrix of one head at a time. */
Buf naive(const Buf &q, const Buf &k, const Buf &v, const Buf *dy, int64_t H, bool causal, Grads *g) {
  const Shape &s = q.type.shape;
  const int64_t B = s[0], T = s[1], C = s[2], Dh = C / H;
  const double scale = 1.0 / std::sqrt((double)Dh);
  Buf y(DType::F64, s);
  if (g) *g = {Buf(DType::F64, s), Buf(DType::F64, s), Buf(DType::F64, s)};
  auto at = [&](int64_t b, int64_t t, int64_t h, int64_t e) { return (b * T + t) * C + h * Dh + e; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> P(T * T, 0.0), dP(T * T, 0.0);
      for (int64_t i = 0; i < T; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < Dh; ++e) d += q.get(at(b, i, h, e)) * k.get(at(b, j, h, e));
          P[i * T + j] = (causal && j > i) ? -INFINITY : d * scale;
          mx = std::max(mx, P[i * T + j]);
        }
        double z = 0;
        for (int64_t j = 0; j < T; ++j) z += (P[i * T + j] = std::exp(P[i * T + j] - mx));
        for (int64_t j = 0; j < T; ++j) P[i * T + j] /= z;
        for (int64_t e = 0; e < Dh; ++e) {
          double o = 0;
          for (int64_t j = 0; j < T; ++j) o += P[i * T + j] * v.get(at(b, j, h, e));
          y.set(at(b, i, h, e), o);
        }
      }
      if (!g) continue;
      for (int64_t i = 0; i < T; ++i) {
        double rowDot = 0;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < Dh; ++e) d += dy->get(at(b, i, h, e)) * v.get(at(b, j, h, e));
          dP[i * T + j] = d;
          rowDot += P[i * T + j] * d;
        }
        for (int64_t j = 0; j < T; ++j) dP[i * T + j] = P[i * T + j] * (dP[i * T + j] - rowDot) * scale;
      }
      for (int64_t i = 0; i < T; ++i)
        for (int64_t e = 0; e < Dh; ++e) {
          double dq = 0, dk = 0, dv = 0;
          for (int64_t j = 0; j < T; ++j) {
            dq += dP[i * T + j] * k.get(at(b, j, h, e));
            dk += dP[j * T + i] * q.get(at(b, j, h, e));
            dv += P[j * T + i] * dy->get(at(b, j, h, e));
          }
          g->dq.set(at(b, i, h, e), dq);
          g->dk.set(at(b, i, h, e), dk);
          g->dv.set(at(b, i, h, e), dv);
        }
    }
  return y;
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
