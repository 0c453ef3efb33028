/* Implements: the global gradient norm and clipping (see grad_clip.h). */
#include "runtime/cpu/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/block_sum_squares.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt {

namespace {

/* block_sum_squares.h's sum of one block, in a function of its own with SIMD clones: the
   body of an OpenMP parallel loop is outlined and compiled for baseline x86-64 whatever
   the enclosing function's clones. This file's -ffp-contract=off (LMRT_EXACT_FP_FLAGS)
   keeps every clone's bits the baseline's. */
template <typename T> LMRT_SIMD_CLONES double blockSumSquares(const T *g, int64_t len) {
  return blockSumSquaresInOrder(g, len);
}

/* Sums in fixed blocks added in block order, so the norm (and through clipping the
   weights) is bit-identical from run to run and for any thread count; an OpenMP
   reduction would add the threads' partial sums in whatever order they finish. */
template <typename T> double sumSquares(const T *g, int64_t n) {
  constexpr int64_t kBlock = kGradNormBlock;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial((size_t)blocks, 0.0);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    partial[(size_t)b] = blockSumSquares(g + b * kBlock, std::min(n - b * kBlock, kBlock));
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

template <typename T> void scale(T *g, int64_t n, double c) {
  const T k = T(c);
  for (int64_t i = 0; i < n; ++i) g[i] *= k;
}

}  // namespace

double gradBlockSumSquares(const void *g, DType dtype, int64_t len) {
  return dtype == DType::F64 ? blockSumSquares((const double *)g, len) : blockSumSquares((const float *)g, len);
}

double gradSumSquares(const void *g, DType dtype, int64_t n) {
  return dtype == DType::F64 ? sumSquares((const double *)g, n) : sumSquares((const float *)g, n);
}

double globalGradNorm(const std::vector<ParamView> &params) {
  double s = 0;
  for (const ParamView &p : params) s += gradSumSquares(p.grad, p.dtype, p.numel);
  return std::sqrt(s);
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
