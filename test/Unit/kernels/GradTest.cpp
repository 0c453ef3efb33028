/* Tests that every backward kernel (the *_grad ops) and every composed adjoint
   docs/dialect.md prescribes (matmul, broadcasting binary ops, sum_to, transpose,
   reshape, neg) agree with central finite differences of the forward kernel, in
   double: the kernel-level gradient checks, one per op. */
#include "KernelTestUtil.h"

#include <algorithm>
#include <limits>

namespace lmrt::kernels::test {
namespace {

constexpr double kRtol = 1e-6, kAtol = 1e-7;

/* f(inputs) = kernel `op` with the given result type, as a function for finiteDiff. */
std::function<Buf(const std::vector<Buf> &)> fwd(const std::string &op, TensorType outType, Attrs a = Attrs()) {
  return [=](const std::vector<Buf> &in) { return runKernel(op, in, {outType}, a)[0]; };
}

TEST(Grad, Gelu) {
  Buf x = randn({3, 5}, DType::F64, 2.0), dy = randn({3, 5});
  auto dx = runKernel("gelu_grad", {x, dy}, {x.type});
  EXPECT_TRUE(allClose(dx[0], finiteDiff(fwd("gelu", x.type), {x}, 0, dy), kRtol, kAtol));
}

TEST(Grad, GeluErf) {
  Buf x = randn({3, 5}, DType::F64, 2.0), dy = randn({3, 5});
  auto dx = runKernel("gelu_erf_grad", {x, dy}, {x.type});
  EXPECT_TRUE(allClose(dx[0], finiteDiff(fwd("gelu_erf", x.type), {x}, 0, dy), kRtol, kAtol));
}

TEST(Grad, LayerNorm) {
  Buf x = randn({2, 3, 6}, DType::F64, 2.0), g = randn({6}), b = randn({6}), dy = randn({2, 3, 6});
  Attrs a = attrs({{"epsilon", 1e-3}});
  auto d = runKernel("layer_norm_grad", {x, g, dy}, {x.type, g.type, g.type}, a);
  auto f = fwd("layer_norm", x.type, a);
  EXPECT_TRUE(allClose(d[0], finiteDiff(f, {x, g, b}, 0, dy), kRtol, kAtol)) << "dx";
  EXPECT_TRUE(allClose(d[1], finiteDiff(f, {x, g, b}, 1, dy), kRtol, kAtol)) << "dgamma";
  EXPECT_TRUE(allClose(d[2], finiteDiff(f, {x, g, b}, 2, dy), kRtol, kAtol)) << "dbeta";
}

TEST(Grad, Attention) {
  for (bool causal : {false, true}) {
    Shape s{2, 4, 6};
    Buf q = randn(s), k = randn(s), v = randn(s), dy = randn(s);
    Attrs a = attrs({{"num_heads", (int64_t)2}, {"causal", causal}});
    auto d = runKernel("attention_grad", {q, k, v, dy}, {q.type, q.type, q.type}, a);
    auto f = fwd("attention", q.type, a);
    const char *names[] = {"dq", "dk", "dv"};
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(allClose(d[i], finiteDiff(f, {q, k, v}, i, dy), kRtol, kAtol)) << names[i] << " causal=" << causal;
  }
}

TEST(Grad, Softmax) {
  Buf x = randn({3, 5}), dy = randn({3, 5});
  Buf y = runKernel("softmax", {x}, {x.type})[0];
  auto dx = runKernel("softmax_grad", {y, dy}, {x.type});
  EXPECT_TRUE(allClose(dx[0], finiteDiff(fwd("softmax", x.type), {x}, 0, dy), kRtol, kAtol));
}

TEST(Grad, CrossEntropy) {
  Buf x = randn({2, 3, 5}), t = randIds({2, 3}, 5);
  t.set(2, -1);  // ignored with ignore_index -1
  Attrs a = attrs({{"ignore_index", (int64_t)-1}});
  Buf dloss = scalar(0.7);
  auto dx = runKernel("cross_entropy_grad", {x, t, dloss}, {x.type}, a);
  auto f = [&](const std::vector<Buf> &in) { return runKernel("cross_entropy", {in[0], t}, {{DType::F64, {}}}, a)[0]; };
  EXPECT_TRUE(allClose(dx[0], finiteDiff(f, {x}, 0, dloss), kRtol, kAtol));
  for (int j = 0; j < 5; ++j) EXPECT_EQ(dx[0].get(2 * 5 + j), 0.0) << "ignored row must be zero";
}

/* cross_entropy_with_grad gives the pair's values bit for bit (f32, an ignored row),
   into buffers of its own and with dlogits over the logits (as a plan gives it). */
TEST(Grad, CrossEntropyWithGradIsThePair) {
  Buf x = randn({3, 4, 37}).as(DType::F32), t = randIds({3, 4}, 37);
  t.set(5, -100);
  Buf dloss = scalar(0.7).as(DType::F32);
  TensorType lossType{DType::F32, {}};
  Buf loss = runKernel("cross_entropy", {x, t}, {lossType})[0];
  Buf dx = runKernel("cross_entropy_grad", {x, t, dloss}, {x.type})[0];
  auto both = runKernel("cross_entropy_with_grad", {x, t, dloss}, {x.type, lossType});
  EXPECT_EQ(both[1].get(0), loss.get(0));
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(both[0].get(i), dx.get(i)) << "element " << i;
  Buf inPlace = x, lossInPlace(DType::F32, {});
  Attrs defaults = withDefaults("cross_entropy_with_grad");
  KernelCall call{{inPlace.ref(), t.ref(), dloss.ref()}, {inPlace.ref(), lossInPlace.ref()}, defaults};
  findKernel("cross_entropy_with_grad")->run(call);
  EXPECT_EQ(lossInPlace.get(0), loss.get(0));
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(inPlace.get(i), dx.get(i)) << "in place, element " << i;
}

/* linear_cross_entropy_with_grad: dh and dw against finite differences of the chunked
   forward (f64, chunks of 4 rows over 6, an ignored row), for a tied [V, D] table and
   an untied [D, V] weight; and its loss and gradients are the unfused ops' (matmul,
   cross_entropy_with_grad, the two gradient matmuls) to rounding. V = 1024 too: the
   kernel's chunk scratch then has a padded row stride (linearCrossEntropyRowStride). */
TEST(Grad, LinearCrossEntropy) {
  for (int64_t v : {7, 1024})
  for (bool tied : {true, false}) {
    SCOPED_TRACE(std::string(tied ? "tied [V, D]" : "untied [D, V]") + ", V " + std::to_string(v));
    Buf h = randn({2, 3, 4}), w = tied ? randn({v, 4}) : randn({4, v}), t = randIds({2, 3}, v);
    t.set(4, -1);  // ignored with ignore_index -1
    Attrs a = attrs({{"ignore_index", (int64_t)-1}, {"transpose_rhs", tied}, {"chunk_rows", (int64_t)4}});
    Buf dloss = scalar(0.7);
    TensorType lossType{DType::F64, {}};
    auto g = runKernel("linear_cross_entropy_with_grad", {h, w, t, dloss}, {h.type, w.type, lossType}, a);
    auto f = [&](const std::vector<Buf> &in) {
      return runKernel("linear_cross_entropy", {in[0], in[1], t}, {lossType}, a)[0];
    };
    EXPECT_TRUE(allClose(g[0], finiteDiff(f, {h, w}, 0, dloss), kRtol, kAtol)) << "dh";
    EXPECT_TRUE(allClose(g[1], finiteDiff(f, {h, w}, 1, dloss), kRtol, kAtol)) << "dw";
    EXPECT_EQ(g[2].get(0), f({h, w}).get(0)) << "the loss of the forward op";

    Attrs mm = attrs({{"transpose_rhs", tied}});
    Buf logits = runKernel("matmul", {h, w}, {{DType::F64, {2, 3, v}}}, mm)[0];
    auto ce = runKernel("cross_entropy_with_grad", {logits, t, dloss}, {logits.type, lossType},
                        attrs({{"ignore_index", (int64_t)-1}}));
    EXPECT_NEAR(g[2].get(0), ce[1].get(0), 1e-12);
    Buf dh = runKernel("matmul", {ce[0], w}, {h.type}, attrs({{"transpose_rhs", !tied}}))[0];
    EXPECT_TRUE(allClose(g[0], dh, 1e-12, 1e-12)) << "dh as the unfused matmul";
  }
}

/* linear_cross_entropy_stats_grad against finite differences of the stats op (f64,
   chunks of 4 rows over 6), w holding classes [3, 6) of a vocabulary of 9 with a bias:
   dh, dw and dbias for the cotangent of lse alone and of the target logit alone (rows
   whose target is another rank's, or ignored, have none). */
TEST(Grad, LinearCrossEntropyStats) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied [Vr, D]" : "untied [D, Vr]");
    Buf h = randn({2, 3, 4}), w = tied ? randn({3, 4}) : randn({4, 3}), t = randIds({2, 3}, 9), first = scalar(3);
    Buf bias = randn({3});
    t.set(0, 4);   // one of the rank's classes
    t.set(4, -1);  // ignored with ignore_index -1
    Attrs a = attrs({{"ignore_index", (int64_t)-1}, {"transpose_rhs", tied}, {"chunk_rows", (int64_t)4},
                     {"vocab", (int64_t)9}});
    TensorType rows{DType::F64, {2, 3}};
    auto stats = runKernel("linear_cross_entropy_stats", {h, w, t, first, bias}, {rows, rows, rows, rows}, a);
    Buf zero(DType::F64, {2, 3}), dy = randn({2, 3});
    for (int which : {0, 1}) {
      SCOPED_TRACE(which == 0 ? "d lse" : "d target_logit");
      Buf dlse = which == 0 ? dy : zero, dtl = which == 0 ? zero : dy;
      auto g = runKernel("linear_cross_entropy_stats_grad", {h, w, t, first, bias, stats[0], dlse, dtl},
                         {h.type, w.type, bias.type}, a);
      auto f = [&](const std::vector<Buf> &in) {
        return runKernel("linear_cross_entropy_stats", {in[0], in[1], t, first, in[2]}, {rows, rows, rows, rows},
                         a)[which];
      };
      EXPECT_TRUE(allClose(g[0], finiteDiff(f, {h, w, bias}, 0, dy), kRtol, kAtol)) << "dh";
      EXPECT_TRUE(allClose(g[1], finiteDiff(f, {h, w, bias}, 1, dy), kRtol, kAtol)) << "dw";
      EXPECT_TRUE(allClose(g[2], finiteDiff(f, {h, w, bias}, 2, dy), kRtol, kAtol)) << "dbias";
    }
  }
}

