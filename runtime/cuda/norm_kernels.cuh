/* Implements: the gradient norm's block kernels (norm_blocks.h; optimizer.cu launches
   them): a CUDA block per norm block, its squares summed in double, each thread over the
   elements begin + threadIdx.x + k blockDim.x in order, then detail::blockSum (a fixed
   order), so that a block gives the same bits whichever storage its elements come from:
   the whole gradient (blockSumSquares), or a ZeRO rank's slice and the next ranks' heads
   (ownedBlockSumSquares). Only __syncthreads and __shfl_xor_sync synchronise, so the CPU
   emulation in test/Unit/cuda_emu runs them as they are. */
#pragma once
#include <cstdint>

#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/norm_blocks.h"

namespace lmrt::cuda::norm {

template <typename T> __global__ void blockSumSquares(const T *g, const NormBlock *blocks, double *out) {
  const NormBlock b = blocks[blockIdx.x];
  double s = 0;
  for (int64_t i = b.begin + threadIdx.x; i < b.end; i += blockDim.x) s += (double)g[i] * (double)g[i];
  s = detail::blockSum(s);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

/* `heads`: every rank's heads, rank q's part at q * headStride (norm_blocks.h's SliceNorm). */
template <typename T>
__global__ void ownedBlockSumSquares(const T *g, const T *heads, int64_t headStride, const OwnedNormBlock *blocks,
                                     double *out) {
  const OwnedNormBlock b = blocks[blockIdx.x];
  double s = 0;
  for (int64_t i = b.begin + threadIdx.x; i < b.end; i += blockDim.x) {
    const int64_t q = i / b.sliceLength, at = i - q * b.sliceLength;
    const T x = q == b.rank ? g[b.slice + at] : heads[q * headStride + b.heads + at];
    s += (double)x * (double)x;
  }
  s = detail::blockSum(s);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

}  // namespace lmrt::cuda::norm
