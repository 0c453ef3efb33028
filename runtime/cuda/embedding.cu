/* Implements: lm.embedding (row gather) and lm.embedding_grad (scatter-add of dy
   rows into a zeroed [V, D] table) on the GPU. The backward uses no atomics, so
   it gives the same bits every run: thread (column j, vocabulary part p) walks
   all ids in order and adds the rows whose id falls in part p; every table
   element has one owner, and the parts multiply the parallelism of D columns.
   Ids outside the vocabulary (lmrt checks token inputs on the host first) give
   NaN rows rather than out-of-bounds accesses. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

template <typename T> __global__ void gather(const T *table, const int32_t *ids, T *out, int64_t n, int64_t v, int64_t d) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * d; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / d, col = i - row * d;
    const int32_t id = ids[row];
    out[i] = (id >= 0 && id < v) ? table[(int64_t)id * d + col] : T(NAN);
  }
}

template <typename T>
__global__ void scatterAdd(const int32_t *ids, const T *dy, T *dt, int64_t n, int64_t v, int64_t d, int64_t parts) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, p = blockIdx.y;
  if (j >= d) return;
  const int64_t per = (v + parts - 1) / parts, lo = p * per, hi = min(v, lo + per);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (id >= lo && id < hi) dt[(int64_t)id * d + j] += dy[i * d + j];
    if (p == 0 && (id < 0 || id >= v) && j == 0) dt[0] = T(NAN);
  }
}

void runEmbedding(const OpCall &call) {
  const int64_t v = call.in[0].shape()[0], d = call.in[0].shape()[1], n = call.in[1].numel();
  if (n * d == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    gather<T><<<gridFor(n * d), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<int32_t>(),
                                                            call.out[0].as<T>(), n, v, d);
    CUDA_CHECK_LAUNCH();
  });
}

void runEmbeddingGrad(const OpCall &call) {
  const int64_t v = call.out[0].shape()[0], d = call.out[0].shape()[1], n = call.in[0].numel();
  byFloat(call.in[1].type.dtype, [&](auto t) {
    using T = decltype(t);
    CUDA_CHECK(cudaMemsetAsync(call.out[0].data, 0, (size_t)(v * d) * sizeof(T), call.stream));
    if (n * d == 0) return;
    // Parts: about 16K threads in all, and no part smaller than 64 rows.
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>({64, (16384 + d - 1) / d, (v + 63) / 64}));
    dim3 grid((unsigned)((d + kThreads - 1) / kThreads), (unsigned)parts);
    scatterAdd<T><<<grid, kThreads, 0, call.stream>>>(call.in[0].as<int32_t>(), call.in[1].as<T>(),
                                                      call.out[0].as<T>(), n, v, d, parts);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addEmbeddingKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"embedding", runEmbedding, noScratch});
  k.push_back({"embedding_grad", runEmbeddingGrad, noScratch});
}

}  // namespace lmrt::cuda::detail