/* max and argmax are the row's largest logit (of h w + bias) and the first class holding
   it, numbered from first: a tie goes to the smaller class, as lm.accuracy's argmax. */
TEST(Grad, LinearCrossEntropyStatsArgmax) {
  Buf h = randn({4, 2}), w = randn({5, 2}), t = randIds({4}, 12), bias = randn({5});
  // Classes 8 and 10 (the rank's 1 and 3) get the same weights and bias, 5, above the
  // others': row 0 (h = 0, so each logit is its bias) has its max at both.
  for (int64_t j = 0; j < 2; ++j) {
    w.set(3 * 2 + j, w.get(1 * 2 + j));
    h.set(0 * 2 + j, 0.0);
  }
  bias.set(1, 5.0);
  bias.set(3, 5.0);
  Attrs a = attrs({{"transpose_rhs", true}, {"vocab", (int64_t)12}});
  TensorType rows{DType::F64, {4}};
  auto st = runKernel("linear_cross_entropy_stats", {h, w, t, scalar(7), bias}, {rows, rows, rows, rows}, a);
  for (int64_t r = 0; r < 4; ++r) {
    int64_t best = 0;
    double z[5];
    for (int64_t c = 0; c < 5; ++c) {
      z[c] = bias.get(c) + h.get(r * 2) * w.get(c * 2) + h.get(r * 2 + 1) * w.get(c * 2 + 1);
      if (z[c] > z[best]) best = c;
    }
    EXPECT_NEAR(st[2].get(r), z[best], 1e-12) << "max of row " << r;
    EXPECT_EQ(st[3].get(r), 7.0 + best) << "argmax of row " << r;
  }
  EXPECT_EQ(st[3].get(0), 8.0) << "row 0 ties classes 8 and 10: the first";
}

