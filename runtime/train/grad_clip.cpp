/* Implements: the global gradient norm and clipping (see grad_clip.h). */
#include "runtime/train/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/kernels/kernel_math.h"

namespace lmrt {

namespace {

/* Sums in fixed blocks added in block order, so the norm (and through clipping the
   weights) is bit-identical from run to run and for any thread count; an OpenMP
   reduction would add the threads' partial sums in whatever order they finish.
   Inside a block the simd reduction keeps one partial sum per vector lane (an order
   fixed at compile time): one serial chain of dependent additions ran at a quarter
   of the memory bandwidth. */
template <typename T> LMRT_SIMD_CLONES double sumSquares(const T *g, int64_t n) {
  constexpr int64_t kBlock = 16384;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial((size_t)blocks, 0.0);
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    double s = 0;
    const T *gb = g + b * kBlock;
    const int64_t len = std::min(n - b * kBlock, kBlock);
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < len; ++i) s += double(gb[i]) * double(gb[i]);
    partial[(size_t)b] = s;
  }
  double s = 0;
  for (double p : partial) s += p;
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

double clipScale(double norm, double maxNorm) {
  if (!std::isfinite(norm)) fail("gradient norm is %g (non-finite); training diverged", norm);
  if (maxNorm <= 0) return 1.0;
  double c = maxNorm / (norm + 1e-6);
  return c >= 1.0 ? 1.0 : c;
}

double clipGradients(const std::vector<ParamView> &params, double norm, double maxNorm) {
  double c = clipScale(norm, maxNorm);
  if (c == 1.0) return 1.0;
  for (const ParamView &p : params) {
    if (p.dtype == DType::F64)
      scale((double *)p.grad, p.numel, c);
    else
      scale((float *)p.grad, p.numel, c);
  }
  return c;
}

}  // namespace lmrt
