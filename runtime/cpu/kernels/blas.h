/* Implements: row-major GEMM overloads, C = alpha op(A) op(B) + beta C, so templated
   kernels (matmul, the attention tiles) call one name for every precision: f32 on
   oneDNN's JIT sgemm (5-35 % faster than OpenBLAS's on the GPT shapes, measured one
   thread at a time), f64 (gradient checks) on OpenBLAS's dgemm, bf16 x bf16 -> f32
   (-lm-mixed-precision's GEMMs) on oneDNN's matmul primitive (gemm_bf16.cpp), f16 x
   f16 -> f32 widened onto sgemm (gemm_widened.cpp); and
   the switch of OpenBLAS to one thread.
   All runtime parallelism belongs to OpenMP: kernels call BLAS from inside their
   parallel loops, and OpenBLAS's own pool spin-waiting beside OpenMP's would fight
   over the cores. oneDNN runs on the same OpenMP runtime and stays on the calling
   thread inside a parallel region; outside one it would start its own team, and a
   GEMM split over threads by oneDNN may sum in another order, so the bits of a
   result would depend on the thread count: it is held to one thread there too. */
#pragma once
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>

#include "base/tensor.h"
#include "contract/scalar_math.h"

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
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1) omp_set_num_threads(1);
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (threads > 1) omp_set_num_threads(threads);
  if (st != dnnl_success)
    fail("oneDNN sgemm failed (status %d) on [%lld, %lld] x [%lld, %lld]", (int)st, (long long)m, (long long)k,
         (long long)k, (long long)n);
}

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                 const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* bf16 operands, f32 products and accumulation: oneDNN's matmul primitive, which
   uses AVX512_BF16 where the CPU has it (1.8-1.9x its sgemm, one thread, on the GPT
   shapes) and AVX-512 conversions on other AVX-512 CPUs; the result is the same up
   to the order of the f32 sums. One primitive per shape and thread, kept
   (gemm_bf16.cpp); held to one thread outside a parallel region, as gemm above.
   Where oneDNN has no bf16 matmul (before AVX-512), gemmWidened below, with a
   note on stderr once. beta must be 0 or 1. */
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::bf16 *a, int64_t lda,
          const lmc::bf16 *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* The rows or columns of each block a bf16 GEMM's output is cut into along its longer
   side (lm.matmul, GEMM epilogues, the fused loss). oneDNN's bf16 matmul sums in an
   order that depends on the block's shape, so the blocks are fixed by the shape alone,
   never by the thread count: the bits of a result are the same with any number of
   threads. Four blocks per started 1024 of the side (an even share for 2 or 4 threads
   where the 16-rounding leaves the count whole), of 64 to 256 rows or columns, a
   multiple of 16: each block packs the whole operand it does not
   split, and the primitive runs larger blocks faster (64-row blocks, an earlier
   rule, took 1.2-2x as long as 128-256 on bench_tiny's [1024, 256] x [256, 768]
   and its dX and dW forms, 2 threads). The rule before this one (a quarter of the
   side, at most 256) cut GPT-2's qkv projection, 2304 wide, into 9 blocks: 5 on
   one thread, 4 on the other; now 12 of 192. */
inline int64_t bf16GemmBlock(int64_t side) {
  const int64_t blocks = (side + 1023) / 1024 * 4;  // a multiple of 4, each at most 256 wide
  const int64_t per = ((side + blocks - 1) / blocks + 15) / 16 * 16;
  return std::min(side, std::clamp<int64_t>(per, 64, 256));
}

/* Whether a bf16 GEMM's output [m, n] is cut along its rows (else its columns). The
   longer side, but a weight gradient (op(A) transposed: A is [k, m], k the tokens)
   is cut into row blocks unless it is more than four times as wide as it is tall:
   each row block's A is then a dense copy (gemm, gemm_bf16.cpp), and oneDNN runs
   dense row blocks on its brgemm kernels (AMX tiles where the CPU has them) where
   column blocks of a strided transposed A ran on its older gemm:jit kernel at half
   the rate (GPT-2 small b4 x t64, bf16: the weight gradients 131-166 ms a step
   against 81-87, 2026-11-28, same bits). */
inline bool bf16RowBlocks(bool ta, int64_t m, int64_t n) { return ta ? n <= 4 * m : n <= m; }

/* bf16 operands widened to f32 (exact) and run on the f32 sgemm above
   (gemm_widened.cpp): the bf16 GEMM's result where oneDNN cannot run it. */
void gemmWidened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::bf16 *a, int64_t lda,
                 const lmc::bf16 *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* f16 operands, f32 products and accumulation: widened to f32 (exact) and run on
   the f32 sgemm above (gemm_widened.cpp): correct fp16 results, at f32 speed. */
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::f16 *a, int64_t lda,
          const lmc::f16 *b, int64_t ldb, float beta, float *c, int64_t ldc);

}  // namespace lmrt::kernels::detail
