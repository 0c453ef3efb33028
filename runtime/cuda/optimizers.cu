/* Implements: optimizer.h's SGD, Lion, LAMB and Adafactor launches; the kernels, the
   CPU's formulas (runtime/cpu/optimizers.cpp; docs/runtime.md, "Optimizers"), are
   optimizer_kernels.cuh's, which this file is compiled for with --fmad=false. */
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/optimizer.h"
#include "runtime/cuda/optimizer_kernels.cuh"

namespace lmrt::cuda {
namespace {

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
    opt::sgd<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(
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
    opt::lion<T><<<(unsigned)numChunks, detail::kThreads, 0, stream>>>(
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
    opt::lamb<T><<<(unsigned)numSlices, detail::kThreads, 0, stream>>>(
        static_cast<T *>(params), static_cast<const T *>(grads), static_cast<T *>(m), static_cast<T *>(v), slices,
        gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

void launchAdafactor(DType dtype, void *params, const void *grads, void *s0, void *s1, const ParamSlice *slices,
                     int64_t numSlices, double gradScale, const OptimizerStep &step, cudaStream_t stream) {
  if (numSlices == 0) return;
  checkGrid("adafactor", numSlices);
  detail::byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    opt::adafactor<T><<<(unsigned)numSlices, detail::kThreads, 0, stream>>>(
        static_cast<T *>(params), static_cast<const T *>(grads), static_cast<T *>(s0), static_cast<T *>(s1), slices,
        gradScale, step);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace lmrt::cuda
