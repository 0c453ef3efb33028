/* Tests biased_attention and its grad (runtime/cpu/kernels/attention.cpp) against a
   naive reference that writes the scores out, softmax(scale q k^T + bias + masks) v,
   in double: bias shapes of T5 ([1, H, T, S]), ALiBi ([1, H, 1, S]), per batch row
   ([B, 1, T, S]), rank 2 ([T, S]) and full, segment ids (packed rows), causal, the
   padding mask, grouped heads and cross-attention, an explicit scale; sequences
   across the 128-key tile; the bias's gradient, and every gradient against central
   differences; the absent operands (rank 0) reproduce masked_attention bit for bit;
   the same bits for 1 and 2 threads with a shared bias's gradient. Its probability
   dropout: the reference regenerates the mask from contract/dropout_math.h (element
   (h Tq + i) Tk + j of the batch row's stream at the site) and drops the written-out
   probabilities; finite differences with the key fixed; the statistics (kept
   fraction, the mean over keys equal to the undropped output); same bits for any
   thread count. */
#include <omp.h>

#include "contract/dropout_math.h"

#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

struct Case {
  int64_t B, Tq, Tk, H, Hkv, Dh;
  Shape bias;  // {}: none
  bool segments = false, causal = false, masked = false;
  double scale = 0;  // 0: 1/sqrt(Dh)
  double dropout = 0;  // the probabilities' dropout rate, at site kSite
};
constexpr int64_t kSite = 5;

std::string describe(const Case &c) {
  std::string b = "[";
  for (int64_t d : c.bias) b += std::to_string(d) + " ";
  return "B " + std::to_string(c.B) + " Tq " + std::to_string(c.Tq) + " Tk " + std::to_string(c.Tk) + " H " +
         std::to_string(c.H) + "/" + std::to_string(c.Hkv) + " Dh " + std::to_string(c.Dh) + " bias " + b + "]" +
         (c.segments ? " segments" : "") + (c.causal ? " causal" : "") + (c.masked ? " masked" : "") +
         " scale " + std::to_string(c.scale) + " dropout " + std::to_string(c.dropout);
}

struct Inputs {
  Buf q, k, v, mask, bias, seg, key, dy;
  std::vector<Buf> ops(DType dt) const {
    return {q.as(dt), k.as(dt), v.as(dt), mask.as(dt), bias.as(dt), seg, key, dy.as(dt)};
  }
};

/* Documents of 1 to 40 tokens, ids not in order (ids only compare equal). */
Buf packedSegments(int64_t B, int64_t T) {
  Buf s(DType::I32, {B, T});
  std::uniform_int_distribution<int> len(1, 40);
  for (int64_t b = 0; b < B; ++b) {
    int id = 7 * (int)b, left = len(rng());
    for (int64_t t = 0; t < T; ++t) {
      if (left-- == 0) id = (id * 5 + 3) % 101, left = len(rng()) - 1;
      s.set(b * T + t, id);
    }
  }
  return s;
}

Inputs inputsOf(const Case &c) {
  Inputs in;
  in.q = randn({c.B, c.Tq, c.H * c.Dh}), in.k = randn({c.B, c.Tk, c.Hkv * c.Dh}),
  in.v = randn({c.B, c.Tk, c.Hkv * c.Dh}), in.dy = randn({c.B, c.Tq, c.H * c.Dh});
  in.bias = c.bias.empty() ? scalar(0.0) : randn(c.bias, DType::F64, 2.0);
  in.seg = c.segments ? packedSegments(c.B, c.Tq) : Buf(DType::I32, {});
  in.key = c.dropout > 0 ? randIds({c.B, 2}, int64_t{1} << 31) : Buf(DType::I32, {});
  if (c.masked) {  // row b keeps its first keys, all but the last (b + 1) Tk / (B + 2)
    in.mask = Buf(DType::F64, {c.B, c.Tk});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.Tk; ++j) in.mask.set(b * c.Tk + j, j < c.Tk - (b + 1) * c.Tk / (c.B + 2) ? 1 : 0);
  } else {
    in.mask = scalar(1.0);
  }
  return in;
}

struct Ref {
  Buf y, dq, dk, dv, dbias;
};

/* The scores written out for each (b, h): s = scale q k^T + bias, hidden keys (causal,
   padding, other segment) excluded, P = softmax(s), y = (D P) v with D the dropout
   factors (1 without); dP = D (dy v^T), dS = P (dP - rowsum(P dP)), dq = scale dS k,
   dk = scale dS^T q, dv = (D P)^T dy, dbias = dS summed where it broadcasts. */
