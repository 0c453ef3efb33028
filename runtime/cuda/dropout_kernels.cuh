/* Implements: the device code of lm.dropout (runtime/cuda/sample.cu launches it):
   one thread an element over a grid-stride loop, each deciding with the CPU
   kernel's function (contract/dropout_math.h) from its row's key, the site and
   its index within the row, so both backends drop the same elements. No
   synchronisation, so the CPU emulation in test/Unit/cuda_emu runs it as is. */
#pragma once
#include <cstdint>

#include "contract/dropout_math.h"

#ifndef LMRT_CUDA_EMULATION
#include <cuda_runtime.h>
#endif

namespace lmrt::cuda::drop {

template <typename T>
__global__ void dropoutKernel(const T *x, const int32_t *key, T *y, int64_t total, int64_t n, int64_t site,
                              uint32_t threshold, T scale, bool parts) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = e / n, i = e - r * n;
    y[e] = x[e] * lmc::dropoutFactor<T>(lmc::dropoutStream(key + 2 * r, site),
                                        lmc::dropoutPartBase(key, parts, total / n, r, (uint64_t)n) + (uint64_t)i,
                                        threshold, scale);
  }
}

/* x [rows, n...] (total elements, n a row) at rate p, key [rows, 2] or a part's
   [2, rows, 2] (parts, dropout_math.h); `launch(kernel, blocks, threads,
   args...)` enqueues. */
template <typename T, typename L>
void launchDropout(L &&launch, unsigned blocks, int threads, const T *x, const int32_t *key, T *y, int64_t total,
                   int64_t rows, int64_t site, double p, bool parts = false) {
  launch(dropoutKernel<T>, blocks, threads, x, key, y, total, total / rows, site, lmc::dropoutThreshold(p),
         (T)(1.0 / (1.0 - p)), parts);
}

}  // namespace lmrt::cuda::drop
