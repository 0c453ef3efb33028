/* Implements: one AdamW update of one element (the formula of runtime/cpu/adamw.h), the
   body of the CPU's AdamW loop and of the CUDA AdamW kernel alike, with every rounding
   written out in contract/optimizer_math.h's rn:: operations (no FMA on either backend,
   nor in any CPU's target clone), so that both give the same bits from the same inputs.

   The scalars are formed in double from the settings and rounded once to the element
   type T (f32 or f64), as PyTorch does with Python-float hyperparameters. */
#ifndef LMC_ADAMW_MATH_H
#define LMC_ADAMW_MATH_H

#include "contract/optimizer_math.h"

namespace lmc {

/* The per-parameter scalars of one update. */
template <typename T> struct AdamWScalars {
  T keep;           // 1 - lr * weight_decay
  T w1, b2, w2;     // 1 - beta1, beta2, 1 - beta2
  T stepSize;       // lr / (1 - beta1^t)
  T bc2Sqrt;        // sqrt(1 - beta2^t)
  T eps;
  GradRead<T> grad;  // clipping's factor and clip_grad_value
  bool decays;
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
  s.grad = gradRead<T>(gradScale, clipValue);
  s.decays = decay != 0.0;
  return s;
}

/* One element: parameter p, gradient g, moments m and v (updated in place); returns the
   new parameter. The gradient is read as every optimizer reads it (readGrad: a NaN stays
   NaN). */
template <typename T> LMC_HD T adamwElement(T p, T g, T &m, T &v, const AdamWScalars<T> &s) {
  if (s.decays) p = rn::mul(p, s.keep);
  g = readGrad(g, s.grad);
  const T mi = rn::add(m, rn::mul(s.w1, rn::sub(g, m)));                  // m + (1 - beta1) (g - m)
  const T vi = rn::add(rn::mul(v, s.b2), rn::mul(rn::mul(s.w2, g), g));   // beta2 v + (1 - beta2) g g
  m = mi;
  v = vi;
  const T denom = rn::add(rn::div(rn::sqrt(vi), s.bc2Sqrt), s.eps);       // sqrt(v) / sqrt(bc2) + eps
  return rn::sub(p, rn::mul(s.stepSize, rn::div(mi, denom)));             // p - lr / bc1 * m / denom
}

}  // namespace lmc

#endif  // LMC_ADAMW_MATH_H