Ref naive(const Case &c, const Inputs &in) {
  const int64_t C = c.H * c.Dh, Ck = c.Hkv * c.Dh, grp = c.H / c.Hkv;
  const double scale = c.scale == 0 ? 1.0 / std::sqrt((double)c.Dh) : c.scale;
  const Shape b4 = shapes::attentionBias4(c.bias);
  Ref r{Buf(DType::F64, in.q.type.shape), Buf(DType::F64, in.q.type.shape), Buf(DType::F64, in.k.type.shape),
        Buf(DType::F64, in.k.type.shape), Buf(DType::F64, in.bias.type.shape)};
  auto biasAt = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    if (c.bias.empty()) return (int64_t)-1;
    return (((b4[0] == 1 ? 0 : b) * b4[1] + (b4[1] == 1 ? 0 : h)) * b4[2] + (b4[2] == 1 ? 0 : i)) * b4[3] +
           (b4[3] == 1 ? 0 : j);
  };
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h) {
      auto qa = [&](int64_t i, int64_t e) { return (b * c.Tq + i) * C + h * c.Dh + e; };
      auto ka = [&](int64_t j, int64_t e) { return (b * c.Tk + j) * Ck + (h / grp) * c.Dh + e; };
      std::vector<double> P(c.Tq * c.Tk), dS(c.Tq * c.Tk), D(c.Tq * c.Tk, 1.0);
      if (c.dropout > 0) {
        const int32_t key[2] = {(int32_t)in.key.get(2 * b), (int32_t)in.key.get(2 * b + 1)};
        const uint64_t stream = lmc::dropoutStream(key, kSite);
        const uint32_t threshold = lmc::dropoutThreshold(c.dropout);
        for (int64_t i = 0; i < c.Tq; ++i)
          for (int64_t j = 0; j < c.Tk; ++j)
            D[i * c.Tk + j] = lmc::dropoutKeep(stream, (uint64_t)((h * c.Tq + i) * c.Tk + j), threshold)
                                  ? 1.0 / (1.0 - c.dropout)
                                  : 0.0;
      }
      for (int64_t i = 0; i < c.Tq; ++i) {
        std::vector<double> s(c.Tk, -INFINITY);
        double mx = -INFINITY, z = 0, rowDot = 0;
        for (int64_t j = 0; j < c.Tk; ++j) {
          const bool seen = !(c.causal && j > i) && !(c.masked && in.mask.get(b * c.Tk + j) == 0) &&
                            !(c.segments && in.seg.get(b * c.Tq + i) != in.seg.get(b * c.Tq + j));
          if (!seen) continue;
          double d = 0;
          for (int64_t e = 0; e < c.Dh; ++e) d += in.q.get(qa(i, e)) * in.k.get(ka(j, e));
          s[j] = scale * d + (c.bias.empty() ? 0.0 : in.bias.get(biasAt(b, h, i, j)));
          mx = std::max(mx, s[j]);
        }
        for (int64_t j = 0; j < c.Tk; ++j) z += (P[i * c.Tk + j] = s[j] == -INFINITY ? 0.0 : std::exp(s[j] - mx));
        for (int64_t j = 0; j < c.Tk; ++j) P[i * c.Tk + j] = z > 0 ? P[i * c.Tk + j] / z : 0.0;
        for (int64_t e = 0; e < c.Dh; ++e) {
          double o = 0;
          for (int64_t j = 0; j < c.Tk; ++j) o += D[i * c.Tk + j] * P[i * c.Tk + j] * in.v.get(ka(j, e));
          r.y.set(qa(i, e), o);
        }
        for (int64_t j = 0; j < c.Tk; ++j) {
          double d = 0;
          for (int64_t e = 0; e < c.Dh; ++e) d += in.dy.get(qa(i, e)) * in.v.get(ka(j, e));
          d *= D[i * c.Tk + j];
          dS[i * c.Tk + j] = d;
          rowDot += P[i * c.Tk + j] * d;
        }
        for (int64_t j = 0; j < c.Tk; ++j) {
          dS[i * c.Tk + j] = P[i * c.Tk + j] * (dS[i * c.Tk + j] - rowDot);
          if (!c.bias.empty()) r.dbias.set(biasAt(b, h, i, j), r.dbias.get(biasAt(b, h, i, j)) + dS[i * c.Tk + j]);
        }
      }
      for (int64_t e = 0; e < c.Dh; ++e) {
        for (int64_t i = 0; i < c.Tq; ++i) {
          double dq = 0;
          for (int64_t j = 0; j < c.Tk; ++j) dq += scale * dS[i * c.Tk + j] * in.k.get(ka(j, e));
          r.dq.set(qa(i, e), dq);
        }
        for (int64_t j = 0; j < c.Tk; ++j) {
          double dk = 0, dv = 0;
          for (int64_t i = 0; i < c.Tq; ++i) {
            dk += scale * dS[i * c.Tk + j] * in.q.get(qa(i, e));
            dv += D[i * c.Tk + j] * P[i * c.Tk + j] * in.dy.get(qa(i, e));
          }
          r.dk.set(ka(j, e), r.dk.get(ka(j, e)) + dk);
          r.dv.set(ka(j, e), r.dv.get(ka(j, e)) + dv);
        }
      }
    }
  return r;
}

