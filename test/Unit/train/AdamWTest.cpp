/* Tests AdamW against hand computations: the first step (where bias correction
   makes the update lr * sign(g)), decoupled weight decay only where enabled,
   a second step with both bias corrections, f32 and f64, and state checks. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/cpu/adamw.h"

using namespace lmrt;

namespace {

/* The textbook AdamW step t, in double, for one element. */
struct RefAdamW {
  double b1, b2, eps, wd;
  double m = 0, v = 0;
  int t = 0;
  double step(double p, double g, double lr, bool decay) {
    ++t;
    if (decay) p -= lr * wd * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
    return p - lr * mhat / (std::sqrt(vhat) + eps);
  }
};

}  // namespace

TEST(AdamW, FirstStepIsLrTimesSignWithoutDecay) {
  AdamW opt({0.9, 0.99, 1e-8, 0.1});
  double p[3] = {1.0, -2.0, 0.5}, g[3] = {0.3, -4.0, 0.0};
  opt.step({{DType::F64, p, g, 3, /*weightDecay=*/false}}, 0.01);
  EXPECT_NEAR(p[0], 1.0 - 0.01 * 0.3 / (0.3 + 1e-8), 1e-15);
  EXPECT_NEAR(p[1], -2.0 + 0.01 * 4.0 / (4.0 + 1e-8), 1e-15);
  EXPECT_EQ(p[2], 0.5);  // zero gradient, no decay: unchanged
  EXPECT_EQ(opt.stepCount(), 1);
}

TEST(AdamW, DecoupledWeightDecayAppliesOnlyWhereEnabled) {
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  double a[1] = {2.0}, b[1] = {2.0}, ga[1] = {0.0}, gb[1] = {0.0};
  opt.step({{DType::F64, a, ga, 1, true}, {DType::F64, b, gb, 1, false}}, 0.5);
  EXPECT_DOUBLE_EQ(a[0], 2.0 * (1 - 0.5 * 0.1));  // decay is lr * wd * p, not through Adam
  EXPECT_DOUBLE_EQ(b[0], 2.0);
}

TEST(AdamW, TwoStepsMatchTheTextbookFormulaInF64) {
  AdamWConfig c{0.9, 0.95, 1e-8, 0.1};
  AdamW opt(c);
  RefAdamW ref{c.beta1, c.beta2, c.eps, c.weightDecay};
  double p[1] = {0.7}, g[1];
  double want = 0.7;
  const double grads[2] = {0.25, -0.1}, lrs[2] = {1e-2, 3e-3};
  for (int k = 0; k < 2; ++k) {
    g[0] = grads[k];
    opt.step({{DType::F64, p, g, 1, true}}, lrs[k]);
    want = ref.step(want, grads[k], lrs[k], true);
    EXPECT_NEAR(p[0], want, 1e-15) << "step " << k + 1;
  }
  // Second step by hand: m2 = 0.9*0.025 + 0.1*(-0.1) = 0.0125, v2 = 0.95*0.003125 + 0.05*0.01
  // = 0.00346875; p1 = 0.7*(1-1e-3) - 1e-2*0.25/(0.25+1e-8).
  double p1 = 0.7 * (1 - 1e-3) - 1e-2 * 0.25 / (0.25 + 1e-8);
  double mhat = 0.0125 / (1 - 0.81), vhat = 0.00346875 / (1 - 0.9025);
  double p2 = p1 * (1 - 3e-4) - 3e-3 * mhat / (std::sqrt(vhat) + 1e-8);
  EXPECT_NEAR(p[0], p2, 1e-15);
}

TEST(AdamW, F32FollowsTheF64Reference) {
  AdamWConfig c{0.9, 0.99, 1e-8, 0.1};
  AdamW opt(c);
  std::vector<RefAdamW> ref(64, RefAdamW{c.beta1, c.beta2, c.eps, c.weightDecay});
  std::vector<float> p(64), g(64);
  std::vector<double> want(64);
  for (int i = 0; i < 64; ++i) want[i] = p[i] = 0.01f * float(i - 32);
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i < 64; ++i) g[i] = std::sin(0.3f * float(i + 7 * k));
    opt.step({{DType::F32, p.data(), g.data(), 64, true}}, 1e-3);
    for (int i = 0; i < 64; ++i) want[i] = ref[i].step(want[i], g[i], 1e-3, true);
  }
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(p[i], want[i], 2e-6) << i;
}

