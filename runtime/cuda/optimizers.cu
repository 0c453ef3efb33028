/* Implements: optimizer.h's SGD, Lion, LAMB and Adafactor, element for element
   the CPU's formulas (runtime/cpu/optimizers.cpp; docs/runtime.md, "Optimizers"). */
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/optimizer.h"

namespace lmrt::cuda {
namespace {

/* The gradient as every optimizer reads it: times clipping's factor, then clamped by value. */
template <typename T> __device__ T readGrad(const T *g, int64_t i, double gradScale, double clipValue) {
  T gi = g[i];
  if (gradScale != 1.0) gi *= T(gradScale);
  if (clipValue > 0) gi = min(max(gi, T(-clipValue)), T(clipValue));
  return gi;
}

template <typename T>
__global__ void sgd(T *p, const T *g, T *m, const AdamWChunk *chunks, double gradScale, OptimizerStep s) {
  const AdamWChunk c = chunks[blockIdx.x];
  const T wd = T(c.decay ? s.weightDecay : 0.0), mu = T(s.momentum), rate = T(s.lr * c.lrScale);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    T d = readGrad(g, i - c.gradShift, gradScale, s.clipValue);
    if (wd != T(0)) d += wd * p[i];
    if (m) {
      const int64_t k = i - c.stateShift;
      const T b = s.first ? d : mu * m[k] + d;
      m[k] = b;
      d = s.nesterov ? d + mu * b : b;
    }
    p[i] -= rate * d;
  }
}

template <typename T>
__global__ void lion(T *p, const T *g, T *m, const AdamWChunk *chunks, double gradScale, OptimizerStep s) {
  const AdamWChunk c = chunks[blockIdx.x];
  const double lr = s.lr * c.lrScale;
  const T keep = T(1.0 - lr * (c.decay ? s.weightDecay : 0.0)), rate = T(lr);
  const T b1 = T(s.beta1), w1 = T(1.0 - s.beta1), b2 = T(s.beta2), w2 = T(1.0 - s.beta2);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const T gi = readGrad(g, i - c.gradShift, gradScale, s.clipValue);
    const int64_t k = i - c.stateShift;
    const T x = b1 * m[k] + w1 * gi;
    const T sign = T((x > T(0)) - (x < T(0)));
    p[i] = p[i] * keep - rate * sign;
    m[k] = b2 * m[k] + w2 * gi;
  }
}

/* A block per parameter: the moments and both norms, then the update. */
template <typename T>
__global__ void lamb(T *p, const T *g, T *m, T *v, const ParamSlice *slices, double gradScale, OptimizerStep s) {
  const ParamSlice ps = slices[blockIdx.x];
  T *w = p + ps.offset, *mm = m + ps.offset, *vv = v + ps.offset;
  const T *gg = g + ps.offset;
  const T b1 = T(s.beta1), w1 = T(1.0 - s.beta1), b2 = T(s.beta2), w2 = T(1.0 - s.beta2);
  const T ibc1 = T(1.0 / s.bc1), ibc2 = T(1.0 / s.bc2), eps = T(s.eps), wd = T(ps.decay ? s.weightDecay : 0.0);
  double wn = 0, un = 0;
  for (int64_t i = threadIdx.x; i < ps.numel; i += blockDim.x) {
    const T gi = readGrad(gg, i, gradScale, s.clipValue);
    mm[i] = b1 * mm[i] + w1 * gi;
    vv[i] = b2 * vv[i] + w2 * gi * gi;
    const double u = (double)((mm[i] * ibc1) / (sqrt(vv[i] * ibc2) + eps) + wd * w[i]);
    wn += (double)w[i] * (double)w[i];
    un += u * u;
  }
  wn = detail::blockSum(wn);
  un = detail::blockSum(un);
  const double ratio = ps.trust && wn > 0 && un > 0 ? sqrt(wn) / sqrt(un) : 1.0;
  const T step = T(s.lr * ps.lrScale * ratio);
  for (int64_t i = threadIdx.x; i < ps.numel; i += blockDim.x)
    w[i] -= step * ((mm[i] * ibc1) / (sqrt(vv[i] * ibc2) + eps) + wd * w[i]);
}

/* A block per parameter: RMS(w), the statistics of g^2 + eps1, the update's RMS,
   then the clipped, scaled update with decay. */