Attrs attOf(const Case &c) {
  return attrs({{"num_heads", c.H}, {"num_kv_heads", c.Hkv}, {"causal", c.causal}, {"scale", c.scale},
                {"dropout", c.dropout}, {"site", kSite}});
}

std::vector<Buf> forward(const Case &c, const Inputs &in, DType dt) {
  std::vector<Buf> ops = in.ops(dt);
  ops.pop_back();
  return runKernel("biased_attention", ops, {ops[0].type}, attOf(c));
}
std::vector<Buf> backward(const Case &c, const Inputs &in, DType dt) {
  std::vector<Buf> ops = in.ops(dt);
  return runKernel("biased_attention_grad", ops, {ops[0].type, ops[1].type, ops[2].type, ops[4].type}, attOf(c));
}

void expectMatchesNaive(const Case &c) {
  SCOPED_TRACE(describe(c));
  Inputs in = inputsOf(c);
  Ref ref = naive(c, in);
  for (DType dt : {DType::F64, DType::F32}) {
    SCOPED_TRACE(dtypeName(dt));
    const double tol = dt == DType::F64 ? 1e-10 : 2e-4;
    Buf y = forward(c, in, dt)[0];
    auto d = backward(c, in, dt);
    EXPECT_TRUE(allClose(y, ref.y, tol, tol)) << "y";
    EXPECT_TRUE(allClose(d[0], ref.dq, tol, tol)) << "dq";
    EXPECT_TRUE(allClose(d[1], ref.dk, tol, tol)) << "dk";
    EXPECT_TRUE(allClose(d[2], ref.dv, tol, tol)) << "dv";
    // dbias sums up to B*H*Tq terms where it broadcasts: f32 keeps fewer digits.
    EXPECT_TRUE(allClose(d[3], ref.dbias, tol * 5, tol * 5)) << "dbias";
  }
}

TEST(BiasedAttention, MatchesNaive) {
  // T5: a bias [1, H, T, T] shared by the batch rows, no scaling, across the tile.
  expectMatchesNaive({2, 130, 130, 2, 2, 8, {1, 2, 130, 130}, false, false, false, 1.0});
  expectMatchesNaive({2, 130, 130, 2, 2, 8, {1, 2, 130, 130}, false, true, false, 1.0});  // T5 decoder
  // ALiBi: [1, H, 1, S], causal, grouped heads, a padding mask.
  expectMatchesNaive({3, 70, 70, 4, 2, 4, {1, 4, 1, 70}, false, true, true});
  // A bias of each batch row [B, 1, T, S], and of rank 2 [T, S]; cross-attention.
  expectMatchesNaive({2, 9, 140, 2, 1, 4, {2, 1, 9, 140}, false, false, true});
  expectMatchesNaive({2, 140, 9, 2, 2, 4, {140, 9}});
  // The full bias [B, H, T, S] and one of [B, H, 1, 1].
  expectMatchesNaive({2, 33, 33, 2, 2, 4, {2, 2, 33, 33}, true, true, true, 0.7});
  expectMatchesNaive({2, 33, 33, 2, 2, 4, {2, 2, 1, 1}, false, false, false});
  // Segments alone (packed rows across the tile), with causal, with the mask.
  expectMatchesNaive({2, 200, 200, 2, 2, 4, {}, true});
  expectMatchesNaive({2, 200, 200, 2, 1, 4, {}, true, true});
  expectMatchesNaive({3, 50, 50, 2, 2, 4, {1, 2, 50, 50}, true, false, true});
  // Only the scale.
  expectMatchesNaive({1, 20, 20, 2, 2, 4, {}, false, true, false, 0.125});
}