/* Two ranks' stats, combined as -lm-spmd combines them (logsumexp over the ranks, the
   target logits summed), give the whole head's cross-entropy (h w^T + bias); the ranks'
   grad ops, fed the combined seeds, give dh as the sum of their parts and dw and dbias
   as their rows. */
TEST(Grad, LinearCrossEntropyStatsComposeOverRanks) {
  const int64_t v = 8, vr = 4, n = 6;
  Buf h = randn({2, 3, 5}), w = randn({v, 5}), t = randIds({2, 3}, v), bias = randn({v});
  t.set(2, -100);
  t.set(0, 1);  // rank 0's
  t.set(1, 6);  // rank 1's
  TensorType rows{DType::F64, {2, 3}}, loss{DType::F64, {}}, logitsType{DType::F64, {2, 3, v}};
  Attrs a = attrs({{"transpose_rhs", true}, {"chunk_rows", (int64_t)4}, {"vocab", v}});
  // The whole head: logits, their loss and its gradient (cross_entropy_with_grad), dh,
  // dw and dbias from the logits' gradient.
  Buf logits = runKernel("matmul", {h, w}, {logitsType}, attrs({{"transpose_rhs", true}}))[0];
  logits = runKernel("add", {logits, bias}, {logitsType})[0];
  auto whole = runKernel("cross_entropy_with_grad", {logits, t, scalar(1.0)}, {logitsType, loss});
  Buf wholeDh = runKernel("matmul", {whole[0], w}, {h.type})[0];
  std::vector<Buf> wr(2, Buf(DType::F64, {vr, 5})), br(2, Buf(DType::F64, {vr}));
  std::vector<std::vector<Buf>> st;
  for (int r = 0; r < 2; ++r) {
    for (int64_t i = 0; i < vr * 5; ++i) wr[r].set(i, w.get(r * vr * 5 + i));
    for (int64_t i = 0; i < vr; ++i) br[r].set(i, bias.get(r * vr + i));
    st.push_back(runKernel("linear_cross_entropy_stats", {h, wr[r], t, scalar(r * vr), br[r]},
                           {rows, rows, rows, rows}, a));
  }
  double sum = 0;
  int valid = 0;
  Buf dlse[2] = {Buf(DType::F64, {2, 3}), Buf(DType::F64, {2, 3})}, dtl(DType::F64, {2, 3});
  for (int64_t i = 0; i < n; ++i) {
    if (t.get(i) == -100) continue;
    ++valid;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double l0 = st[0][0].get(i), l1 = st[1][0].get(i), m = std::max(l0, l1);
    const double lse = m + std::log(std::exp(l0 - m) + std::exp(l1 - m));
    const double in = t.get(i) == -100 ? 0 : 1;
    sum += in * (lse - st[0][1].get(i) - st[1][1].get(i));
    dlse[0].set(i, in / valid * std::exp(l0 - lse));
    dlse[1].set(i, in / valid * std::exp(l1 - lse));
    dtl.set(i, -in / valid);
    // The argmax: the larger of the ranks' maxima, the first rank on a tie.
    const int r = st[1][2].get(i) > st[0][2].get(i) ? 1 : 0;
    int64_t best = 0;
    for (int64_t c = 1; c < v; ++c)
      if (logits.get(i * v + c) > logits.get(i * v + best)) best = c;
    EXPECT_EQ(st[r][3].get(i), (double)best) << "argmax of row " << i;
  }
  EXPECT_NEAR(sum / valid, whole[1].get(0), 1e-12) << "the loss";
  Buf dh(DType::F64, h.type.shape);
  for (int r = 0; r < 2; ++r) {
    auto g = runKernel("linear_cross_entropy_stats_grad",
                       {h, wr[r], t, scalar(r * vr), br[r], st[r][0], dlse[r], dtl}, {h.type, wr[r].type, br[r].type},
                       a);
    for (int64_t i = 0; i < dh.numel(); ++i) dh.set(i, dh.get(i) + g[0].get(i));
    for (int64_t c = 0; c < vr; ++c) {
      double dwc[5] = {0, 0, 0, 0, 0}, dbc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double dz = whole[0].get(i * v + r * vr + c);
        dbc += dz;
        for (int64_t k = 0; k < 5; ++k) dwc[k] += dz * h.get(i * 5 + k);
      }
      EXPECT_NEAR(g[2].get(c), dbc, 1e-12) << "dbias " << r * vr + c;
      for (int64_t k = 0; k < 5; ++k) EXPECT_NEAR(g[1].get(c * 5 + k), dwc[k], 1e-12) << "dw " << c << "," << k;
    }
  }
  EXPECT_TRUE(allClose(dh, wholeDh, 1e-12, 1e-12)) << "dh, the ranks' parts summed";
}