template <typename T>
__global__ void adafactor(T *p, const T *g, T *s0, T *s1, const ParamSlice *slices, double gradScale,
                          OptimizerStep s) {
  const ParamSlice ps = slices[blockIdx.x];
  T *w = p + ps.offset, *a = s0 + ps.offset, *b = s1 + ps.offset;
  const T *gg = g + ps.offset;
  const int64_t n = ps.numel;
  double rate = s.relStep * ps.lrScale;
  if (s.scaleParameter) {
    double ss = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += (double)w[i] * (double)w[i];
    ss = detail::blockSum(ss);
    rate *= max(s.eps2, sqrt(ss / (double)n));
  }
  const T b2 = T(s.beta2t), w2 = T(1.0 - s.beta2t), eps1 = T(s.eps);
  const bool factored = ps.rows > 0;
  const int64_t R = factored ? ps.rows : 1, C = factored ? ps.cols : 1, L = n / (R * C);
  if (factored) {
    // a: rows [L, R], b: columns [L, C]; then each slice's mean of its rows, kept in
    // a's spare room would alias, so it is recomputed where needed (L is small).
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t r = 0; r < R; ++r) {
        double sum = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
          const T gi = readGrad(gg, (l * R + r) * C + c, gradScale, s.clipValue);
          sum += (double)(gi * gi + eps1);
        }
        sum = detail::blockSum(sum);
        if (threadIdx.x == 0) a[l * R + r] = b2 * a[l * R + r] + w2 * T(sum / (double)C);
      }
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        double sum = 0;
        for (int64_t r = 0; r < R; ++r) {
          const T gi = readGrad(gg, (l * R + r) * C + c, gradScale, s.clipValue);
          sum += (double)(gi * gi + eps1);
        }
        b[l * C + c] = b2 * b[l * C + c] + w2 * T(sum / (double)R);
      }
    }
    __syncthreads();
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const T gi = readGrad(gg, i, gradScale, s.clipValue);
      a[i] = b2 * a[i] + w2 * (gi * gi + eps1);
    }
    __syncthreads();
  }
  // The row means of each slice (at most a few: the leading dimensions).
  auto rowMean = [&](int64_t l) {
    double rs = 0;
    for (int64_t r = 0; r < R; ++r) rs += (double)a[l * R + r];
    return T(rs / (double)R);
  };
  auto update = [&](int64_t i, T mean) -> T {
    const T gi = readGrad(gg, i, gradScale, s.clipValue);
    if (!factored) return gi / sqrt(a[i]);
    const int64_t c = i % C, lr_ = i / C, l = lr_ / R;
    return gi * ((T(1) / sqrt(a[lr_] / mean)) * (T(1) / sqrt(b[l * C + c])));
  };
  double us = 0;
  for (int64_t l = 0; l < L; ++l) {
    const T mean = factored ? rowMean(l) : T(1);
    for (int64_t i = l * R * C + threadIdx.x; i < (l + 1) * R * C; i += blockDim.x) {
      const double u = (double)update(i, mean);
      us += u * u;
    }
  }
  us = detail::blockSum(us);
  const double clipDiv = max(1.0, sqrt(us / (double)n) / s.clipThreshold);
  const T scale = T(rate / clipDiv), keep = T(1.0 - (ps.decay ? s.weightDecay : 0.0) * rate);
  const bool decays = ps.decay && s.weightDecay != 0;
  for (int64_t l = 0; l < L; ++l) {
    const T mean = factored ? rowMean(l) : T(1);
    for (int64_t i = l * R * C + threadIdx.x; i < (l + 1) * R * C; i += blockDim.x) {
      const T u = update(i, mean) * scale;
      T wi = w[i];
      if (decays) wi *= keep;
      w[i] = wi - u;
    }
  }
}

void checkGrid(const char *what, int64_t blocks) {
  if (blocks > (1ll << 31) - 1) fail("%s: %lld blocks exceed the CUDA grid", what, (long long)blocks);
}

}  // namespace

void launchSgd(DType dtype, void *params, const void *grads, void *m, const AdamWChunk *chunks, int64_t numChunks,
               double gradScale, const OptimizerStep &step, cudaStream_t stream) {
  if (numChunks == 0) return;
  checkGrid("sgd", numChunks);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    sgd<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(
        static_cast<T *>(params), static_cast<const T *>(grads), static_cast<T *>(m), chunks, gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

void launchLion(DType dtype, void *params, const void *grads, void *m, const AdamWChunk *chunks, int64_t numChunks,
                double gradScale, const OptimizerStep &step, cudaStream_t stream) {
  if (numChunks == 0) return;
  checkGrid("lion", numChunks);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    lion<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(
        static_cast<T *>(params), static_cast<const T *>(grads), static_cast<T *>(m), chunks, gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

void launchLamb(DType dtype, void *params, const void *grads, void *m, void *v, const ParamSlice *slices,
                int64_t numSlices, double gradScale, const OptimizerStep &step, cudaStream_t stream) {
  if (numSlices == 0) return;
  checkGrid("lamb", numSlices);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    lamb<T><<<(unsigned)numSlices, detail::kThreads, 0, stream>>>(static_cast<T *>(params), static_cast<const T *>(grads),
                                                      static_cast<T *>(m), static_cast<T *>(v), slices, gradScale,
                                                      step);
    CUDA_CHECK_LAUNCH();
  });
}

void launchAdafactor(DType dtype, void *params, const void *grads, void *s0, void *s1, const ParamSlice *slices,
                     int64_t numSlices, double gradScale, const OptimizerStep &step, cudaStream_t stream) {
  if (numSlices == 0) return;
  checkGrid("adafactor", numSlices);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    adafactor<T><<<(unsigned)numSlices, detail::kThreads, 0, stream>>>(static_cast<T *>(params), static_cast<const T *>(grads),
                                                           static_cast<T *>(s0), static_cast<T *>(s1), slices,
                                                           gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace lmrt::cuda
