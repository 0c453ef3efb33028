/* Implements: row-major GEMM overloads on CBLAS for f32 (sgemm) and f64 (dgemm),
   C = alpha op(A) op(B) + beta C, so templated kernels (matmul, the attention tiles)
   call one name for both precisions, and the switch of OpenBLAS to one thread.
   All runtime parallelism belongs to OpenMP: kernels call BLAS from inside their
   parallel loops, and OpenBLAS's own pool spin-waiting beside OpenMP's would fight
   over the cores. */
#pragma once
#include <cblas.h>
#include <cstdint>

namespace lmrt::kernels::detail {

/* Called by every kernel before its first GEMM. */
inline void singleThreadedBlas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                 const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

}  // namespace lmrt::kernels::detail
