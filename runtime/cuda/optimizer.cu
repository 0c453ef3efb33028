/* Implements: optimizer.h. */
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/norm_kernels.cuh"
#include "runtime/cuda/optimizer.h"

namespace lmrt::cuda {
namespace {

template <typename T> __global__ void normPartials(const T *g, int64_t n, double *partials) {
  const int64_t per = (n + gridDim.x - 1) / gridDim.x, b0 = blockIdx.x * per, b1 = min(n, b0 + per);
  double s = 0;
  for (int64_t i = b0 + threadIdx.x; i < b1; i += blockDim.x) s += (double)g[i] * (double)g[i];
  s = detail::blockSum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void normFinish(const double *partials, int blocks, double *out, double maxNorm) {
  double s = 0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) s += partials[i];
  s = detail::blockSum(s);
  if (threadIdx.x == 0) {
    const double norm = sqrt(s);
    out[0] = norm;
    out[1] = (maxNorm > 0 && norm > maxNorm) ? maxNorm / (norm + 1e-6) : 1.0;
  }
}

template <typename T>
__global__ void adamw(T *p, const T *g, T *m, T *v, const AdamWChunk *chunks, double gradScale, AdamWStep s) {
  const AdamWChunk c = chunks[blockIdx.x];
  const double decay = c.decay ? s.weightDecay : 0.0, lr = s.lr * c.lrScale;
  const T keep = T(1.0 - lr * decay), w1 = T(1.0 - s.beta1), b2 = T(s.beta2), w2 = T(1.0 - s.beta2);
  const T stepSize = T(lr / s.bc1), bc2Sqrt = T(sqrt(s.bc2)), eps = T(s.eps), clip = T(gradScale);
  const T clipValue = T(s.clipValue);
  const bool decays = decay != 0.0, scales = gradScale != 1.0, clipsValue = s.clipValue > 0;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    T pi = p[i];
    if (decays) pi *= keep;
    T gi = g[i - c.gradShift];
    if (scales) gi *= clip;
    if (clipsValue) gi = min(max(gi, -clipValue), clipValue);
    const int64_t k = i - c.stateShift;
    const T mi = m[k] + w1 * (gi - m[k]);
    const T vi = v[k] * b2 + w2 * gi * gi;
    m[k] = mi;
    v[k] = vi;
    const T denom = sqrt(vi) / bc2Sqrt + eps;
    p[i] = pi - stepSize * (mi / denom);
  }
}

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

void launchGradNorm(DType dtype, const void *grads, int64_t n, double *partials, double *normOut, double maxNorm,
                    cudaStream_t stream) {
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    normPartials<T><<<kNormBlocks, detail::kThreads, 0, stream>>>(static_cast<const T *>(grads), n, partials);
    CUDA_CHECK_LAUNCH();
  });
  normFinish<<<1, 1024, 0, stream>>>(partials, kNormBlocks, normOut, maxNorm);
  CUDA_CHECK_LAUNCH();
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
    adamw<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(static_cast<T *>(params),
                                                                   static_cast<const T *>(grads), static_cast<T *>(m),
                                                                   static_cast<T *>(v), chunks, gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace lmrt::cuda
