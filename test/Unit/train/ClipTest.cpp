/* Tests the global gradient norm (across parameters and precisions) and
   clipping by max_norm / (norm + 1e-6). */
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/cpu/grad_clip.h"

using namespace lmrt;

TEST(Clip, GlobalNormSpansAllParameters) {
  float a[2] = {3, 0};
  double b[1] = {4};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 2, false}, {DType::F64, nullptr, b, 1, true}};
  EXPECT_DOUBLE_EQ(globalGradNorm(v), 5.0);
}

TEST(Clip, ScalesOnlyAboveTheLimit) {
  float a[2] = {3, 0};
  double b[1] = {4};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 2, false}, {DType::F64, nullptr, b, 1, true}};
  EXPECT_EQ(clipGradients(v, 5.0, 10.0), 1.0);
  EXPECT_EQ(a[0], 3.0f);
  EXPECT_EQ(clipGradients(v, 5.0, 0.0), 1.0);  // 0 = off
  double c = clipGradients(v, 5.0, 1.0);
  EXPECT_DOUBLE_EQ(c, 1.0 / (5.0 + 1e-6));
  EXPECT_NEAR(globalGradNorm(v), 1.0, 1e-6);
  EXPECT_FLOAT_EQ(a[0], float(3.0 * c));
  EXPECT_DOUBLE_EQ(b[0], 4.0 * c);
}

TEST(Clip, NormIsAccumulatedInDouble) {
  // 2^24 + 1 terms of 1: a float accumulator would stop at 2^24.
  const int64_t n = (1 << 24) + 4;
  std::vector<float> g(n, 1.0f);
  std::vector<ParamView> v = {{DType::F32, nullptr, g.data(), n, false}};
  EXPECT_DOUBLE_EQ(globalGradNorm(v), std::sqrt(double(n)));
}

TEST(Clip, NonFiniteNormIsAnError) {
  float a[1] = {1};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 1, false}};
  EXPECT_THROW(clipGradients(v, NAN, 1.0), Error);
  EXPECT_THROW(clipGradients(v, INFINITY, 1.0), Error);
}

TEST(Clip, ScaleWithoutTouchingGradients) {
  EXPECT_EQ(clipScale(5.0, 10.0), 1.0);
  EXPECT_EQ(clipScale(5.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(clipScale(5.0, 1.0), 1.0 / (5.0 + 1e-6));
  EXPECT_THROW(clipScale(NAN, 1.0), Error);
}

/* The norm sums fixed blocks in block order: any thread count gives the same bits. */
TEST(Clip, NormHasTheSameBitsForAnyThreadCount) {
  const int64_t n = 1000003;
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = std::sin(0.001f * float(i)) * (1.0f + float(i % 7));
  std::vector<ParamView> v = {{DType::F32, nullptr, g.data(), n, false}};
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double one = globalGradNorm(v);
  omp_set_num_threads(3);
  double three = globalGradNorm(v);
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(&one, &three, sizeof one), 0);
  double ref = 0;
  for (float x : g) ref += double(x) * double(x);
  EXPECT_NEAR(one, std::sqrt(ref), 1e-9 * std::sqrt(ref));
}
