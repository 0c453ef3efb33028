/* Tests AdamW against hand computations: the first step (where bias correction
   makes the update lr * sign(g)), decoupled weight decay only where enabled,
   a second step with both bias corrections, f32 and f64, and state checks; and that
   its bits are the same on every x86-64 level (AVX-512, AVX2 + FMA, baseline), with
   the update's element compiled for each (OptimizerTargets.h); and so are the gradient
   norm's. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "contract/scalar_math.h"
#include "runtime/cpu/adamw.h"
#include "runtime/cpu/grad_clip.h"
#include "test/Unit/train/OptimizerTargets.h"

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

#if defined(LMRT_ADAMW_TARGETS_BUILT)
namespace {

/* Random mid-training state: parameters, gradients (some past clip_value), m and v. */
template <typename T> struct AdamWState {
  std::vector<T> p, g, m, v;
  explicit AdamWState(int64_t n, uint32_t seed) : p((size_t)n), g((size_t)n), m((size_t)n), v((size_t)n) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (size_t i = 0; i < (size_t)n; ++i) {
      p[i] = T(normal(rng)), g[i] = T(2 * normal(rng)), m[i] = T(0.1 * normal(rng));
      v[i] = T(0.01 * std::fabs(normal(rng)));
    }
  }
  bool sameBits(const AdamWState &o) const {
    const size_t b = p.size() * sizeof(T);
    return !std::memcmp(p.data(), o.p.data(), b) && !std::memcmp(m.data(), o.m.data(), b) &&
           !std::memcmp(v.data(), o.v.data(), b);
  }
};

/* The update count t = 5 of a run with these settings: parameter `decays`, multiple `lrScale`. */
test::AdamWArgs argsFor(const AdamWConfig &c, double lr, double lrScale, bool decays, double gradScale) {
  const double t = 5;
  return {lr * lrScale, decays ? c.weightDecay : 0.0, c.beta1, c.beta2, c.eps, 1.0 - std::pow(c.beta1, t),
          1.0 - std::pow(c.beta2, t), gradScale, c.clipValue};
}

/* Each level's loop (OptimizerTargets.h) this CPU can run, against the baseline's bits. */
template <typename T> void levelsAgree(int64_t n, const test::AdamWArgs &a) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "f32" : "f64") + ", n " + std::to_string(n));
  AdamWState<T> base(n, 3);
  test::adamwLoop_baseline(base.p.data(), base.g.data(), base.m.data(), base.v.data(), n, a);
  if (!__builtin_cpu_supports("x86-64-v3")) GTEST_SKIP() << "this CPU has no AVX2/FMA level to compare";
  AdamWState<T> v3(n, 3), fused(n, 3);
  test::adamwLoop_v3(v3.p.data(), v3.g.data(), v3.m.data(), v3.v.data(), n, a);
  EXPECT_TRUE(v3.sameBits(base)) << "x86-64-v3 (AVX2, FMA) differs from baseline x86-64";
  test::adamwLoop_v3Fused(fused.p.data(), fused.g.data(), fused.m.data(), fused.v.data(), n, a);
  if (n >= 1000)  // (a few elements may well round the same either way)
    EXPECT_FALSE(fused.sameBits(base)) << "with FMA contraction the bits should differ: the data cannot tell";
  if (!__builtin_cpu_supports("x86-64-v4")) return;
  AdamWState<T> v4(n, 3);
  test::adamwLoop_v4(v4.p.data(), v4.g.data(), v4.m.data(), v4.v.data(), n, a);
  EXPECT_TRUE(v4.sameBits(base)) << "x86-64-v4 (AVX-512) differs from baseline x86-64";
}

}  // namespace

/* AdamW's bits do not depend on the CPU (contract/adamw_math.h): the element compiled for
   AVX-512, for AVX2 + FMA and for baseline x86-64, with the flags runtime/cpu/adamw.cpp is
   compiled with, gives the same parameters and moments, in the vector body and the scalar
   tail (n not a multiple of 16), with decay, clipping's factor and clip_value; the same
   source contracted into FMAs does not (so the data can tell). */
TEST(AdamW, BitsAreTheSameAtEveryX86Level) {
  AdamWConfig c{0.9, 0.95, 1e-8, 0.1};
  c.clipValue = 2.5;
  for (int64_t n : {int64_t(1), int64_t(15), int64_t(1000 + 13)}) {
    levelsAgree<float>(n, argsFor(c, 3e-3, 1.0, true, 0.7));
    levelsAgree<double>(n, argsFor(c, 3e-3, 0.5, false, 1.0));
  }
}

/* The optimizer itself (whichever clone of its loop this CPU picks, over its threads, with
   a bf16 copy written in tiles) gives the baseline loop's bits: f32 parameters past the
   parallel threshold with and without a copy, one with a learning-rate multiple, and f64. */
