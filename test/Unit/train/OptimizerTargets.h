/* Implements: contract/adamw_math.h's AdamW element in a plain loop, and the gradient
   norm's block sum (runtime/cpu/block_sum_squares.h), compiled once per x86-64 level by
   CMakeLists.txt (OptimizerTargets.cpp, one object library a level), for AdamWTest.cpp's
   check that the bits do not depend on the CPU:
     v4        -march=x86-64-v4 (AVX-512, FMA)   with LMRT_EXACT_FP_FLAGS
     v3        -march=x86-64-v3 (AVX2, FMA)      with LMRT_EXACT_FP_FLAGS
     baseline  -march=x86-64 (SSE2, no FMA)      with LMRT_EXACT_FP_FLAGS
     v3Fused   -march=x86-64-v3 -ffp-contract=fast: what GCC makes of the same source
               without the flags (the control: it must differ, or the data cannot tell)
   Each is the clone GCC makes of runtime/cpu/adamw.cpp's loop (grad_clip.cpp's block sum)
   for that level, with a vector body and a scalar tail. The scalars are formed in each
   too (adamwScalars). */
#pragma once
#include <cstdint>

namespace lmrt::test {

/* The hyperparameters of one update, in double (adamwScalars' arguments). */
struct AdamWArgs {
  double lr, decay, beta1, beta2, eps, bc1, bc2, gradScale, clipValue;
};

#define LMRT_ADAMW_TARGETS(X) X(v4) X(v3) X(baseline) X(v3Fused)
#define LMRT_ADAMW_DECLARE(level)                                                                      \
  void adamwLoop_##level(float *p, const float *g, float *m, float *v, int64_t n, const AdamWArgs &a);   \
  void adamwLoop_##level(double *p, const double *g, double *m, double *v, int64_t n, const AdamWArgs &a); \
  double sumSquares_##level(const float *g, int64_t n);                                                  \
  double sumSquares_##level(const double *g, int64_t n);
LMRT_ADAMW_TARGETS(LMRT_ADAMW_DECLARE)
#undef LMRT_ADAMW_DECLARE

}  // namespace lmrt::test
