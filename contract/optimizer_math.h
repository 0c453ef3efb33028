/* Implements: what every optimizer's update shares on the host and on CUDA devices:
   round-to-nearest operations that are never fused into an FMA, and the gradient
   element as every optimizer reads it (clipping's factor, then clip_grad_value), so
   that both backends, and every CPU the CPU loops run on, give the same bits from the
   same inputs (docs/runtime.md, "Optimizers": resuming a run on another machine
   continues it bit for bit).

   No fused multiply-add: each product is rounded before it is added.
   - On a CUDA device each rn:: operation is an explicit round-to-nearest intrinsic
     (__fmul_rn, __fadd_rn, ...), which nvcc never contracts into an FMA (it contracts
     plain `a * b + c` by default, --fmad=true). Kernels written with plain operators
     instead (runtime/cuda/optimizer_kernels.cuh) are compiled with --fmad=false.
   - On the host they are the plain operators, and the file that includes this header
     must be compiled with -ffp-contract=off (CMake's LMRT_EXACT_FP_FLAGS): GCC's default
     for GNU C++ is -ffp-contract=fast, which fuses `a * b + c` wherever the target has an
     FMA, so the AVX2 and AVX-512 clones of a loop (LMRT_SIMD_CLONES) and its scalar tail
     would round otherwise than the baseline x86-64 clone, which has no FMA, and
     otherwise than each other. (GCC has no per-expression way to forbid contraction:
     neither `#pragma STDC FP_CONTRACT` nor __builtin_assoc_barrier stops it.)
   Division and square root are correctly rounded on both (IEEE; nvcc's defaults
   -prec-div=true -prec-sqrt=true, never --use_fast_math for these files). */
#ifndef LMC_OPTIMIZER_MATH_H
#define LMC_OPTIMIZER_MATH_H

#include "contract/scalar_math.h"

namespace lmc {
namespace rn {  // round-to-nearest operations that are never fused

#if defined(__CUDA_ARCH__)
LMC_HD float add(float a, float b) { return __fadd_rn(a, b); }
LMC_HD float sub(float a, float b) { return __fsub_rn(a, b); }
LMC_HD float mul(float a, float b) { return __fmul_rn(a, b); }
LMC_HD float div(float a, float b) { return __fdiv_rn(a, b); }
LMC_HD float sqrt(float a) { return __fsqrt_rn(a); }
LMC_HD double add(double a, double b) { return __dadd_rn(a, b); }
LMC_HD double sub(double a, double b) { return __dsub_rn(a, b); }
LMC_HD double mul(double a, double b) { return __dmul_rn(a, b); }
LMC_HD double div(double a, double b) { return __ddiv_rn(a, b); }
LMC_HD double sqrt(double a) { return __dsqrt_rn(a); }
#else
template <typename T> LMC_HD T add(T a, T b) { return a + b; }
template <typename T> LMC_HD T sub(T a, T b) { return a - b; }
template <typename T> LMC_HD T mul(T a, T b) { return a * b; }
template <typename T> LMC_HD T div(T a, T b) { return a / b; }
LMC_HD float sqrt(float a) { return sqrtf(a); }
LMC_HD double sqrt(double a) { return ::sqrt(a); }
#endif

}  // namespace rn

/* How an update reads its gradients: clipping's factor (grad_clip.h's clipScale; 1
   when none) and clip_grad_value's bound (0: off), rounded to the element type T. */
template <typename T> struct GradRead {
  T scale, clip;
  bool scales, clips;
};

template <typename T> LMC_HD GradRead<T> gradRead(double gradScale, double clipValue) {
  return GradRead<T>{T(gradScale), T(clipValue), gradScale != 1.0, clipValue > 0};
}

/* The gradient element g as every optimizer reads it: times clipping's factor, then
   clamped to [-clip, clip]. A NaN stays NaN (every comparison with it is false), so a
   diverged step shows in the parameters; fminf/fmaxf, which CUDA's min and max of floats
   are, would return the bound instead and training would go on. */
template <typename T> LMC_HD T readGrad(T g, const GradRead<T> &r) {
  if (r.scales) g = rn::mul(g, r.scale);
  if (r.clips) g = g < -r.clip ? -r.clip : r.clip < g ? r.clip : g;
  return g;
}

}  // namespace lmc

#endif  // LMC_OPTIMIZER_MATH_H
