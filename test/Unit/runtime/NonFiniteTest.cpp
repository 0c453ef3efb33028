/* Tests firstNonFinite, the backends' NaN/Inf report: every float storage type a
   plan's buffers use (mixed-precision plans keep activations in bf16 and f16), the
   first offending element and its value, and integer tensors having none. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/tensor.h"
#include "runtime/exec/bound_plan.h"

namespace lmrt {
namespace {

template <typename T> TensorRef view(std::vector<T> &v, DType dtype) {
  return TensorRef{v.data(), TensorType{dtype, {(int64_t)v.size()}}};
}

TEST(FirstNonFinite, F32AndF64) {
  std::vector<float> f{1.f, -2.f, std::numeric_limits<float>::infinity(), NAN};
  double value = 0;
  EXPECT_EQ(firstNonFinite(view(f, DType::F32), value), 2);
  EXPECT_TRUE(std::isinf(value) && value > 0);
  std::vector<double> d{0.5, NAN};
  EXPECT_EQ(firstNonFinite(view(d, DType::F64), value), 1);
  EXPECT_TRUE(std::isnan(value));
  std::vector<double> fine{0.5, -1e300};
  EXPECT_EQ(firstNonFinite(view(fine, DType::F64), value), -1);
}

TEST(FirstNonFinite, Bf16) {
  // 1.0, -2.0, the largest finite bf16 (0x7f7f), -inf (0xff80), NaN (0x7fc0).
  std::vector<uint16_t> b{0x3f80, 0xc000, 0x7f7f, 0xff80, 0x7fc0};
  double value = 0;
  EXPECT_EQ(firstNonFinite(view(b, DType::BF16), value), 3);
  EXPECT_TRUE(std::isinf(value) && value < 0);
  b[3] = 0x3f80;
  EXPECT_EQ(firstNonFinite(view(b, DType::BF16), value), 4);
  EXPECT_TRUE(std::isnan(value));
  b[4] = 0x0001;  // the smallest subnormal: finite
  EXPECT_EQ(firstNonFinite(view(b, DType::BF16), value), -1);
}

TEST(FirstNonFinite, F16) {
  // 1.0, 65504 (the largest finite f16, 0x7bff), a subnormal, +inf (0x7c00), NaN (0x7e00).
  std::vector<uint16_t> h{0x3c00, 0x7bff, 0x0001, 0x7c00, 0x7e00};
  double value = 0;
  EXPECT_EQ(firstNonFinite(view(h, DType::F16), value), 3);
  EXPECT_TRUE(std::isinf(value) && value > 0);
  h[3] = 0xfc00;  // -inf
  EXPECT_EQ(firstNonFinite(view(h, DType::F16), value), 3);
  EXPECT_TRUE(std::isinf(value) && value < 0);
  h[3] = 0;
  EXPECT_EQ(firstNonFinite(view(h, DType::F16), value), 4);
  EXPECT_TRUE(std::isnan(value));
}

TEST(FirstNonFinite, IntegersHaveNone) {
  std::vector<int32_t> i{-1, 0x7f800000};  // an f32 inf's bits, as an integer
  double value = 0;
  EXPECT_EQ(firstNonFinite(view(i, DType::I32), value), -1);
}

}  // namespace
}  // namespace lmrt
