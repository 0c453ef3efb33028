/* Tests that layer norm's four-rows-at-a-time statistics (rowStats4, gradSums4 in
   runtime/cpu/kernels/layer_norm.cpp) give each row the bits it gets alone: the forward
   and dx of rows in full groups of four against the same rows run one by one (a [1, d]
   call takes the one-row path), for widths that are and are not multiples of the
   vector width. */
#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

Buf rowOf(const Buf &x, int64_t r, int64_t d) {
  Buf b(x.type.dtype, {1, d});
  std::memcpy(b.data(), (const char *)x.data() + (size_t)(r * d) * dtypeSize(x.type.dtype),
              (size_t)d * dtypeSize(x.type.dtype));
  return b;
}

bool sameRow(const Buf &all, int64_t r, const Buf &one, int64_t d) {
  const size_t e = dtypeSize(all.type.dtype);
  return std::memcmp((const char *)all.data() + (size_t)(r * d) * e, one.data(), (size_t)d * e) == 0;
}

TEST(LayerNormRows, GroupsOfFourHaveEachRowsBits) {
  for (DType dt : {DType::F32, DType::F64})
    for (int64_t d : {33, 100, 256, 768}) {
      const int64_t rows = 11;  // two groups of four and three single rows
      Buf x = randn({rows, d}, dt, 2.0), g = randn({d}, dt), b = randn({d}, dt), dy = randn({rows, d}, dt);
      auto y = runKernel("layer_norm", {x, g, b}, {x.type});
      auto grad = runKernel("layer_norm_grad", {x, g, dy}, {x.type, g.type, g.type});
      for (int64_t r = 0; r < rows; ++r) {
        Buf xr = rowOf(x, r, d), dyr = rowOf(dy, r, d);
        auto y1 = runKernel("layer_norm", {xr, g, b}, {xr.type});
        auto g1 = runKernel("layer_norm_grad", {xr, g, dyr}, {xr.type, g.type, g.type});
        EXPECT_TRUE(sameRow(y[0], r, y1[0], d)) << dtypeName(dt) << " d " << d << " row " << r << ": y";
        EXPECT_TRUE(sameRow(grad[0], r, g1[0], d)) << dtypeName(dt) << " d " << d << " row " << r << ": dx";
      }
    }
}

}  // namespace
}  // namespace lmrt::kernels::test