/* NaN logits: the vocabulary-parallel accuracy (each rank's stats max and argmax,
   all-gathered and combined as -lm-spmd combines them, docs/distributed.md "The
   vocabulary") predicts what lm.accuracy does on the whole logits, row by row: a NaN is
   never the prediction, a NaN at the target is wrong. 4 ranks of 3 classes: NaN at
   rank 0's first class and at a middle class of rank 1 in every row, rank 3's classes
   all NaN, one row all NaN (its h), targets at NaN classes, at the row's largest
   non-NaN logit and elsewhere; f64 and f32. */
template <typename T> void statsNaNCase(DType dt) {
  SCOPED_TRACE(dt == DType::F64 ? "f64" : "f32");
  const int64_t ranks = 4, vr = 3, v = ranks * vr, n = 8, d = 5;
  Buf h = randn({n, d}, dt), w = randn({v, d}, dt), bias = randn({v}, dt), t(DType::I32, {n});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t j : {int64_t(0), int64_t(4), int64_t(9), int64_t(10), int64_t(11)}) bias.set(j, nan);
  for (int64_t k = 0; k < d; ++k) h.set(5 * d + k, nan);  // row 5: every logit NaN
  const TensorType logitsType{dt, {n, v}};
  Buf logits = runKernel("matmul", {h, w}, {logitsType}, attrs({{"transpose_rhs", true}}))[0];
  logits = runKernel("add", {logits, bias}, {logitsType})[0];
  // Targets: rows 0-2 the largest non-NaN logit (correct), 3 a NaN class (0), 4 rank 3's
  // (NaN), 5 the all-NaN row's class 3 (rank 1's first), 6 another class, 7 ignored.
  for (int64_t r = 0; r < n; ++r) {
    int64_t best = -1;
    for (int64_t j = 0; j < v; ++j) {
      const double z = logits.get(r * v + j);
      if (z == z && (best < 0 || z > logits.get(r * v + best))) best = j;
    }
    const int64_t pick[] = {best, best, best, 0, 10, 3, best == 1 ? 2 : 1, -100};
    t.set(r, (double)pick[r]);
  }
  const TensorType one{dt, {}};
  const double whole = runKernel("accuracy", {logits, t}, {one})[0].get(0);
  EXPECT_GT(whole, 0.0) << "some rows are correct";

  // Each rank's stats, then the combination: best = max over the ranks (lm.max: a NaN
  // wins), argmax = min over the ranks of where(M == best, I, vocab).
  Attrs a = attrs({{"transpose_rhs", true}, {"vocab", v}});
  const TensorType rowsType{dt, {n}};
  std::vector<std::vector<Buf>> st;
  for (int64_t q = 0; q < ranks; ++q) {
    Buf wq(dt, {vr, d}), bq(dt, {vr});
    for (int64_t i = 0; i < vr * d; ++i) wq.set(i, w.get(q * vr * d + i));
    for (int64_t i = 0; i < vr; ++i) bq.set(i, bias.get(q * vr + i));
    st.push_back(runKernel("linear_cross_entropy_stats", {h, wq, t, scalar((double)(q * vr), dt), bq},
                           {rowsType, rowsType, rowsType, rowsType}, a));
  }
  int correct = 0, valid = 0;
  for (int64_t r = 0; r < n; ++r) {
    double best = st[0][2].get(r);
    for (int64_t q = 1; q < ranks; ++q) {
      const double m = st[(size_t)q][2].get(r);
      if (m > best || m != m) best = m;
    }
    double argmax = (double)v;
    for (int64_t q = 0; q < ranks; ++q)
      if (st[(size_t)q][2].get(r) == best) argmax = std::min(argmax, st[(size_t)q][3].get(r));
    const int32_t target = (int32_t)t.get(r);
    if (target == -100) continue;
    ++valid;
    correct += argmax == (double)target;
    // The same row alone through lm.accuracy.
    Buf row(dt, {1, v}), rowTarget(DType::I32, {1});
    for (int64_t j = 0; j < v; ++j) row.set(j, logits.get(r * v + j));
    rowTarget.set(0, target);
    const double alone = runKernel("accuracy", {row, rowTarget}, {one})[0].get(0);
    EXPECT_EQ(argmax == (double)target, alone == 1.0) << "row " << r << ": predicted " << argmax << ", target " << target;
  }
  EXPECT_EQ((T)((double)correct / (double)valid), (T)whole) << "the accuracy";
  EXPECT_EQ(st[3][2].get(0), -INFINITY) << "rank 3's classes are all NaN: no max";
  EXPECT_EQ(st[3][3].get(0), (double)v) << "... and class vocab, which no target is";
}

