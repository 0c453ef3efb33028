/* Implements: block-wide reductions in a fixed order (so results repeat bit for bit
   from run to run), shared by the .cu kernel families (kernels.cuh) and by the device
   code headers the CPU emulation runs (test/Unit/cuda_emu/emulation.h): they
   synchronise only with __syncthreads and __shfl_xor_sync, which it emulates. */
#pragma once
#include <cmath>

#ifndef LMRT_CUDA_EMULATION
#include <cuda_runtime.h>
#endif

namespace lmrt::cuda::detail {

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024), returned
   to every thread; the order of additions is fixed by the thread indices. */
template <typename A> __device__ A blockSum(A v) {
  __shared__ A warpSums[32];
  __shared__ A total;
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // warpSums/total may still be read by a previous call
  if (lane == 0) warpSums[warp] = v;
  __syncthreads();
  // Every warp reduces the warp sums (the same shuffles in every warp, which the CPU
  // emulation needs); warp 0's result is kept.
  A s = lane < warps ? warpSums[lane] : A(0);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (warp == 0 && lane == 0) total = s;
  __syncthreads();
  return total;
}

template <typename A> __device__ A blockMax(A v) {
  __shared__ A warpMax[32];
  __shared__ A total;
  for (int o = 16; o > 0; o /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) warpMax[warp] = v;
  __syncthreads();
  A s = lane < warps ? warpMax[lane] : A(-INFINITY);  // in every warp, as blockSum's
  for (int o = 16; o > 0; o /= 2) s = max(s, __shfl_xor_sync(0xffffffffu, s, o));
  if (warp == 0 && lane == 0) total = s;
  __syncthreads();
  return total;
}

}  // namespace lmrt::cuda::detail
