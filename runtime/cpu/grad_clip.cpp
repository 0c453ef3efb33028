/* Implements: the global gradient norm and clipping (see grad_clip.h). */
#include "runtime/cpu/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt {

namespace {

/* The sum of squares of one block, in an order fixed at compile time: kStreams
   quarters of the block read side by side (one stream per core reached about
   20 GB/s on the 2-core machine, four about 27: the memory system needs several
   misses in flight), each with kLanes partial sums (one serial chain of dependent
   additions ran at a quarter of the bandwidth). A function of its own, with SIMD
   clones: the body of an OpenMP parallel loop is outlined and compiled for
   baseline x86-64 whatever the enclosing function's clones. */
template <typename T> LMRT_SIMD_CLONES double blockSumSquares(const T *g, int64_t len) {
  constexpr int kStreams = 4, kLanes = 16;
  double acc[kStreams][kLanes] = {};
  const int64_t quarter = len / kStreams / kLanes * kLanes;
  for (int64_t i = 0; i < quarter; i += kLanes)
    for (int s = 0; s < kStreams; ++s) {
      const T *q = g + s * quarter + i;
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[s][j] += double(q[j]) * double(q[j]);
    }
  double sum = 0;
  for (int64_t i = kStreams * quarter; i < len; ++i) sum += double(g[i]) * double(g[i]);
  for (int s = 0; s < kStreams; ++s)
    for (int j = 0; j < kLanes; ++j) sum += acc[s][j];
  return sum;
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
