/* Implements: lm.sample, lm.to_float, lm.to_int and lm.dropout on the GPU (dropout:
   dropout_kernels.cuh). lm.sample runs the CPU's row
   body (contract/sample_math.h: the same f64 walk), one thread a row, so
   both backends draw the same ids from the same bits. A row with no distribution
   (NaN or +inf logits) gives id -1, which the embedding that reads it turns into
   NaN rows (the CPU kernel raises an error instead). One thread a row reads V
   logits three times: fine for the generator's share of an ELECTRA step, and the
   place to start if a profile says otherwise. */
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/dropout_kernels.cuh"
#include "contract/sample_math.h"

namespace lmrt::cuda::detail {
namespace {

template <typename T>
__global__ void sampleKernel(const T *logits, const uint32_t *bits, int32_t *ids, int64_t rows, int64_t v) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x)
    ids[r] = lmc::sampleRow(logits + r * v, v, bits[r]);
}

void runSample(const OpCall &call) {
  const int64_t rows = call.out[0].numel(), v = call.in[0].shape().back();
  if (rows == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    sampleKernel<T><<<gridFor(rows), kThreads, 0, call.stream>>>(
        call.in[0].as<T>(), call.in[1].as<uint32_t>(), call.out[0].as<int32_t>(), rows, v);
    CUDA_CHECK_LAUNCH();
  });
}

template <typename T> __global__ void toFloatKernel(const int32_t *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = (T)x[i];
}

void runToFloat(const OpCall &call) {
  const int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.out[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    toFloatKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<int32_t>(), call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

/* C's truncation; a value outside the i32 range (or NaN) gives 0 here, where
   the CPU kernel raises an error (a kernel cannot). */
template <typename T> __global__ void toIntKernel(const T *x, int32_t *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const double v = (double)x[i];
    y[i] = v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : 0;
  }
}

void runToInt(const OpCall &call) {
  const int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    toIntKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<int32_t>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

void runDropout(const OpCall &call) {
  const int64_t total = call.in[0].numel(), rows = call.in[0].shape()[0];
  if (total == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    drop::launchDropout<T>(
        [&](auto kernel, unsigned blocks, int threads, auto... args) {
          kernel<<<blocks, threads, 0, call.stream>>>(args...);
          CUDA_CHECK_LAUNCH();
        },
        gridFor(total), kThreads, call.in[0].as<T>(), call.in[1].as<int32_t>(), call.out[0].as<T>(), total, rows,
        call.attrs.getInt("site"), call.attrs.getFloat("p"),
        call.in[1].shape().size() == 3);
  });
}

}  // namespace

void addSampleKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"sample", runSample, noScratch});
  k.push_back({"to_float", runToFloat, noScratch});
  k.push_back({"to_int", runToInt, noScratch});
  k.push_back({"dropout", runDropout, noScratch});
}

}  // namespace lmrt::cuda::detail