TEST(Grad, LinearCrossEntropyStatsNaNFollowsAccuracy) {
  statsNaNCase<double>(DType::F64);
  statsNaNCase<float>(DType::F32);
}

/* A target outside the vocabulary (not ignore_index) is an error naming it, as the
   whole loss's; so is a first class that is not a whole number. */
TEST(Grad, LinearCrossEntropyStatsErrors) {
  Buf h = randn({2, 3}), w = randn({2, 3}), t = randIds({2}, 4), bias = randn({2});
  TensorType rows{DType::F64, {2}};
  Attrs a = attrs({{"transpose_rhs", true}, {"vocab", (int64_t)4}});
  auto message = [&](double first) -> std::string {
    try {
      runKernel("linear_cross_entropy_stats", {h, w, t, scalar(first), bias}, {rows, rows, rows, rows}, a);
      return "no error";
    } catch (const Error &e) {
      return e.what();
    }
  };
  t.set(1, 4);
  EXPECT_EQ(message(2), "linear_cross_entropy_stats: target 4 at flat position 1 is outside the vocabulary [0, 4) and "
                        "is not ignore_index -100");
  t.set(1, 3);
  EXPECT_EQ(message(1.5), "linear_cross_entropy_stats: first 1.5 must be a whole number >= 0 (the rank's first class)");
}

