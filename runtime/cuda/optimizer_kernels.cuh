/* Implements: the SGD, Lion, LAMB and Adafactor kernels over flat parameter storage
   (optimizers.cu launches them): each line the CPU's (runtime/cpu/optimizers.cpp), the
   gradient read by contract/optimizer_math.h's readGrad as there (a NaN stays NaN).
   SGD and Lion: a block per chunk (optimizer_chunks.h's AdamWChunk), no synchronisation.
   LAMB and Adafactor: a block per parameter (ParamSlice), its sums by block_reduce.cuh's
   blockSum. The CPU emulation in test/Unit/cuda_emu runs them as they are.

   The arithmetic is the CPU's plain operators, not contract/optimizer_math.h's rn::
   intrinsics as AdamW's: the kernels then read as the CPU loops do, line for line, and
   the scalars' double expressions (1 - lr wd, ...) are covered too without spelling out
   each rounding. Instead the one file that compiles them, optimizers.cu, is compiled
   with nvcc --fmad=false (runtime/cuda/CMakeLists.txt), as optimizers.cpp is with
   -ffp-contract=off: no product is fused into an FMA on either side, and division and
   square root are IEEE's on both (nvcc's -prec-div, -prec-sqrt defaults). So SGD and
   Lion give the CPU's bits. LAMB's norms and Adafactor's row sums and RMS are summed in
   blockSum's order, not the CPU's element order: their double sums may differ in the
   last bits, so may what is rounded from them (the tests' tolerance, measured:
   test/Unit/cuda_emu/optimizer_compare.h's kReducedUlps). */
#pragma once
#include <cstdint>

#include "contract/optimizer_math.h"
#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/optimizer_chunks.h"

// The bits above hold only without FMA contraction; CMake defines this with --fmad=false.
#if defined(__CUDA_ARCH__) && !defined(LMRT_CUDA_NO_FMAD)
#error "optimizer_kernels.cuh: compile with nvcc --fmad=false and -DLMRT_CUDA_NO_FMAD (runtime/cuda/CMakeLists.txt)"
#endif

namespace lmrt::cuda::opt {

template <typename T>
__global__ void sgd(T *p, const T *g, T *m, const AdamWChunk *chunks, double gradScale, OptimizerStep s) {
  const AdamWChunk c = chunks[blockIdx.x];
  const lmc::GradRead<T> r = lmc::gradRead<T>(gradScale, s.clipValue);
  const T wd = T(c.decay ? s.weightDecay : 0.0), mu = T(s.momentum), rate = T(s.lr * c.lrScale);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    T d = lmc::readGrad(g[i - c.gradShift], r);
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
  const lmc::GradRead<T> r = lmc::gradRead<T>(gradScale, s.clipValue);
  const double lr = s.lr * c.lrScale;
  const T keep = T(1.0 - lr * (c.decay ? s.weightDecay : 0.0)), rate = T(lr);
  const T b1 = T(s.beta1), w1 = T(1.0 - s.beta1), b2 = T(s.beta2), w2 = T(1.0 - s.beta2);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const T gi = lmc::readGrad(g[i - c.gradShift], r);
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
  const lmc::GradRead<T> r = lmc::gradRead<T>(gradScale, s.clipValue);
  const T b1 = T(s.beta1), w1 = T(1.0 - s.beta1), b2 = T(s.beta2), w2 = T(1.0 - s.beta2);
  const T ibc1 = T(1.0 / s.bc1), ibc2 = T(1.0 / s.bc2), eps = T(s.eps), wd = T(ps.decay ? s.weightDecay : 0.0);
  auto direction = [&](int64_t i) { return (mm[i] * ibc1) / (sqrt(vv[i] * ibc2) + eps) + wd * w[i]; };
  double wn = 0, un = 0;
  for (int64_t i = threadIdx.x; i < ps.numel; i += blockDim.x) {
    const T gi = lmc::readGrad(gg[i], r);
    mm[i] = b1 * mm[i] + w1 * gi;
    vv[i] = b2 * vv[i] + w2 * gi * gi;
    const double u = (double)direction(i);
    wn += (double)w[i] * (double)w[i];
    un += u * u;
  }
  wn = detail::blockSum(wn);
  un = detail::blockSum(un);
  const double ratio = ps.trust && wn > 0 && un > 0 ? sqrt(wn) / sqrt(un) : 1.0;
  const T step = T(s.lr * ps.lrScale * ratio);
  for (int64_t i = threadIdx.x; i < ps.numel; i += blockDim.x) w[i] -= step * direction(i);
}

/* A block per parameter: RMS(w), the statistics of g^2 + eps1, the update's RMS,
   then the clipped, scaled update with decay. The maxima are std::max's (a < b ? b : a),
   as the CPU's, not CUDA's fmax. */
template <typename T>
__global__ void adafactor(T *p, const T *g, T *s0, T *s1, const ParamSlice *slices, double gradScale,
                          OptimizerStep s) {
  const ParamSlice ps = slices[blockIdx.x];
  T *w = p + ps.offset, *a = s0 + ps.offset, *b = s1 + ps.offset;
  const T *gg = g + ps.offset;
  const lmc::GradRead<T> rd = lmc::gradRead<T>(gradScale, s.clipValue);
  const int64_t n = ps.numel;
  double rate = s.relStep * ps.lrScale;
  if (s.scaleParameter) {
    double ss = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += (double)w[i] * (double)w[i];
    ss = detail::blockSum(ss);
    const double rms = sqrt(ss / (double)n);
    rate *= s.eps2 < rms ? rms : s.eps2;
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
          const T gi = lmc::readGrad(gg[(l * R + r) * C + c], rd);
          sum += (double)(gi * gi + eps1);
        }
        sum = detail::blockSum(sum);
        if (threadIdx.x == 0) a[l * R + r] = b2 * a[l * R + r] + w2 * T(sum / (double)C);
      }
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        double sum = 0;
        for (int64_t r = 0; r < R; ++r) {
          const T gi = lmc::readGrad(gg[(l * R + r) * C + c], rd);
          sum += (double)(gi * gi + eps1);
        }
        b[l * C + c] = b2 * b[l * C + c] + w2 * T(sum / (double)R);
      }
    }
    __syncthreads();
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const T gi = lmc::readGrad(gg[i], rd);
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
    const T gi = lmc::readGrad(gg[i], rd);
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
  const double ratio = sqrt(us / (double)n) / s.clipThreshold;
  const double clipDiv = 1.0 < ratio ? ratio : 1.0;
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

}  // namespace lmrt::cuda::opt