TEST(AdamW, StepGivesTheBaselineBits) {
  AdamWConfig c{0.9, 0.95, 1e-8, 0.1};
  c.clipValue = 2.5;
  const double lr = 3e-3, gradScale = 0.7;
  const int64_t big = 70000 + 13, small = 1000 + 7, f64n = 517;
  AdamWState<float> a(big, 1), b(small, 2);
  AdamWState<double> d(f64n, 4);
  std::vector<uint16_t> copy((size_t)big);
  std::vector<ParamView> views = {{DType::F32, a.p.data(), a.g.data(), big, true},
                                  {DType::F32, b.p.data(), b.g.data(), small, false, false, 0.5},
                                  {DType::F64, d.p.data(), d.g.data(), f64n, true}};
  views[0].copy = copy.data(), views[0].copyType = DType::BF16;
  AdamWState<float> wantA = a, wantB = b;
  AdamWState<double> wantD = d;
  AdamW opt(c);
  opt.restoreState(views, 4);  // the next step is update 5, from the states' moments
  std::vector<AdamW::MomentView> mv = opt.moments();
  std::memcpy(mv[0].m, a.m.data(), big * 4), std::memcpy(mv[0].v, a.v.data(), big * 4);
  std::memcpy(mv[1].m, b.m.data(), small * 4), std::memcpy(mv[1].v, b.v.data(), small * 4);
  std::memcpy(mv[2].m, d.m.data(), f64n * 8), std::memcpy(mv[2].v, d.v.data(), f64n * 8);
  opt.step(views, lr, gradScale);
  std::memcpy(a.m.data(), mv[0].m, big * 4), std::memcpy(a.v.data(), mv[0].v, big * 4);
  std::memcpy(b.m.data(), mv[1].m, small * 4), std::memcpy(b.v.data(), mv[1].v, small * 4);
  std::memcpy(d.m.data(), mv[2].m, f64n * 8), std::memcpy(d.v.data(), mv[2].v, f64n * 8);

  test::adamwLoop_baseline(wantA.p.data(), wantA.g.data(), wantA.m.data(), wantA.v.data(), big,
                           argsFor(c, lr, 1.0, true, gradScale));
  test::adamwLoop_baseline(wantB.p.data(), wantB.g.data(), wantB.m.data(), wantB.v.data(), small,
                           argsFor(c, lr, 0.5, false, gradScale));
  test::adamwLoop_baseline(wantD.p.data(), wantD.g.data(), wantD.m.data(), wantD.v.data(), f64n,
                           argsFor(c, lr, 1.0, true, gradScale));
  EXPECT_TRUE(a.sameBits(wantA)) << "f32 with a bf16 copy";
  EXPECT_TRUE(b.sameBits(wantB)) << "f32, lr x 0.5, no decay";
  EXPECT_TRUE(d.sameBits(wantD)) << "f64";
  for (int64_t i = 0; i < big; ++i) {
    const uint16_t want = lmc::store<lmc::bf16>(a.p[(size_t)i]).bits;
    ASSERT_EQ(copy[(size_t)i], want) << "bf16 copy [" << i << "]";
  }
}
/* The gradient norm's block sum (runtime/cpu/block_sum_squares.h) gives the same bits at
   every x86-64 level, and gradBlockSumSquares (grad_clip.cpp, whichever clone this CPU
   picks) gives them too: a block of 65536 and one with a tail past the streams' lanes;
   f32 and f64. Contracted into FMAs an f64 sum differs (an f32 gradient's squares are exact
   in double, so there the FMA cannot change a bit): a lane of two squares of similar
   size, a^2 + b^2, rounds otherwise for some of 100 random pairs (the data can tell), and
   the exact levels agree on all of them. */
TEST(AdamW, GradientNormBitsAreTheSameAtEveryX86Level) {
  auto same = [](double a, double b) { return !std::memcmp(&a, &b, sizeof a); };
  const bool v3 = __builtin_cpu_supports("x86-64-v3"), v4 = __builtin_cpu_supports("x86-64-v4");
  for (int64_t n : {int64_t(kGradNormBlock), int64_t(4 * 16 * 100 + 37)}) {
    SCOPED_TRACE("n " + std::to_string(n));
    AdamWState<float> f(n, 7);
    AdamWState<double> d(n, 8);
    const double baseF = test::sumSquares_baseline(f.g.data(), n), baseD = test::sumSquares_baseline(d.g.data(), n);
    EXPECT_TRUE(same(gradBlockSumSquares(f.g.data(), DType::F32, n), baseF)) << "f32, this CPU's clone";
    EXPECT_TRUE(same(gradBlockSumSquares(d.g.data(), DType::F64, n), baseD)) << "f64, this CPU's clone";
    if (v3) EXPECT_TRUE(same(test::sumSquares_v3(f.g.data(), n), baseF)) << "f32, x86-64-v3";
    if (v3) EXPECT_TRUE(same(test::sumSquares_v3(d.g.data(), n), baseD)) << "f64, x86-64-v3";
    if (v4) EXPECT_TRUE(same(test::sumSquares_v4(f.g.data(), n), baseF)) << "f32, x86-64-v4";
    if (v4) EXPECT_TRUE(same(test::sumSquares_v4(d.g.data(), n), baseD)) << "f64, x86-64-v4";
  }
  if (!v3) GTEST_SKIP() << "this CPU has no FMA to compare with";
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(1.0, 2.0);
  int fusedDiffers = 0;
  std::vector<double> g(128, 0.0);  // 4 streams of 32: lane 0 of stream 0 holds elements 0 and 16
  for (int k = 0; k < 100; ++k) {
    g[0] = u(rng), g[16] = u(rng);
    const double base = test::sumSquares_baseline(g.data(), 128);
    EXPECT_TRUE(same(gradBlockSumSquares(g.data(), DType::F64, 128), base)) << "pair " << k << ", this CPU's clone";
    EXPECT_TRUE(same(test::sumSquares_v3(g.data(), 128), base)) << "pair " << k << ", x86-64-v3";
    if (v4) EXPECT_TRUE(same(test::sumSquares_v4(g.data(), 128), base)) << "pair " << k << ", x86-64-v4";
    fusedDiffers += !same(test::sumSquares_v3Fused(g.data(), 128), base);
  }
  EXPECT_GT(fusedDiffers, 0) << "contracted into FMAs, no pair rounded otherwise: the data cannot tell";
}
#endif  // LMRT_ADAMW_TARGETS_BUILT