/* Attention dropout against the reference that drops the written-out probabilities
   with the mask regenerated from dropout_math.h: plain, causal with grouped heads and
   a padding mask, T5's bias, segments, cross-attention; across the 128-key tile. */
TEST(BiasedAttention, DropoutMatchesNaive) {
  expectMatchesNaive({2, 130, 130, 2, 2, 8, {}, false, false, false, 0, 0.1});
  expectMatchesNaive({3, 70, 70, 4, 2, 4, {}, false, true, true, 0, 0.5});
  expectMatchesNaive({2, 130, 130, 2, 2, 8, {1, 2, 130, 130}, false, true, false, 1.0, 0.2});
  expectMatchesNaive({2, 140, 140, 2, 1, 4, {1, 2, 1, 140}, true, true, false, 0, 0.3});
  expectMatchesNaive({2, 9, 140, 2, 1, 4, {2, 1, 9, 140}, false, false, true, 0, 0.4});
}

/* Every gradient, the bias's included, against central differences through the
   forward kernel: T5's bias shape, ALiBi's across the 128-key tile, one per batch row
   with cross-attention. */
TEST(BiasedAttention, BackwardMatchesFiniteDifferences) {
  for (Case c : {Case{2, 20, 20, 2, 2, 2, {1, 2, 20, 20}, true, false, false, 1.0},
                 Case{2, 131, 131, 2, 1, 2, {1, 2, 1, 131}, false, true, true},
                 Case{2, 5, 7, 2, 2, 3, {2, 1, 5, 7}, false, false, true}}) {
    SCOPED_TRACE(describe(c));
    Inputs in = inputsOf(c);
    auto d = backward(c, in, DType::F64);
    auto f = [&](const std::vector<Buf> &x) {
      Inputs moved = in;
      moved.q = x[0], moved.k = x[1], moved.v = x[2], moved.bias = x[3];
      return forward(c, moved, DType::F64)[0];
    };
    const char *names[] = {"dq", "dk", "dv", "dbias"};
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(allClose(d[i], finiteDiff(f, {in.q, in.k, in.v, in.bias}, i, in.dy), 1e-6, 1e-7)) << names[i];
  }
}

/* With dropout (the key fixed, so every differenced forward drops the same
   probabilities) the gradients still match central differences: a half-dropped mask
   that the backward did not regenerate exactly would not. */
TEST(BiasedAttention, DropoutBackwardMatchesFiniteDifferences) {
  for (Case c : {Case{2, 20, 20, 2, 2, 2, {1, 2, 20, 20}, true, false, false, 1.0, 0.5},
                 Case{2, 131, 131, 2, 1, 2, {1, 2, 1, 131}, false, true, true, 0, 0.3},
                 Case{2, 5, 7, 2, 2, 3, {}, false, false, true, 0, 0.5},
                 // BERT's attention dropout: padding, no bias, across the key tile
                 // (the backward's simd path for dropout without bias or segments).
                 Case{2, 131, 131, 2, 2, 2, {}, false, false, true, 0, 0.3}}) {
    SCOPED_TRACE(describe(c));
    Inputs in = inputsOf(c);
    if (c.bias.empty()) in.bias = scalar(0.0);
    auto d = backward(c, in, DType::F64);
    auto f = [&](const std::vector<Buf> &x) {
      Inputs moved = in;
      moved.q = x[0], moved.k = x[1], moved.v = x[2];
      return forward(c, moved, DType::F64)[0];
    };
    const char *names[] = {"dq", "dk", "dv"};
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(allClose(d[i], finiteDiff(f, {in.q, in.k, in.v}, i, in.dy), 1e-6, 1e-7)) << names[i];
  }
}

/* The statistics of attention dropout: over many keys, the fraction of probabilities
   kept is 1 - p (read from v = one-hot columns, which makes y's column j the dropped
   probability of key j), and the mean output over the keys is the undropped output
   (inverted dropout keeps the expectation). */
