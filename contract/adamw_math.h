/* Implements: one AdamW update of one element (the formula of runtime/cpu/adamw.h), the
   body of the CPU's AdamW loop and of the CUDA AdamW kernel alike, with every rounding
   written out, so that both backends, and every CPU the CPU loop runs on, give the same
   bits from the same inputs (docs/runtime.md, "Optimizers": resuming a run on another
   machine continues it bit for bit).

   No fused multiply-add anywhere: each product is rounded before it is added.
   - On a CUDA device each operation is an explicit round-to-nearest intrinsic
     (__fmul_rn, __fadd_rn, ...), which nvcc never contracts into an FMA (it contracts
     plain `a * b + c` by default, --fmad=true).
   - On the host they are the plain operators, and the file that includes this header
     must be compiled with -ffp-contract=off (CMake's LMRT_EXACT_FP_FLAGS): GCC's default
     for GNU C++ is -ffp-contract=fast, which fuses `a * b + c` wherever the target has an
     FMA, so the AVX2 and AVX-512 clones of a loop (LMRT_SIMD_CLONES) and its scalar tail
     would round otherwise than the baseline x86-64 clone, which has no FMA, and
     otherwise than each other. (GCC has no per-expression way to forbid contraction:
     neither `#pragma STDC FP_CONTRACT` nor __builtin_assoc_barrier stops it.)
   Division and square root are correctly rounded on both (IEEE; nvcc's defaults
   -prec-div=true -prec-sqrt=true, never --use_fast_math for these files).

   The scalars are formed in double from the settings and rounded once to the element
   type T (f32 or f64), as PyTorch does with Python-float hyperparameters. */
#ifndef LMC_ADAMW_MATH_H
#define LMC_ADAMW_MATH_H

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

/* The per-parameter scalars of one update. */
template <typename T> struct AdamWScalars {
  T keep;           // 1 - lr * weight_decay
  T w1, b2, w2;     // 1 - beta1, beta2, 1 - beta2
  T stepSize;       // lr / (1 - beta1^t)
  T bc2Sqrt;        // sqrt(1 - beta2^t)
  T eps;
  T scale;          // clipping's factor (grad_clip.h's clipScale)
  T clipValue;      // clip_grad_value's bound
  bool decays, scales, clips;
};

/* lr: this parameter's rate (its group's multiple applied); decay: the weight decay, 0
   where it does not apply; bc1, bc2: 1 - beta1^t, 1 - beta2^t; gradScale: 1 when no
   clipping; clipValue: 0 when off. */
template <typename T>
LMC_HD AdamWScalars<T> adamwScalars(double lr, double decay, double beta1, double beta2, double eps, double bc1,
                                    double bc2, double gradScale, double clipValue) {
  AdamWScalars<T> s;
  s.keep = T(rn::sub(1.0, rn::mul(lr, decay)));
  s.w1 = T(rn::sub(1.0, beta1));
  s.b2 = T(beta2);
  s.w2 = T(rn::sub(1.0, beta2));
  s.stepSize = T(rn::div(lr, bc1));
  s.bc2Sqrt = T(rn::sqrt(bc2));
  s.eps = T(eps);
  s.scale = T(gradScale);
  s.clipValue = T(clipValue);
  s.decays = decay != 0.0;
  s.scales = gradScale != 1.0;
  s.clips = clipValue > 0;
  return s;
}

/* One element: parameter p, gradient g, moments m and v (updated in place); returns the
   new parameter. The gradient is multiplied by clipping's factor, then clamped by value
   (a NaN stays NaN, so a diverged step shows). */
template <typename T> LMC_HD T adamwElement(T p, T g, T &m, T &v, const AdamWScalars<T> &s) {
  if (s.decays) p = rn::mul(p, s.keep);
  if (s.scales) g = rn::mul(g, s.scale);
  if (s.clips) g = g < -s.clipValue ? -s.clipValue : s.clipValue < g ? s.clipValue : g;
  const T mi = rn::add(m, rn::mul(s.w1, rn::sub(g, m)));                  // m + (1 - beta1) (g - m)
  const T vi = rn::add(rn::mul(v, s.b2), rn::mul(rn::mul(s.w2, g), g));   // beta2 v + (1 - beta2) g g
  m = mi;
  v = vi;
  const T denom = rn::add(rn::div(rn::sqrt(vi), s.bc2Sqrt), s.eps);       // sqrt(v) / sqrt(bc2) + eps
  return rn::sub(p, rn::mul(s.stepSize, rn::div(mi, denom)));             // p - lr / bc1 * m / denom
}

}  // namespace lmc

#endif  // LMC_ADAMW_MATH_H