TEST(Grad, Embedding) {
  Buf table = randn({6, 3}), ids = randIds({2, 5}, 6), dy = randn({2, 5, 3});
  ids.set(0, 4);
  ids.set(1, 4);  // a repeated id accumulates
  auto dt = runKernel("embedding_grad", {ids, dy}, {table.type});
  auto f = [&](const std::vector<Buf> &in) { return runKernel("embedding", {in[0], ids}, {dy.type})[0]; };
  EXPECT_TRUE(allClose(dt[0], finiteDiff(f, {table}, 0, dy), kRtol, kAtol));
}

/* embedding_grad_add(base, ids, dy) = base + embedding_grad(ids, dy), into a buffer
   of its own and into base's bytes (as a plan gives it when nothing else reads base). */
TEST(Grad, EmbeddingGradAdd) {
  Buf base = randn({6, 3}), ids = randIds({2, 5}, 6), dy = randn({2, 5, 3});
  ids.set(0, 4);
  ids.set(1, 4);
  Buf scattered = runKernel("embedding_grad", {ids, dy}, {base.type})[0];
  Buf want = runKernel("add", {base, scattered}, {base.type})[0];
  EXPECT_TRUE(allClose(runKernel("embedding_grad_add", {base, ids, dy}, {base.type})[0], want, 1e-15, 1e-15));
  Buf inPlace = base;
  Attrs none;
  KernelCall call{{inPlace.ref(), ids.ref(), dy.ref()}, {inPlace.ref()}, none};
  findKernel("embedding_grad_add")->run(call);
  EXPECT_TRUE(allClose(inPlace, want, 1e-15, 1e-15));
}

