/* Implements: the device code of lm.embedding_grad and lm.embedding_grad_add
   (runtime/cuda/embedding.cu launches it): the dy rows added into the table rows their
   ids name, without atomics, so the same bits every run: thread (column j, vocabulary
   part p) walks all ids in order and adds the rows whose id falls in part p; every
   table element has one owner, and the parts multiply the parallelism of D columns.
   The ids pass through shared memory a tile at a time, so the walk over all of them
   (8192 for GPT-2 at batch 8 x seq 1024) reads shared memory, not global. An id
   outside the vocabulary (lmrt checks token inputs on the host first) makes dt[0]
   NaN rather than an out-of-bounds access. Only __syncthreads synchronises, so the
   CPU emulation in test/Unit/cuda_emu runs it too. */
#pragma once
#include <algorithm>
#include <cstdint>

#ifndef LMRT_CUDA_EMULATION
#include <cuda_runtime.h>
#endif

namespace lmrt::cuda::embed {

constexpr int kThreads = 256, kIdTile = 2048;

template <typename T>
__global__ void scatterAdd(const int32_t *ids, const T *dy, T *dt, int64_t n, int64_t v, int64_t d, int64_t parts) {
  __shared__ int32_t idTile[kIdTile];
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, p = blockIdx.y;
  const int64_t per = (v + parts - 1) / parts, lo = p * per, hi = min(v, lo + per);
  for (int64_t i0 = 0; i0 < n; i0 += kIdTile) {
    const int64_t m = min((int64_t)kIdTile, n - i0);
    __syncthreads();  // the previous tile is read
    for (int64_t t = threadIdx.x; t < m; t += blockDim.x) idTile[t] = ids[i0 + t];
    __syncthreads();
    if (j >= d) continue;
    for (int64_t t = 0; t < m; ++t) {
      const int32_t id = idTile[t];
      if (id >= lo && id < hi) dt[(int64_t)id * d + j] += dy[(i0 + t) * d + j];
      if (p == 0 && j == 0 && (id < 0 || id >= v)) dt[0] = T(NAN);
    }
  }
}

/* Parts: enough for about 128K threads in all, none smaller than 64 rows. */
inline int64_t scatterParts(int64_t v, int64_t d) {
  return std::max<int64_t>(1, std::min<int64_t>({256, (131072 + d - 1) / d, (v + 63) / 64}));
}

template <typename T, typename L>
void launchScatterAdd(L &&launch, const int32_t *ids, const T *dy, T *dt, int64_t n, int64_t v, int64_t d) {
  const int64_t parts = scatterParts(v, d);
  launch(scatterAdd<T>, (unsigned)((d + kThreads - 1) / kThreads), (unsigned)parts, kThreads, ids, dy, dt, n, v, d,
         parts);
}

}  // namespace lmrt::cuda::embed