TEST(BiasedAttention, DropoutStatistics) {
  const int64_t T = 16, H = 2, Dh = 16, B = 64;  // Dh = T: v's rows are one-hot
  const double p = 0.2;
  Buf q = randn({B, T, H * Dh}), k = randn({B, T, H * Dh}), v(DType::F64, {B, T, H * Dh});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T; ++j)
      for (int64_t h = 0; h < H; ++h) v.set((b * T + j) * H * Dh + h * Dh + j, 1.0);
  Buf key = randIds({B, 2}, int64_t{1} << 31);
  auto run = [&](double rate, const Buf &qq, const Buf &kk) {
    Attrs a = attrs({{"num_heads", H}, {"dropout", rate}, {"site", int64_t{1}}});
    return runKernel("biased_attention",
                     {qq, kk, v, scalar(1.0), scalar(0.0), Buf(DType::I32, {}), rate > 0 ? key : Buf(DType::I32, {})},
                     {q.type}, a)[0];
  };
  // Every batch row the same q and k: the rows' outputs are draws of one expectation.
  Buf q1 = q, k1 = k;
  for (int64_t i = 0; i < q.numel(); ++i) q1.set(i, q.get(i % (T * H * Dh))), k1.set(i, k.get(i % (T * H * Dh)));
  Buf y = run(p, q1, k1), ref = run(0, q1, k1);
  int64_t kept = 0, n = 0;
  double maxDev = 0;
  for (int64_t e = 0; e < T * H * Dh; ++e) {
    double mean = 0;
    for (int64_t b = 0; b < B; ++b) {
      const double x = y.get(b * T * H * Dh + e);
      mean += x / B;
      if (ref.get(e) > 0) kept += x != 0, ++n;
    }
    maxDev = std::max(maxDev, std::abs(mean - ref.get(e)));
  }
  const double frac = (double)kept / n;
  // n = 64 * 16 * 16 * 2 draws: the binomial's deviation is 0.0035.
  EXPECT_NEAR(frac, 1 - p, 0.015) << kept << " of " << n;
  // Each mean of 64 draws of P / (1 - p) or 0 (P <= 1): deviation <= 0.5 / sqrt(64) / 0.8.
  EXPECT_LT(maxDev, 0.3);
  double sumY = 0, sumRef = 0;
  for (int64_t i = 0; i < y.numel(); ++i) sumY += y.get(i), sumRef += ref.get(i % (T * H * Dh)) ;
  EXPECT_NEAR(sumY / sumRef, 1.0, 0.02) << "the output's mean is kept";
}

/* A packed row attends within its documents: each document's rows equal attention
   over that document alone (lm.attention on the slice). */
TEST(BiasedAttention, SegmentsMatchSeparateDocuments) {
  const int64_t T = 150, C = 8;
  Buf q = randn({1, T, C}), k = randn({1, T, C}), v = randn({1, T, C}), seg(DType::I32, {1, T});
  const int64_t cut = 61;  // documents [0, 61) and [61, 150)
  for (int64_t t = 0; t < T; ++t) seg.set(t, t < cut ? 3 : 8);
  for (bool causal : {false, true}) {
    Attrs a = attrs({{"num_heads", (int64_t)2}, {"causal", causal}});
    Buf y = runKernel("biased_attention", {q, k, v, scalar(1.0), scalar(0.0), seg, Buf(DType::I32, {})}, {q.type}, a)[0];
    for (auto [t0, n] : {std::pair<int64_t, int64_t>{0, cut}, {cut, T - cut}}) {
      auto slice = [&](const Buf &x) {
        Buf s(DType::F64, {1, n, C});
        for (int64_t i = 0; i < n * C; ++i) s.set(i, x.get(t0 * C + i));
        return s;
      };
      Buf alone = runKernel("attention", {slice(q), slice(k), slice(v)}, {{DType::F64, {1, n, C}}}, a)[0];
      EXPECT_TRUE(allClose(slice(y), alone, 1e-12, 1e-12)) << "document at " << t0 << " causal " << causal;
    }
  }
}

/* With no bias and no segments (rank-0 operands) and the default scale, the forward is
   masked_attention's bit for bit, and the grad its within rounding. */
