/* Implements: the f16 x f16 -> f32 GEMM of blas.h. This CPU family has no fp16
   arithmetic (AVX512_FP16 is Sapphire Rapids'), so the operands are widened to
   f32, which is exact, and multiplied by the f32 sgemm: a product of two fp16
   values (11-bit significands) is exact in f32 (24 bits), so the result is that
   of an fp16 GEMM accumulating in f32, in sgemm's summation order, the same
   with any thread count. fp16 on the CPU is for correctness (the numbers a GPU
   run in fp16 sees), not speed: bf16 is the fast CPU precision. */
#include <vector>

#include "runtime/cpu/kernels/blas.h"

namespace lmrt::kernels::detail {
namespace {

/* The stored [rows, cols] block at `src` (leading dimension ld), widened into
   `dst` densely (leading dimension cols). */
void widen(const lmc::f16 *src, int64_t rows, int64_t cols, int64_t ld, std::vector<float> &dst) {
  dst.resize((size_t)(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[(size_t)(r * cols + c)] = lmc::toFloat(src[r * ld + c]);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::f16 *a, int64_t lda,
          const lmc::f16 *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  thread_local std::vector<float> wa, wb;
  // op(A) is [m, k]: stored [m, k], or [k, m] when transposed; likewise op(B).
  const int64_t aRows = ta ? k : m, aCols = ta ? m : k, bRows = tb ? n : k, bCols = tb ? k : n;
  widen(a, aRows, aCols, lda, wa);
  widen(b, bRows, bCols, ldb, wb);
  gemm(ta, tb, m, n, k, alpha, wa.data(), aCols, wb.data(), bCols, beta, c, ldc);
}

}  // namespace lmrt::kernels::detail
