/* Tests that the zoo's kernels (unary math, comparisons, where, concat, reduce_max,
   rms_norm, grouped-query attention) match naive double-precision references
   written from docs/dialect.md. The gradient checks (test/GradCheck) test the VJPs,
   which cannot see a forward that is wrong by a factor its VJP shares (exp). */
#include <cmath>

#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

TEST(ZooForward, Unary) {
  struct Case {
    const char *op;
    double (*ref)(double);
    bool positive;
  };
  const Case cases[] = {
      {"tanh", [](double x) { return std::tanh(x); }, false},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"log_sigmoid", [](double x) { return std::log(1 / (1 + std::exp(-x))); }, false},
      {"softplus", [](double x) { return std::log1p(std::exp(x)); }, false},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }, false},
      {"silu", [](double x) { return x / (1 + std::exp(-x)); }, false},
      {"exp", [](double x) { return std::exp(x); }, false},
      {"log", [](double x) { return std::log(x); }, true},
      {"sqrt", [](double x) { return std::sqrt(x); }, true},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, true},
      {"sin", [](double x) { return std::sin(x); }, false},
      {"cos", [](double x) { return std::cos(x); }, false},
      {"stop_gradient", [](double x) { return x; }, false},
      {"gelu_erf", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false},
  };
  for (const Case &c : cases)
    for (DType dt : {DType::F64, DType::F32}) {
      Buf x = randn({3, 7}, DType::F64, 3.0);
      if (c.positive)
        for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::fabs(x.get(i)) + 0.1);
      Buf ref(DType::F64, x.type.shape);
      for (int64_t i = 0; i < x.numel(); ++i) ref.set(i, c.ref(x.get(i)));
      Buf xin = x.as(dt);
      auto out = runKernel(c.op, {xin}, {xin.type});
      double tol = dt == DType::F64 ? 1e-13 : 2e-6;
      EXPECT_TRUE(allClose(out[0].as(DType::F64), ref, tol, tol)) << c.op << " " << dtypeName(dt);
    }
  // log_sigmoid stays finite far out where log(sigmoid(x)) would underflow.
  Buf far(DType::F64, {2});
  far.set(0, -800.0);
  far.set(1, 800.0);
  auto out = runKernel("log_sigmoid", {far}, {far.type});
  EXPECT_DOUBLE_EQ(out[0].get(0), -800.0);
  EXPECT_DOUBLE_EQ(out[0].get(1), 0.0);
  // softplus neither overflows far above 0 nor loses its value, ~exp(x), far
  // below it (log(1 + exp(-30)) would be off by 1e-3 relative).
  Buf tails(DType::F64, {3});
  tails.set(0, 800.0);
  tails.set(1, -30.0);
  tails.set(2, -800.0);
  auto soft = runKernel("softplus", {tails}, {tails.type});
  EXPECT_DOUBLE_EQ(soft[0].get(0), 800.0);
  EXPECT_DOUBLE_EQ(soft[0].get(1), std::log1p(std::exp(-30.0)));
  EXPECT_EQ(soft[0].get(2), 0.0);
}

TEST(ZooForward, ComparisonsAndWhere) {
  Buf x = randn({2, 3, 4}), y = randn({4});
  x.set(5, y.get(1));  // one tie for eq/ge/le
  struct Case {
    const char *op;
    bool (*ref)(double, double);
  };
  const Case cases[] = {{"gt", [](double a, double b) { return a > b; }},
                        {"ge", [](double a, double b) { return a >= b; }},
                        {"lt", [](double a, double b) { return a < b; }},
                        {"le", [](double a, double b) { return a <= b; }},
                        {"eq", [](double a, double b) { return a == b; }},
                        {"ne", [](double a, double b) { return a != b; }}};
  for (const Case &c : cases) {
    auto out = runKernel(c.op, {x, y}, {x.type});
    Buf ref(DType::F64, x.type.shape);
    for (int64_t i = 0; i < x.numel(); ++i) ref.set(i, c.ref(x.get(i), y.get(i % 4)) ? 1.0 : 0.0);
    EXPECT_TRUE(allClose(out[0], ref, 0, 0)) << c.op;
  }
  Buf cond = runKernel("gt", {x, scalar(0.0)}, {x.type})[0];
  auto out = runKernel("where", {cond, x, y}, {x.type});
  Buf ref(DType::F64, x.type.shape);
  for (int64_t i = 0; i < x.numel(); ++i) ref.set(i, x.get(i) > 0 ? x.get(i) : y.get(i % 4));
  EXPECT_TRUE(allClose(out[0], ref, 0, 0));
}

