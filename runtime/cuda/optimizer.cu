/* Implements: optimizer.h. */
#include "runtime/cuda/adamw_kernels.cuh"
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/norm_kernels.cuh"
#include "runtime/cuda/optimizer.h"

namespace lmrt::cuda {
namespace {

/* The three cases of runtime/cpu/cpu_backend.cpp's accumulateInto, element for element. */
template <typename T> __global__ void accumulate(T *grad, T *acc, int64_t n, int micro, int count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (micro == 0)
      acc[i] = grad[i];
    else if (micro < count - 1)
      acc[i] += grad[i];
    else
      grad[i] = (acc[i] + grad[i]) / T(count);
  }
}

}  // namespace

void launchAccumulate(DType dtype, void *grads, void *acc, int64_t n, int micro, int count, cudaStream_t stream) {
  if (n == 0) return;
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    accumulate<T><<<detail::gridFor(n), detail::kThreads, 0, stream>>>(static_cast<T *>(grads), static_cast<T *>(acc),
                                                                       n, micro, count);
    CUDA_CHECK_LAUNCH();
  });
}

void launchBlockSumSquares(DType dtype, const void *grads, const NormBlock *blocks, int64_t numBlocks, double *out,
                           cudaStream_t stream) {
  if (numBlocks == 0) return;
  if (numBlocks > (1ll << 31) - 1) fail("gradient norm: %lld blocks exceed the CUDA grid", (long long)numBlocks);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    norm::blockSumSquares<T><<<(unsigned)numBlocks, detail::kThreads, 0, stream>>>(static_cast<const T *>(grads),
                                                                                   blocks, out);
    CUDA_CHECK_LAUNCH();
  });
}

void launchOwnedBlockSumSquares(DType dtype, const void *grads, const void *heads, int64_t headStride,
                                const OwnedNormBlock *blocks, int64_t numBlocks, double *out, cudaStream_t stream) {
  if (numBlocks == 0) return;
  if (numBlocks > (1ll << 31) - 1) fail("gradient norm: %lld blocks exceed the CUDA grid", (long long)numBlocks);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    norm::ownedBlockSumSquares<T><<<(unsigned)numBlocks, detail::kThreads, 0, stream>>>(
        static_cast<const T *>(grads), static_cast<const T *>(heads), headStride, blocks, out);
    CUDA_CHECK_LAUNCH();
  });
}

void launchAdamW(DType dtype, void *params, const void *grads, void *m, void *v, const AdamWChunk *chunks,
                 int64_t numChunks, double gradScale, const AdamWStep &step, cudaStream_t stream) {
  if (numChunks == 0) return;
  if (numChunks > (1ll << 31) - 1) fail("adamw: %lld chunks exceed the CUDA grid", (long long)numChunks);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    opt::adamw<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(static_cast<T *>(params),
                                                                   static_cast<const T *>(grads), static_cast<T *>(m),
                                                                   static_cast<T *>(v), chunks, gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace lmrt::cuda