TEST(Grad, Slice) {
  Buf x = randn({4, 7});
  Attrs a = attrs({{"start", std::vector<int64_t>{1, 0}}, {"limit", std::vector<int64_t>{4, 7}},
                   {"stride", std::vector<int64_t>{2, 3}}});
  TensorType ys{DType::F64, {2, 3}};
  Buf dy = randn(ys.shape);
  auto dx = runKernel("slice_grad", {dy}, {x.type}, a);
  EXPECT_TRUE(allClose(dx[0], finiteDiff(fwd("slice", ys, a), {x}, 0, dy), kRtol, kAtol));
}

/* matmul VJP: dA = dY Bᵀ, dB = Aᵀ dY; a shared rank-2 rhs reduces over the batch
   (reshape to [batch*M, K] then one transpose_lhs matmul, or per-batch + sum_to). */
TEST(Grad, MatmulComposed) {
  Buf a = randn({2, 3, 4}), b = randn({4, 5}), dy = randn({2, 3, 5});
  auto f = fwd("matmul", dy.type);
  Buf da = runKernel("matmul", {dy, b}, {a.type}, attrs({{"transpose_rhs", true}}))[0];
  EXPECT_TRUE(allClose(da, finiteDiff(f, {a, b}, 0, dy), kRtol, kAtol)) << "dA";
  Buf a2 = runKernel("reshape", {a}, {{DType::F64, {6, 4}}})[0];
  Buf dy2 = runKernel("reshape", {dy}, {{DType::F64, {6, 5}}})[0];
  Buf db = runKernel("matmul", {a2, dy2}, {b.type}, attrs({{"transpose_lhs", true}}))[0];
  Buf fdB = finiteDiff(f, {a, b}, 1, dy);
  EXPECT_TRUE(allClose(db, fdB, kRtol, kAtol)) << "dB via reshape";
  // Batched form: per-batch Aᵀ dY via a broadcast copy of nothing, then sum_to.
  Buf dbBatched = runKernel("matmul", {a, dy}, {{DType::F64, {2, 4, 5}}}, attrs({{"transpose_lhs", true}}))[0];
  Buf db2 = runKernel("sum_to", {dbBatched}, {b.type})[0];
  EXPECT_TRUE(allClose(db2, fdB, kRtol, kAtol)) << "dB via sum_to";

  // Batched rhs with transposes: y = Aᵀ Bᵀ per batch.
  Buf p = randn({2, 4, 3}), q = randn({2, 5, 4}), dz = randn({2, 3, 5});
  Attrs tt = attrs({{"transpose_lhs", true}, {"transpose_rhs", true}});
  auto g = fwd("matmul", dz.type, tt);
  // dP (stored [K, M]) = B dYᵀ -> matmul(qᵀ, dzᵀ): [2,4,5]x[2,5,3]
  Buf dp = runKernel("matmul", {q, dz}, {p.type}, tt)[0];
  EXPECT_TRUE(allClose(dp, finiteDiff(g, {p, q}, 0, dz), kRtol, kAtol)) << "dP";
  Buf dq = runKernel("matmul", {dz, p}, {q.type}, tt)[0];
  EXPECT_TRUE(allClose(dq, finiteDiff(g, {p, q}, 1, dz), kRtol, kAtol)) << "dQ";
}