TEST(ZooForward, Concat) {
  Buf a = randn({2, 3, 4}), b = randn({2, 3, 2});
  auto out = runKernel("concat", {a, b}, {{DType::F64, {2, 3, 6}}}, attrs({{"axis", int64_t(2)}}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_EQ(out[0].get(r * 6 + j), j < 4 ? a.get(r * 4 + j) : b.get(r * 2 + j - 4));
  Buf c = randn({1, 3, 4});
  auto first = runKernel("concat", {a, c}, {{DType::F64, {3, 3, 4}}}, attrs({{"axis", int64_t(0)}}));
  for (int64_t i = 0; i < 36; ++i) EXPECT_EQ(first[0].get(i), i < 24 ? a.get(i) : c.get(i - 24));
}

/* take_along_axis along the middle axis with an index broadcast over the
   last dim, against the definition; its grad against the scatter-add loop. */
TEST(ZooForward, TakeAlongAxis) {
  Buf x = randn({2, 5, 3}), ids = randIds({2, 4, 1}, 5), dy = randn({2, 4, 3});
  Attrs ax = attrs({{"axis", int64_t(1)}});
  auto out = runKernel("take_along_axis", {x, ids}, {{DType::F64, {2, 4, 3}}}, ax);
  Buf ref(DType::F64, {2, 5, 3});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t at = (int64_t)ids.get(b * 4 + k);
        EXPECT_EQ(out[0].get((b * 4 + k) * 3 + j), x.get((b * 5 + at) * 3 + j));
        ref.set((b * 5 + at) * 3 + j, ref.get((b * 5 + at) * 3 + j) + dy.get((b * 4 + k) * 3 + j));
      }
  auto dx = runKernel("take_along_axis_grad", {ids, dy}, {{DType::F64, {2, 5, 3}}}, ax);
  EXPECT_TRUE(allClose(dx[0], ref, 0, 0));
}

TEST(ZooForward, ReduceMax) {
  Buf x = randn({2, 3, 5});
  auto last = runKernel("reduce_max", {x}, {{DType::F64, {2, 3, 1}}}, attrs({{"axes", std::vector<int64_t>{2}}}));
  for (int64_t r = 0; r < 6; ++r) {
    double m = -INFINITY;
    for (int64_t j = 0; j < 5; ++j) m = std::max(m, x.get(r * 5 + j));
    EXPECT_EQ(last[0].get(r), m);
  }
  auto two = runKernel("reduce_max", {x}, {{DType::F64, {1, 3, 1}}}, attrs({{"axes", std::vector<int64_t>{0, 2}}}));
  for (int64_t t = 0; t < 3; ++t) {
    double m = -INFINITY;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 5; ++j) m = std::max(m, x.get((b * 3 + t) * 5 + j));
    EXPECT_EQ(two[0].get(t), m);
  }
}

TEST(ZooForward, RmsNorm) {
  Buf x = randn({2, 3, 8}, DType::F64, 3.0), g = randn({8});
  double eps = 1e-3;
  auto out = runKernel("rms_norm", {x, g}, {x.type}, attrs({{"epsilon", eps}}));
  Buf ref(DType::F64, x.type.shape);
  for (int64_t r = 0; r < 6; ++r) {
    double ms = 0;
    for (int j = 0; j < 8; ++j) ms += x.get(r * 8 + j) * x.get(r * 8 + j) / 8;
    for (int j = 0; j < 8; ++j) ref.set(r * 8 + j, x.get(r * 8 + j) / std::sqrt(ms + eps) * g.get(j));
  }
  EXPECT_TRUE(allClose(out[0], ref, 1e-12, 1e-12));
}

/* Grouped-query attention equals plain attention on keys and values whose heads are
   repeated (HF's repeat_kv), which Forward.Attention checks against a naive reference. */
TEST(ZooForward, GroupedQueryAttention) {
  for (bool causal : {false, true})
    for (int64_t kvHeads : {1, 2}) {
      const int64_t H = 4, Dh = 3, B = 2, T = 70;  // T > one 64-key block
      Buf q = randn({B, T, H * Dh}), k = randn({B, T, kvHeads * Dh}), v = randn({B, T, kvHeads * Dh});
      Buf kr(DType::F64, q.type.shape), vr(DType::F64, q.type.shape);
      for (int64_t bt = 0; bt < B * T; ++bt)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t e = 0; e < Dh; ++e) {
            int64_t src = bt * kvHeads * Dh + (h / (H / kvHeads)) * Dh + e;
            kr.set(bt * H * Dh + h * Dh + e, k.get(src));
            vr.set(bt * H * Dh + h * Dh + e, v.get(src));
          }
      auto gqa = runKernel("attention", {q, k, v}, {q.type},
                           attrs({{"num_heads", H}, {"causal", causal}, {"num_kv_heads", kvHeads}}));
      auto mha = runKernel("attention", {q, kr, vr}, {q.type}, attrs({{"num_heads", H}, {"causal", causal}}));
      EXPECT_TRUE(allClose(gqa[0], mha[0], 1e-12, 1e-12)) << "kv heads " << kvHeads << " causal " << causal;
      // The backward: dk, dv of the grouped heads are the sums over each group.
      Buf dy = randn(q.type.shape);
      auto g = runKernel("attention_grad", {q, k, v, dy}, {q.type, k.type, v.type},
                         attrs({{"num_heads", H}, {"causal", causal}, {"num_kv_heads", kvHeads}}));
      auto r = runKernel("attention_grad", {q, kr, vr, dy}, {q.type, q.type, q.type},
                         attrs({{"num_heads", H}, {"causal", causal}}));
      EXPECT_TRUE(allClose(g[0], r[0], 1e-11, 1e-11));
      Buf dk(DType::F64, k.type.shape), dv(DType::F64, v.type.shape);
      for (int64_t bt = 0; bt < B * T; ++bt)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t e = 0; e < Dh; ++e) {
            int64_t dst = bt * kvHeads * Dh + (h / (H / kvHeads)) * Dh + e;
            dk.set(dst, dk.get(dst) + r[1].get(bt * H * Dh + h * Dh + e));
            dv.set(dst, dv.get(dst) + r[2].get(bt * H * Dh + h * Dh + e));
          }
      EXPECT_TRUE(allClose(g[1], dk, 1e-11, 1e-11));
      EXPECT_TRUE(allClose(g[2], dv, 1e-11, 1e-11));
    }
}

}  // namespace
}  // namespace lmrt::kernels::test