TEST(BiasedAttention, AbsentOperandsAreMaskedAttention) {
  Case c{2, 130, 130, 2, 2, 8, {}, false, true, true};
  Inputs in = inputsOf(c);
  Attrs a = attrs({{"num_heads", c.H}, {"causal", true}});
  for (DType dt : {DType::F32, DType::F64}) {
    Buf ref = runKernel("masked_attention", {in.q.as(dt), in.k.as(dt), in.v.as(dt), in.mask.as(dt)},
                        {{dt, in.q.type.shape}}, a)[0];
    Buf y = forward(c, in, dt)[0];
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), ref.type.bytes()), 0) << dtypeName(dt);
    auto g = runKernel("masked_attention_grad", {in.q.as(dt), in.k.as(dt), in.v.as(dt), in.mask.as(dt), in.dy.as(dt)},
                       {{dt, in.q.type.shape}, {dt, in.k.type.shape}, {dt, in.k.type.shape}}, a);
    auto d = backward(c, in, dt);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(allClose(d[i], g[i], 1e-5, 1e-6)) << dtypeName(dt) << " grad " << i;
    EXPECT_EQ(d[3].get(0), 0.0) << "a rank-0 bias has no gradient";
  }
}

/* The bias's gradient, shared by batch rows and heads, has the same bits for any
   thread count (its work items are merged, not raced). */
TEST(BiasedAttention, SameBitsForAnyThreadCount) {
  for (Shape bias : {Shape{1, 1, 140, 140}, Shape{1, 4, 1, 140}, Shape{3, 4, 140, 140}, Shape{}}) {
    Case c{3, 140, 140, 4, 2, 8, bias, true, true, true, 0, bias.empty() ? 0.1 : 0};
    Inputs in = inputsOf(c);
    std::vector<std::vector<Buf>> runs;
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      runs.push_back(backward(c, in, DType::F32));
      runs.back().push_back(forward(c, in, DType::F32)[0]);
    }
    omp_set_num_threads(omp_get_num_procs());
    for (size_t i = 0; i < runs[0].size(); ++i)
      EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[1][i].data(), runs[0][i].type.bytes()), 0) << "output " << i;
  }
}

/* check(): the bias's broadcast, the segments' shape, element type and self-attention,
   the scale, the dropout rate and key. */
/* Tensor parallelism's head split (-lm-spmd): part c of P, given heads c H/P ... of
   q, its key/value heads, the bias's heads and a part's key [2, B, 2] (the batch
   rows' keys, then c: contract/dropout_math.h), computes those heads of the whole op
   bit for bit, its dropout masks included, forward and backward; keyed as a whole op
   (the mutant) it drops other probabilities. */
Buf columns(const Buf &x, int64_t first, int64_t width) {
  const Shape &s = x.type.shape;  // [B, T, C] or a bias [1, H, T, S] (dimension 1)
  const bool bias = s.size() == 4;
  const int64_t outer = bias ? s[0] : s[0] * s[1], C = bias ? s[1] : s[2], inner = bias ? s[2] * s[3] : 1;
  Buf y(x.type.dtype, bias ? Shape{s[0], width, s[2], s[3]} : Shape{s[0], s[1], width});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < width; ++c)
      for (int64_t i = 0; i < inner; ++i) y.set((o * width + c) * inner + i, x.get((o * C + first + c) * inner + i));
  return y;
}

TEST(BiasedAttention, HeadSplitWithAPartsKeyIsTheWholeOpsHeads) {
  const Case whole{2, 130, 130, 4, 2, 4, {1, 4, 130, 130}, false, true, true, 0, 0.3};
  const int64_t P = 2, Dh = whole.Dh, H = whole.H / P, Hkv = whole.Hkv / P;
  Case part = whole;
  part.H = H, part.Hkv = Hkv, part.bias = {1, H, 130, 130};
  const Inputs in = inputsOf(whole);
  for (DType dt : {DType::F64, DType::F32}) {
    SCOPED_TRACE(dtypeName(dt));
    const Buf y = forward(whole, in, dt)[0];
    const auto g = backward(whole, in, dt);
    for (int64_t c = 0; c < P; ++c) {
      SCOPED_TRACE("part " + std::to_string(c));
      Inputs pin = in;
      pin.q = columns(in.q, c * H * Dh, H * Dh), pin.dy = columns(in.dy, c * H * Dh, H * Dh);
      pin.k = columns(in.k, c * Hkv * Dh, Hkv * Dh), pin.v = columns(in.v, c * Hkv * Dh, Hkv * Dh);
      pin.bias = columns(in.bias, c * H, H);
      pin.key = Buf(DType::I32, {2, whole.B, 2});
      for (int64_t i = 0; i < 2 * whole.B; ++i) pin.key.set(i, in.key.get(i)), pin.key.set(2 * whole.B + i, (double)c);
      const Buf yp = forward(part, pin, dt)[0];
      const auto gp = backward(part, pin, dt);
      EXPECT_TRUE(allClose(yp, columns(y, c * H * Dh, H * Dh), 0, 0)) << "y";
      EXPECT_TRUE(allClose(gp[0], columns(g[0], c * H * Dh, H * Dh), 0, 0)) << "dq";
      EXPECT_TRUE(allClose(gp[1], columns(g[1], c * Hkv * Dh, Hkv * Dh), 0, 0)) << "dk";
      EXPECT_TRUE(allClose(gp[2], columns(g[2], c * Hkv * Dh, Hkv * Dh), 0, 0)) << "dv";
      EXPECT_TRUE(allClose(gp[3], columns(g[3], c * H, H), 0, 0)) << "dbias";
      if (c == 1) {  // keyed as a whole op, part 1 drops part 0's probabilities
        pin.key = in.key;
        EXPECT_FALSE(allClose(forward(part, pin, dt)[0], columns(y, c * H * Dh, H * Dh), 1e-3, 1e-3));
      }
    }
  }
}

