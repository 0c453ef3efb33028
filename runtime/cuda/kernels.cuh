/* Implements: what the .cu kernel families share: launch sizes, the block-wide
   reductions of block_reduce.cuh,
   the f32/f64 dispatch, and strided index maps for broadcasting and copies. */
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/ops.h"
#include "contract/scalar_math.h"
#include "runtime/cuda/block_reduce.cuh"

namespace lmrt::cuda::detail {

constexpr int kThreads = 256;
/* Ranks up to this are indexed by the strided kernels (plans use 4 at most). */
constexpr int kMaxRank = 8;

/* Blocks for a grid-stride loop over n items: enough to fill any current GPU. */
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return (unsigned)std::max<int64_t>(1, std::min<int64_t>(b, 1 << 16));
}

/* Calls f(float{}) or f(double{}) by the element type. */
template <typename F> void byFloat(DType t, F &&f) {
  if (t == DType::F64)
    f(double{});
  else
    f(float{});
}

/* An iteration shape with, per operand, the element stride of each dim
   (0 where the operand broadcasts). Passed to kernels by value. */
struct StridedIndex {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};
  int64_t offset[3] = {};
  /* Offsets of flat index i of the iteration shape into each operand. */
  __device__ void offsets(int64_t i, int64_t *off, int n) const {
    for (int o = 0; o < n; ++o) off[o] = offset[o];
    for (int d = rank - 1; d >= 0; --d) {
      int64_t idx = i % shape[d];
      i /= shape[d];
      for (int o = 0; o < n; ++o) off[o] += idx * stride[o][d];
    }
  }
};

/* Row-major strides of `s`. */
inline void contiguousStrides(const Shape &s, int64_t *st) {
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
}

/* Strides of `s` viewed in the index space of `full` (aligned on the right), 0 where it broadcasts. */
inline void broadcastStrides(const Shape &s, const Shape &full, int64_t *st) {
  for (size_t i = 0; i < full.size(); ++i) st[i] = 0;
  int64_t acc = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t si = s.size() - 1 - i, fi = full.size() - 1 - i;
    st[fi] = s[si] == 1 ? 0 : acc;
    acc *= s[si];
  }
}

/* Throws when a shape has more dims than the strided kernels index. */
void checkRank(const char *op, const Shape &s);

}  // namespace lmrt::cuda::detail
