/* Implements: lm.dynamic_slice and lm.cache_write on the GPU (incremental
   decoding, runtime/cpu/kernels/decode.cpp on the CPU), for any element type (4- or
   8-byte words). The position offset is an i32 scalar in device memory, read by
   the kernels themselves so that a decode step never waits for the host. The
   program boundary refuses an offset outside its bound before it reaches the
   device; should one arrive anyway, dynamic_slice writes all-ones bits (NaN for
   floats) and cache_write writes nothing, rather than touch memory out of bounds. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

/* y[o, r, i] = x[o, *offset + start + r, i] for r < size, i < inner (in words). */
template <typename W>
__global__ void dynamicSlice(const W *x, W *y, const int32_t *offset, int64_t start, int64_t outer, int64_t dim,
                             int64_t size, int64_t inner) {
  const int64_t first = (int64_t)*offset + start, n = outer * size * inner;
  const bool bad = first < 0 || first > dim - size;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = e % inner, r = (e / inner) % size, o = e / (inner * size);
    y[e] = bad ? ~W(0) : x[(o * dim + first + r) * inner + i];
  }
}

void runDynamicSlice(const OpCall &call) {
  const Shape &xs = call.in[0].shape();
  const int64_t axis = call.attrs.getInt("axis"), start = call.attrs.getInt("start"), size = call.attrs.getInt("size");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  const int32_t *off = call.in[1].as<int32_t>();
  if (dtypeSize(call.in[0].type.dtype) == 8)
    dynamicSlice<uint64_t><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<uint64_t>(),
                                                                     call.out[0].as<uint64_t>(), off, start, outer,
                                                                     xs[axis], size, inner);
  else
    dynamicSlice<uint32_t><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<uint32_t>(),
                                                                     call.out[0].as<uint32_t>(), off, start, outer,
                                                                     xs[axis], size, inner);
  CUDA_CHECK_LAUNCH();
}

/* cache[b, *offset + r, i] = x[b, r, i] for r < C (rows of `row` words). */
template <typename W>
__global__ void cacheWrite(W *cache, const W *x, const int32_t *offset, int64_t B, int64_t Wn, int64_t C,
                           int64_t row) {
  const int64_t first = *offset, n = B * C * row;
  if (first < 0 || first > Wn - C) return;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = e % row, r = (e / row) % C, b = e / (row * C);
    cache[(b * Wn + first + r) * row + i] = x[e];
  }
}

void runCacheWrite(const OpCall &call) {
  const Shape &cs = call.in[0].shape(), &xs = call.in[1].shape();
  // Not in place (a plan may give the result its own buffer): start from the cache.
  if (call.out[0].data != call.in[0].data)
    CUDA_CHECK(cudaMemcpyAsync(call.out[0].data, call.in[0].data, (size_t)call.in[0].type.bytes(),
                               cudaMemcpyDeviceToDevice, call.stream));
  const int64_t n = call.in[1].numel();
  if (n == 0) return;
  const int32_t *off = call.in[2].as<int32_t>();
  if (dtypeSize(call.in[0].type.dtype) == 8)
    cacheWrite<uint64_t><<<gridFor(n), kThreads, 0, call.stream>>>(call.out[0].as<uint64_t>(),
                                                                   call.in[1].as<uint64_t>(), off, cs[0], cs[1],
                                                                   xs[1], cs[2]);
  else
    cacheWrite<uint32_t><<<gridFor(n), kThreads, 0, call.stream>>>(call.out[0].as<uint32_t>(),
                                                                   call.in[1].as<uint32_t>(), off, cs[0], cs[1],
                                                                   xs[1], cs[2]);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void addDecodeKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"dynamic_slice", runDynamicSlice, noScratch});
  k.push_back({"cache_write", runCacheWrite, noScratch});
}

}  // namespace lmrt::cuda::detail
