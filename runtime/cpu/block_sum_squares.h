/* Implements: the sum of squares of one block of a gradient in an order fixed at compile
   time (grad_clip.cpp's gradBlockSumSquares, the gradient norm's unit): kStreams
   quarters of the block read side by side (one stream per core reached about 20 GB/s on
   the 2-core machine, four about 27: the memory system needs several misses in flight),
   each with kLanes partial sums (one serial chain of dependent additions ran at a
   quarter of the bandwidth), in double. A header so that a test compiles the same
   source for each x86-64 level (test/Unit/train/OptimizerTargets.h). Its includer
   must be compiled with LMRT_EXACT_FP_FLAGS: fused into FMAs (`acc + g g`), the
   AVX2 and AVX-512 clones would give other bits than baseline x86-64, and the norm,
   through clipping, would change every update on another CPU. */
#pragma once
#include <cstdint>

namespace lmrt {

// always_inline: each caller (a target clone, a test's level) compiles its own copy; an
// out-of-line instance would be one for the whole program, the linker's pick.
template <typename T> inline __attribute__((always_inline)) double blockSumSquaresInOrder(const T *g, int64_t len) {
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

}  // namespace lmrt
