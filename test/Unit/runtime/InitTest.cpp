/* Tests parameter initialisation: deterministic per (seed, name), independent of
   the other parameters, and distributed as asked. */
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/exec/init.h"
#include "runtime/exec/session.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

TEST(Init, SameSeedSameValuesOtherSeedOtherValues) {
  auto a = Session::fromPlan(test::tinyPlan(), "a"), b = Session::fromPlan(test::tinyPlan(), "b");
  a->initParams(7);
  b->initParams(7);
  EXPECT_EQ(a->param("wte").value, b->param("wte").value);
  EXPECT_EQ(a->param("w").value, b->param("w").value);
  b->initParams(8);
  EXPECT_NE(a->param("wte").value, b->param("wte").value);
  // Two parameters of one seed draw from different streams.
  EXPECT_NE(a->param("wte").valueRef().as<double>()[0] / 0.02, a->param("w").valueRef().as<double>()[0] / 0.5);
}

TEST(Init, ValuesDependOnlyOnSeedNameAndIndex) {
  // The session's "w" equals a standalone fill keyed by the same (seed, name):
  // no other parameter, and no visiting order, enters the values.
  auto s = Session::fromPlan(test::tinyPlan(), "a");
  s->initParams(11);
  ParamState &w = s->param("w");
  std::vector<double> alone(w.type.numel());
  plan::Init init;
  init.set_kind(plan::Init::NORMAL);
  init.set_std(0.5);
  fillInit(TensorRef{alone.data(), w.type}, init, 11, "w");
  EXPECT_EQ(0, std::memcmp(alone.data(), w.value.data(), w.value.size()));
  // An f32 plan holds the same draws rounded to float.
  auto f = Session::fromPlan(test::tinyPlan(plan::F32), "f");
  f->initParams(11);
  const float *wf = f->param("w").valueRef().as<float>();
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(wf[i], (float)alone[i]);
}

TEST(Init, NormalDistribution) {
  const int64_t n = 200000;
  std::vector<double> x(n);
  fillNormal(TensorRef{x.data(), TensorType{DType::F64, {n}}}, 1.5, 0.02, 5, "blocks.0.mlp.w1");
  double mean = 0, var = 0, within1 = 0;
  for (double v : x) mean += v / n;
  for (double v : x) {
    var += (v - mean) * (v - mean) / n;
    within1 += std::fabs(v - 1.5) < 0.02;
    ASSERT_TRUE(std::isfinite(v));
  }
  EXPECT_NEAR(mean, 1.5, 0.02 * 5 / std::sqrt((double)n));
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.02 * 0.01);
  EXPECT_NEAR(within1 / n, 0.6827, 0.005);
  // Neighbouring elements are uncorrelated.
  double cov = 0;
  for (int64_t i = 0; i + 1 < n; ++i) cov += (x[i] - mean) * (x[i + 1] - mean) / (n - 1);
  EXPECT_LT(std::fabs(cov / var), 0.01);
}

TEST(Init, UniformZerosOnes) {
  const int64_t n = 100000;
  std::vector<float> x(n);
  TensorRef r{x.data(), TensorType{DType::F32, {n}}};
  plan::Init init;
  init.set_kind(plan::Init::UNIFORM);
  init.set_low(-2);
  init.set_high(3);
  fillInit(r, init, 1, "u");
  double mean = 0, lo = 1e9, hi = -1e9;
  for (float v : x) mean += v / n, lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  EXPECT_GE(lo, -2);
  EXPECT_LE(hi, 3);
  EXPECT_LT(lo, -1.99);
  EXPECT_GT(hi, 2.99);
  EXPECT_NEAR(mean, 0.5, 0.03);
  init.set_kind(plan::Init::ONES);
  fillInit(r, init, 1, "u");
  for (float v : x) ASSERT_EQ(v, 1.0f);
  init.set_kind(plan::Init::ZEROS);
  fillInit(r, init, 1, "u");
  for (float v : x) ASSERT_EQ(v, 0.0f);
}

// blocks(0, 1, 0, 0) on [2, 8]: each row's last dimension in four parts of
// two, the second part 1 (an LSTM bias's forget gate), row after row.
TEST(Init, BlocksSplitTheLastDimension) {
  std::vector<double> x(16, -7.0);
  TensorRef r{x.data(), TensorType{DType::F64, {2, 8}}};
  plan::Init init;
  init.set_kind(plan::Init::BLOCKS);
  for (double v : {0.0, 1.0, 0.0, -2.5}) init.add_blocks(v);
  fillInit(r, init, 1, "b");
  const double want[8] = {0, 0, 1, 1, 0, 0, -2.5, -2.5};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], want[i % 8]) << "element " << i;
  // Parts that do not divide the last dimension are refused, not truncated.
  init.add_blocks(3.0);
  EXPECT_THROW(fillInit(r, init, 1, "b"), Error);
}

TEST(Init, UniformNeverHitsTheEnds) {
  for (uint64_t i = 0; i < 100000; ++i) {
    double u = uniformAt(streamKey(3, "x"), i);
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Init, IntegerTensorIsAnError) {
  int32_t x[4];
  plan::Init init;
  EXPECT_THROW(fillInit(TensorRef{x, TensorType{DType::I32, {4}}}, init, 1, "ids"), Error);
}

}  // namespace
}  // namespace lmrt