TEST(AdamW, RejectsBadConfigAndChangedParameters) {
  EXPECT_THROW(AdamW({1.0, 0.99, 1e-8, 0}), Error);
  EXPECT_THROW(AdamW({0.9, 0.99, 0.0, 0}), Error);
  AdamW opt({0.9, 0.99, 1e-8, 0});
  float p[2] = {0, 0}, g[2] = {1, 1};
  opt.step({{DType::F32, p, g, 2, false}}, 1e-3);
  EXPECT_THROW(opt.step({{DType::F32, p, g, 1, false}}, 1e-3), Error);
  EXPECT_THROW(opt.step({}, 1e-3), Error);
  EXPECT_THROW(opt.step({{DType::F32, p, g, 2, false}}, NAN), Error);
}

/* The training loop folds clipping into AdamW's pass: stepping with a gradient scale
   must give the bits of clipping the gradients in place and stepping with scale 1, in
   both precisions and past the parallel threshold, and must leave the gradients alone. */
TEST(AdamW, GradScaleEqualsClippingFirst) {
  const int64_t n = 70000;
  std::vector<float> pf(n), gf(n);
  std::vector<double> pd(n), gd(n);
  for (int64_t i = 0; i < n; ++i) {
    pd[i] = pf[i] = 0.01f * std::cos(0.1f * float(i));
    gd[i] = gf[i] = std::sin(0.37f * float(i));
  }
  std::vector<float> pf2 = pf, gf2 = gf, gfKeep = gf;
  std::vector<double> pd2 = pd, gd2 = gd;
  AdamW fused({0.9, 0.99, 1e-8, 0.1}), byHand({0.9, 0.99, 1e-8, 0.1});
  const double c = 0.3183;
  for (int k = 0; k < 3; ++k) {
    fused.step({{DType::F32, pf.data(), gf.data(), n, true}, {DType::F64, pd.data(), gd.data(), n, false}}, 1e-3, c);
    std::vector<ParamView> v2 = {{DType::F32, pf2.data(), gf2.data(), n, true},
                                 {DType::F64, pd2.data(), gd2.data(), n, false}};
    for (int64_t i = 0; i < n; ++i) gf2[i] = gfKeep[i] * float(c), gd2[i] = double(gfKeep[i]) * c;
    byHand.step(v2, 1e-3);
  }
  EXPECT_EQ(std::memcmp(pf.data(), pf2.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(pd.data(), pd2.data(), n * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(gf.data(), gfKeep.data(), n * sizeof(float)), 0);
  EXPECT_THROW(fused.step({{DType::F32, pf.data(), gf.data(), n, true}, {DType::F64, pd.data(), gd.data(), n, false}},
                          1e-3, 0.0),
               Error);
}

// A frozen parameter is left bit for bit as it was, with its moments, even with a
// gradient and weight decay; the others beside it update as usual.
TEST(AdamW, FrozenParametersAreNeverUpdated) {
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  float a[2] = {1.5f, -0.25f}, ga[2] = {0.3f, -2.0f};
  float b[2] = {1.5f, -0.25f}, gb[2] = {0.3f, -2.0f};
  for (int i = 0; i < 3; ++i)
    opt.step({{DType::F32, a, ga, 2, true, /*frozen=*/true}, {DType::F32, b, gb, 2, true, false}}, 0.01);
  EXPECT_EQ(a[0], 1.5f);
  EXPECT_EQ(a[1], -0.25f);
  EXPECT_NE(b[0], 1.5f);
  EXPECT_NE(b[1], -0.25f);
  std::vector<AdamW::MomentView> m = opt.moments();
  EXPECT_EQ(((float *)m[0].m)[0], 0.0f);
  EXPECT_EQ(((float *)m[0].v)[1], 0.0f);
  EXPECT_NE(((float *)m[1].m)[0], 0.0f);
}