/* Broadcasting binary ops: the operand gradient is sum_to(local gradient). */
TEST(Grad, BinaryComposed) {
  Shape ls{2, 3, 4}, rs{3, 1};
  TensorType lt{DType::F64, ls}, rt{DType::F64, rs}, ot{DType::F64, ls};
  Buf a = randn(ls), b = randn(rs, DType::F64, 1.0), dy = randn(ls);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, b.get(i) + (b.get(i) > 0 ? 1.5 : -1.5));  // keep |b| away from 0
  auto sumTo = [](const Buf &x, TensorType t) { return runKernel("sum_to", {x}, {t})[0]; };
  auto bin = [&](const char *op, const Buf &x, const Buf &y) {
    std::string err;
    auto s = shapes::broadcast(x.type.shape, y.type.shape, err);
    return runKernel(op, {x, y}, {{DType::F64, *s}})[0];
  };
  // add: da = dy, db = sum_to(dy)
  EXPECT_TRUE(allClose(sumTo(dy, rt), finiteDiff(fwd("add", ot), {a, b}, 1, dy), kRtol, kAtol)) << "add rhs";
  EXPECT_TRUE(allClose(dy, finiteDiff(fwd("add", ot), {a, b}, 0, dy), kRtol, kAtol)) << "add lhs";
  // sub: db = sum_to(neg(dy))
  Buf ndy = runKernel("neg", {dy}, {dy.type})[0];
  EXPECT_TRUE(allClose(sumTo(ndy, rt), finiteDiff(fwd("sub", ot), {a, b}, 1, dy), kRtol, kAtol)) << "sub rhs";
  // mul: da = dy*b, db = sum_to(dy*a)
  EXPECT_TRUE(allClose(bin("mul", dy, b), finiteDiff(fwd("mul", ot), {a, b}, 0, dy), kRtol, kAtol)) << "mul lhs";
  EXPECT_TRUE(allClose(sumTo(bin("mul", dy, a), rt), finiteDiff(fwd("mul", ot), {a, b}, 1, dy), kRtol, kAtol))
      << "mul rhs";
  // div: da = dy/b, db = sum_to(neg(dy*a/(b*b)))
  EXPECT_TRUE(allClose(bin("div", dy, b), finiteDiff(fwd("div", ot), {a, b}, 0, dy), kRtol, kAtol)) << "div lhs";
  Buf q = bin("div", bin("mul", dy, a), bin("mul", b, b));
  Buf nq = runKernel("neg", {q}, {q.type})[0];
  EXPECT_TRUE(allClose(sumTo(nq, rt), finiteDiff(fwd("div", ot), {a, b}, 1, dy), kRtol, kAtol)) << "div rhs";
  // neg: dx = neg(dy)
  EXPECT_TRUE(allClose(ndy, finiteDiff(fwd("neg", ot), {a}, 0, dy), kRtol, kAtol)) << "neg";
}

/* sum_to's adjoint broadcasts dy back (add to zeros of the operand shape). */
TEST(Grad, SumToComposed) {
  Shape from{2, 3, 4}, to{3, 1};
  Buf x = randn(from), dy = randn(to), zeros(DType::F64, from);
  Buf dx = runKernel("add", {zeros, dy}, {{DType::F64, from}})[0];
  EXPECT_TRUE(allClose(dx, finiteDiff(fwd("sum_to", {DType::F64, to}), {x}, 0, dy), kRtol, kAtol));
}

/* transpose's adjoint is the inverse permutation; reshape's is reshape back. */
TEST(Grad, TransposeAndReshapeComposed) {
  Buf x = randn({2, 3, 4});
  std::vector<int64_t> perm{2, 0, 1}, inv{1, 2, 0};
  TensorType yt{DType::F64, {4, 2, 3}};
  Buf dy = randn(yt.shape);
  Buf dx = runKernel("transpose", {dy}, {x.type}, attrs({{"permutation", inv}}))[0];
  EXPECT_TRUE(allClose(dx, finiteDiff(fwd("transpose", yt, attrs({{"permutation", perm}})), {x}, 0, dy), kRtol, kAtol));
  TensorType rt{DType::F64, {6, 4}};
  Buf dr = randn(rt.shape);
  Buf dxr = runKernel("reshape", {dr}, {x.type})[0];
  EXPECT_TRUE(allClose(dxr, finiteDiff(fwd("reshape", rt), {x}, 0, dr), kRtol, kAtol));
}

}  // namespace
}  // namespace lmrt::kernels::test
