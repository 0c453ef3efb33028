/* Implements: the 16-bit GEMMs of blas.h that run on the f32 sgemm. The operands
   are widened to f32, which is exact, and multiplied by sgemm: a product of two
   fp16 (11-bit significands) or bf16 (8-bit) values is exact in f32 (24 bits), so
   the result is that of a 16-bit GEMM accumulating in f32, in sgemm's summation
   order, the same with any thread count.
   - f16 always: this CPU family has no fp16 arithmetic (AVX512_FP16 is Sapphire
     Rapids'), so fp16 on the CPU is for correctness (the numbers a GPU run in fp16
     sees), not speed;
   - bf16 where oneDNN has no bf16 matmul (a CPU before AVX-512, or oneDNN held
     below it by ONEDNN_MAX_CPU_ISA): correct results at f32 speed. */
#include <vector>

#include "runtime/cpu/kernels/blas.h"

namespace lmrt::kernels::detail {
namespace {

/* The stored [rows, cols] block at `src` (leading dimension ld), widened into
   `dst` densely (leading dimension cols). */
template <class T>
void widen(const T *src, int64_t rows, int64_t cols, int64_t ld, std::vector<float> &dst) {
  dst.resize((size_t)(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[(size_t)(r * cols + c)] = lmc::toFloat(src[r * ld + c]);
}

template <class T>
void gemmOnSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const T *a, int64_t lda,
                 const T *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  thread_local std::vector<float> wa, wb;
  // op(A) is [m, k]: stored [m, k], or [k, m] when transposed; likewise op(B).
  const int64_t aRows = ta ? k : m, aCols = ta ? m : k, bRows = tb ? n : k, bCols = tb ? k : n;
  widen(a, aRows, aCols, lda, wa);
  widen(b, bRows, bCols, ldb, wb);
  gemm(ta, tb, m, n, k, alpha, wa.data(), aCols, wb.data(), bCols, beta, c, ldc);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::f16 *a, int64_t lda,
          const lmc::f16 *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  gemmOnSgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemmWidened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::bf16 *a, int64_t lda,
                 const lmc::bf16 *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  gemmOnSgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace lmrt::kernels::detail
