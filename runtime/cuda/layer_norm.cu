/* Implements: lm.layer_norm and lm.layer_norm_grad (and lm.rms_norm, lm.rms_norm_grad)
   on the GPU, one warp per row
   (row statistics in double, as the CPU kernel). The backward stores each row's
   mean and rstd in scratch for its parameter-gradient pass, which sums fixed
   32-row chunks and then the chunks in order: the same values every run. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

constexpr int kRowsPerBlock = kThreads / 32;
constexpr int64_t kChunk = 32;

__device__ double warpSum(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__device__ void rowStats(const T *x, int64_t d, double eps, int lane, double &mean, double &rstd) {
  double s = 0;
  for (int64_t j = lane; j < d; j += 32) s += (double)x[j];
  mean = d ? warpSum(s) / d : 0.0;
  double v = 0;
  for (int64_t j = lane; j < d; j += 32) {
    double c = (double)x[j] - mean;
    v += c * c;
  }
  rstd = 1.0 / sqrt((d ? warpSum(v) / d : 0.0) + eps);
}

template <typename T>
__global__ void layerNormFwd(const T *x, const T *g, const T *b, T *y, int64_t rows, int64_t d, double eps) {
  const int64_t row = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T *xr = x + row * d;
  T *yr = y + row * d;
  double mean, rstd;
  rowStats(xr, d, eps, lane, mean, rstd);
  const T m = (T)mean, rs = (T)rstd;
  for (int64_t j = lane; j < d; j += 32) yr[j] = (xr[j] - m) * rs * g[j] + b[j];
}

template <typename T>
__global__ void layerNormBwdRows(const T *x, const T *g, const T *dy, T *dx, double *stats, int64_t rows, int64_t d,
                                 double eps) {
  const int64_t row = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T *xr = x + row * d, *dyr = dy + row * d;
  T *dxr = dx + row * d;
  double mean, rstd;
  rowStats(xr, d, eps, lane, mean, rstd);
  if (lane == 0) stats[2 * row] = mean, stats[2 * row + 1] = rstd;
  const T m = (T)mean, rs = (T)rstd;
  // dx = rstd * (dn - mean(dn) - xhat * mean(dn * xhat)), dn = dy * gamma
  double sdn = 0, sdnx = 0;
  for (int64_t j = lane; j < d; j += 32) {
    T xhat = (xr[j] - m) * rs, dn = dyr[j] * g[j];
    sdn += (double)dn;
    sdnx += (double)(dn * xhat);
  }
  const T mdn = (T)(warpSum(sdn) / d), mdnx = (T)(warpSum(sdnx) / d);
  for (int64_t j = lane; j < d; j += 32) {
    T xhat = (xr[j] - m) * rs;
    dxr[j] = rs * (dyr[j] * g[j] - mdn - xhat * mdnx);
  }
}

template <typename T>
__global__ void layerNormBwdPartials(const T *x, const T *dy, const double *stats, double *partial, int64_t rows,
                                     int64_t d) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, chunk = blockIdx.y;
  if (c >= d) return;
  double pg = 0, pb = 0;
  for (int64_t r = chunk * kChunk, end = min(rows, r + kChunk); r < end; ++r) {
    const T xhat = (x[r * d + c] - (T)stats[2 * r]) * (T)stats[2 * r + 1];
    pg += (double)(dy[r * d + c] * xhat);
    pb += (double)dy[r * d + c];
  }
  partial[(chunk * 2) * d + c] = pg;
  partial[(chunk * 2 + 1) * d + c] = pb;
}

template <typename T> __global__ void layerNormBwdFinish(const double *partial, int64_t chunks, int64_t d, T *dg, T *db) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d; c += (int64_t)gridDim.x * blockDim.x) {
    double sg = 0, sb = 0;
    for (int64_t k = 0; k < chunks; ++k) sg += partial[(k * 2) * d + c], sb += partial[(k * 2 + 1) * d + c];
    dg[c] = (T)sg;
    db[c] = (T)sb;
  }
}

void rowsOf(const Shape &s, int64_t &rows, int64_t &d) {
  d = s.empty() ? 1 : s.back();
  rows = d ? numel(s) / d : 0;
}

void runLayerNorm(const OpCall &call) {
  int64_t rows, d;
  rowsOf(call.in[0].shape(), rows, d);
  if (rows * d == 0) return;
  const double eps = call.attrs.getFloat("epsilon");
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    unsigned blocks = (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    layerNormFwd<T><<<blocks, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(), call.in[2].as<T>(),
                                                          call.out[0].as<T>(), rows, d, eps);
    CUDA_CHECK_LAUNCH();
  });
}

size_t layerNormGradScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &) {
  int64_t rows, d;
  rowsOf(in[0].shape, rows, d);
  int64_t chunks = (rows + kChunk - 1) / kChunk;
  return (size_t)(2 * rows + chunks * 2 * d) * sizeof(double);
}

void runLayerNormGrad(const OpCall &call) {
  int64_t rows, d;
  rowsOf(call.in[0].shape(), rows, d);
  const double eps = call.attrs.getFloat("epsilon");
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    if (rows * d == 0) {
      CUDA_CHECK(cudaMemsetAsync(call.out[1].data, 0, d * sizeof(T), call.stream));
      CUDA_CHECK(cudaMemsetAsync(call.out[2].data, 0, d * sizeof(T), call.stream));
      return;
    }
    const int64_t chunks = (rows + kChunk - 1) / kChunk;
    if (chunks > 65535) fail("layer_norm_grad: %lld row chunks exceed the CUDA grid", (long long)chunks);
    double *stats = static_cast<double *>(call.scratch), *partial = stats + 2 * rows;
    unsigned blocks = (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    layerNormBwdRows<T><<<blocks, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                              call.in[2].as<T>(), call.out[0].as<T>(), stats, rows, d,
                                                              eps);
    CUDA_CHECK_LAUNCH();
    dim3 grid((unsigned)((d + kThreads - 1) / kThreads), (unsigned)chunks);
    layerNormBwdPartials<T><<<grid, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[2].as<T>(), stats,
                                                                partial, rows, d);
    CUDA_CHECK_LAUNCH();
    layerNormBwdFinish<T><<<gridFor(d), kThreads, 0, call.stream>>>(partial, chunks, d, call.out[1].as<T>(),
                                                                    call.out[2].as<T>());
    CUDA_CHECK_LAUNCH();
  });
}

// --- rms_norm: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) -----------

template <typename T> __device__ double rowRstd(const T *x, int64_t d, double eps, int lane) {
  double s = 0;
  for (int64_t j = lane; j < d; j += 32) s += (double)x[j] * (double)x[j];
  return 1.0 / sqrt((d ? warpSum(s) / d : 0.0) + eps);
}

template <typename T>
__global__ void rmsNormFwd(const T *x, const T *g, T *y, int64_t rows, int64_t d, double eps) {
  const int64_t row = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T *xr = x + row * d;
  T *yr = y + row * d;
  const T rs = (T)rowRstd(xr, d, eps, lane);
  for (int64_t j = lane; j < d; j += 32) yr[j] = xr[j] * rs * g[j];
}

/* dx = rstd * (dn - xhat * mean(dn * xhat)), dn = dy * gamma; stores each row's rstd. */
template <typename T>
__global__ void rmsNormBwdRows(const T *x, const T *g, const T *dy, T *dx, double *rstdOut, int64_t rows, int64_t d,
                               double eps) {
  const int64_t row = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T *xr = x + row * d, *dyr = dy + row * d;
  T *dxr = dx + row * d;
  const double rstd = rowRstd(xr, d, eps, lane);
  if (lane == 0) rstdOut[row] = rstd;
  const T rs = (T)rstd;
  double sdnx = 0;
  for (int64_t j = lane; j < d; j += 32) sdnx += (double)(dyr[j] * g[j] * (xr[j] * rs));
  const T mdnx = (T)(warpSum(sdnx) / d);
  for (int64_t j = lane; j < d; j += 32) dxr[j] = rs * (dyr[j] * g[j] - xr[j] * rs * mdnx);
}

