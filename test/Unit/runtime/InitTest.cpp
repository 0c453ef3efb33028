/* Tests parameter initialisation: deterministic per (seed, name), independent of
   the other parameters, and distributed as asked. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

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

// The largest |(A^T A - s I)_ij| of the row-major [r, c] matrix `a` (A^T A over
// its columns), or of A A^T when `rowsOrthogonal`.
double gramError(const std::vector<double> &a, int64_t r, int64_t c, int64_t ld, int64_t col0, double s,
                 bool rowsOrthogonal) {
  double worst = 0;
  int64_t n = rowsOrthogonal ? r : c, k = rowsOrthogonal ? c : r;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t t = 0; t < k; ++t)
        dot += rowsOrthogonal ? a[i * ld + col0 + t] * a[j * ld + col0 + t] : a[t * ld + col0 + i] * a[t * ld + col0 + j];
      worst = std::max(worst, std::fabs(dot - (i == j ? s : 0.0)));
    }
  return worst;
}

plan::Init orthogonalInit(double gain, int64_t blocks) {
  plan::Init init;
  init.set_kind(plan::Init::ORTHOGONAL);
  init.set_gain(gain);
  init.set_orthogonal_blocks(blocks);
  return init;
}

// orthogonal(gain) as torch.nn.init.orthogonal_: a tall matrix has orthonormal
// columns (Q^T Q = I), a wide one orthonormal rows, both times the gain; to 1e-5
// in f32 and 1e-12 in f64.
TEST(Init, OrthogonalIsOrthogonal) {
  std::vector<double> x(40 * 12);
  fillInit(TensorRef{x.data(), TensorType{DType::F64, {40, 12}}}, orthogonalInit(1.0, 1), 3, "w");
  EXPECT_LT(gramError(x, 40, 12, 12, 0, 1.0, false), 1e-12);
  std::vector<double> wide(6 * 50);
  fillInit(TensorRef{wide.data(), TensorType{DType::F64, {6, 50}}}, orthogonalInit(2.0, 1), 3, "w");
  EXPECT_LT(gramError(wide, 6, 50, 50, 0, 4.0, true), 1e-12);
  std::vector<float> f(64 * 64);
  fillInit(TensorRef{f.data(), TensorType{DType::F32, {64, 64}}}, orthogonalInit(1.0, 1), 3, "w");
  std::vector<double> fd(f.begin(), f.end());
  EXPECT_LT(gramError(fd, 64, 64, 64, 0, 1.0, false), 1e-5);
  // A rank-3 parameter is the matrix [numel / last, last].
  std::vector<double> r3(2 * 10 * 8);
  fillInit(TensorRef{r3.data(), TensorType{DType::F64, {2, 10, 8}}}, orthogonalInit(1.0, 1), 3, "w");
  EXPECT_LT(gramError(r3, 20, 8, 8, 0, 1.0, false), 1e-12);
}

// blocks = 4 (AllenNLP's block_orthogonal over an LSTM's four gates): each
// block of the last dimension orthogonal on its own, the blocks different.
TEST(Init, OrthogonalBlocks) {
  std::vector<double> x(16 * 48);
  fillInit(TensorRef{x.data(), TensorType{DType::F64, {16, 48}}}, orthogonalInit(1.0, 4), 5, "lstm");
  for (int b = 0; b < 4; ++b) EXPECT_LT(gramError(x, 16, 12, 48, 12 * b, 1.0, false), 1e-12) << "block " << b;
  double diff = 0;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 12; ++c) diff = std::max(diff, std::fabs(x[r * 48 + c] - x[r * 48 + 12 + c]));
  EXPECT_GT(diff, 0.1);
  // Blocks that do not divide the last dimension, or a vector, are refused.
  EXPECT_THROW(fillInit(TensorRef{x.data(), TensorType{DType::F64, {16, 48}}}, orthogonalInit(1.0, 5), 5, "lstm"),
               Error);
  EXPECT_THROW(fillInit(TensorRef{x.data(), TensorType{DType::F64, {48}}}, orthogonalInit(1.0, 1), 5, "lstm"), Error);
}

// Deterministic per (seed, name), like every initialiser: the same bytes again,
// others for another seed or name; not the identity or a permutation (the
// entries of a Haar-random 32 x 32 orthogonal matrix are spread, |q| < 1).
TEST(Init, OrthogonalIsDeterministic) {
  auto draw = [](uint64_t seed, const char *name) {
    std::vector<float> v(32 * 32);
    fillInit(TensorRef{v.data(), TensorType{DType::F32, {32, 32}}}, orthogonalInit(1.0, 1), seed, name);
    return v;
  };
  std::vector<float> a = draw(9, "w");
  EXPECT_EQ(a, draw(9, "w"));
  EXPECT_NE(a, draw(10, "w"));
  EXPECT_NE(a, draw(9, "v"));
  float biggest = 0;
  int zeros = 0;
  for (float v : a) {
    biggest = std::max(biggest, std::fabs(v));
    zeros += v == 0.0f;
  }
  EXPECT_LT(biggest, 0.9f);
  EXPECT_EQ(zeros, 0);
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