TEST(BiasedAttention, Checks) {
  TensorType q{DType::F32, {2, 4, 8}}, k6{DType::F32, {2, 6, 8}}, none{DType::F32, {}}, noSeg{DType::I32, {}};
  Attrs a = attrs({{"num_heads", (int64_t)2}});
  // The key (input 6) is none unless given.
  auto msg = [&](std::vector<TensorType> in, const Attrs &at) {
    if (in.size() == 6) in.push_back(noSeg);
    return checkMsg("biased_attention", in, {q}, at);
  };
  EXPECT_EQ(msg({q, q, q, none, {DType::F32, {1, 2, 4, 4}}, {DType::I32, {2, 4}}}, a), "");
  EXPECT_EQ(msg({q, k6, k6, {DType::F32, {2, 6}}, {DType::F32, {2, 1, 1, 6}}, noSeg}, a), "");
  EXPECT_NE(msg({q, q, q, none, {DType::F32, {1, 3, 4, 4}}, noSeg}, a).find("does not broadcast to [2, 2, 4, 4]"),
            std::string::npos);
  EXPECT_NE(msg({q, q, q, none, {DType::F32, {1, 1, 2, 4, 4}}, noSeg}, a).find("rank <= 4"), std::string::npos);
  EXPECT_NE(msg({q, q, q, none, {DType::F64, {4, 4}}, noSeg}, a).find("bias"), std::string::npos);
  EXPECT_NE(msg({q, k6, k6, none, none, {DType::I32, {2, 4}}}, a).find("segments need self-attention"),
            std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, {DType::I32, {2, 5}}}, a).find("segments [2, 5] must be [2, 4]"),
            std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, {DType::F32, {2, 4}}}, a).find("segments"), std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, noSeg}, attrs({{"num_heads", (int64_t)2}, {"scale", -1.0}})).find("scale"),
            std::string::npos);
  const Attrs drop = attrs({{"num_heads", (int64_t)2}, {"dropout", 0.1}});
  EXPECT_EQ(msg({q, q, q, none, none, noSeg, {DType::I32, {2, 2}}}, drop), "");
  EXPECT_NE(msg({q, q, q, none, none, noSeg, noSeg}, drop).find("dropout > 0 needs key [] to be [2, 2]"),
            std::string::npos);
  EXPECT_EQ(msg({q, q, q, none, none, noSeg, {DType::I32, {2, 2, 2}}}, drop), "");  // a part's key
  EXPECT_NE(msg({q, q, q, none, none, noSeg, {DType::I32, {2, 3, 2}}}, drop).find("or [2, 2, 2] (the key of a part"),
            std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, noSeg, {DType::I32, {2, 2}}}, a).find("must be rank 0 (none) without dropout"),
            std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, noSeg, {DType::F32, {2, 2}}}, drop).find("key"), std::string::npos);
  EXPECT_NE(msg({q, q, q, none, none, noSeg, {DType::I32, {2, 2}}}, attrs({{"num_heads", (int64_t)2}, {"dropout", 1.0}}))
                .find("dropout rate p must be in [0, 1)"),
            std::string::npos);
}

}  // namespace
}  // namespace lmrt::kernels::test
