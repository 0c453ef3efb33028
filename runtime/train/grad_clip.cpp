/* Implements: the global gradient norm and clipping (see grad_clip.h). */
#include "runtime/train/grad_clip.h"

#include <cmath>

namespace lmrt {

namespace {

template <typename T> double sumSquares(const T *g, int64_t n) {
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) s += double(g[i]) * double(g[i]);
  return s;
}

template <typename T> void scale(T *g, int64_t n, double c) {
  const T k = T(c);
  for (int64_t i = 0; i < n; ++i) g[i] *= k;
}

}  // namespace

double globalGradNorm(const std::vector<ParamView> &params) {
  double s = 0;
  for (const ParamView &p : params)
    s += p.dtype == DType::F64 ? sumSquares((const double *)p.grad, p.numel)
                               : sumSquares((const float *)p.grad, p.numel);
  return std::sqrt(s);
}

double clipGradients(const std::vector<ParamView> &params, double norm, double maxNorm) {
  if (!std::isfinite(norm)) fail("gradient norm is %g (non-finite); training diverged", norm);
  if (maxNorm <= 0) return 1.0;
  double c = maxNorm / (norm + 1e-6);
  if (c >= 1.0) return 1.0;
  for (const ParamView &p : params) {
    if (p.dtype == DType::F64)
      scale((double *)p.grad, p.numel, c);
    else
      scale((float *)p.grad, p.numel, c);
  }
  return c;
}

}  // namespace lmrt