template <typename T>
__global__ void rmsNormBwdPartials(const T *x, const T *dy, const double *rstd, double *partial, int64_t rows,
                                   int64_t d) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, chunk = blockIdx.y;
  if (c >= d) return;
  double pg = 0;
  for (int64_t r = chunk * kChunk, end = min(rows, r + kChunk); r < end; ++r)
    pg += (double)(dy[r * d + c] * (x[r * d + c] * (T)rstd[r]));
  partial[chunk * d + c] = pg;
}

template <typename T> __global__ void rmsNormBwdFinish(const double *partial, int64_t chunks, int64_t d, T *dg) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d; c += (int64_t)gridDim.x * blockDim.x) {
    double sg = 0;
    for (int64_t k = 0; k < chunks; ++k) sg += partial[k * d + c];
    dg[c] = (T)sg;
  }
}

void runRmsNorm(const OpCall &call) {
  int64_t rows, d;
  rowsOf(call.in[0].shape(), rows, d);
  if (rows * d == 0) return;
  const double eps = call.attrs.getFloat("epsilon");
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    unsigned blocks = (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    rmsNormFwd<T><<<blocks, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(), call.out[0].as<T>(),
                                                        rows, d, eps);
    CUDA_CHECK_LAUNCH();
  });
}

size_t rmsNormGradScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &) {
  int64_t rows, d;
  rowsOf(in[0].shape, rows, d);
  int64_t chunks = (rows + kChunk - 1) / kChunk;
  return (size_t)(rows + chunks * d) * sizeof(double);
}

void runRmsNormGrad(const OpCall &call) {
  int64_t rows, d;
  rowsOf(call.in[0].shape(), rows, d);
  const double eps = call.attrs.getFloat("epsilon");
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    if (rows * d == 0) {
      CUDA_CHECK(cudaMemsetAsync(call.out[1].data, 0, d * sizeof(T), call.stream));
      return;
    }
    const int64_t chunks = (rows + kChunk - 1) / kChunk;
    if (chunks > 65535) fail("rms_norm_grad: %lld row chunks exceed the CUDA grid", (long long)chunks);
    double *rstd = static_cast<double *>(call.scratch), *partial = rstd + rows;
    unsigned blocks = (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    rmsNormBwdRows<T><<<blocks, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                            call.in[2].as<T>(), call.out[0].as<T>(), rstd, rows, d, eps);
    CUDA_CHECK_LAUNCH();
    dim3 grid((unsigned)((d + kThreads - 1) / kThreads), (unsigned)chunks);
    rmsNormBwdPartials<T><<<grid, kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[2].as<T>(), rstd, partial,
                                                              rows, d);
    CUDA_CHECK_LAUNCH();
    rmsNormBwdFinish<T><<<gridFor(d), kThreads, 0, call.stream>>>(partial, chunks, d, call.out[1].as<T>());
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addLayerNormKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"layer_norm", runLayerNorm, noScratch});
  k.push_back({"layer_norm_grad", runLayerNormGrad, layerNormGradScratch});
  k.push_back({"rms_norm", runRmsNorm, noScratch});
  k.push_back({"rms_norm_grad", runRmsNormGrad, rmsNormGradScratch});
}

}  // namespace lmrt::cuda::detail
