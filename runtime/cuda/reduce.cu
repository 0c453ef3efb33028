/* Implements: lm.concat (two operands along one axis: two pitched copies, each
   operand's rows into its columns of the result's rows; one thread per output element
   where a pitch exceeds what cudaMemcpy2DAsync takes) and lm.reduce_max (one thread per
   output element walks the reduced dims in order: the same bits every run) on
   the GPU, as runtime/cpu/kernels/reduce.cpp on the CPU. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

template <typename T>
__global__ void concatKernel(const T *a, const T *b, T *y, int64_t n, int64_t na, int64_t nb) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / (na + nb), c = i - r * (na + nb);
    y[i] = c < na ? a[r * na + c] : b[r * nb + (c - na)];
  }
}

void runConcat(const OpCall &call) {
  const DevTensor &a = call.in[0], &b = call.in[1], &o = call.out[0];
  const int64_t n = o.numel();
  if (n == 0) return;
  const size_t axis = (size_t)call.attrs.getInt("axis");
  const int64_t na = product(a.shape(), axis, a.shape().size()), nb = product(b.shape(), axis, b.shape().size());
  const size_t es = dtypeSize(o.type.dtype), pitch = (size_t)(na + nb) * es;
  if (pitch <= (size_t)INT32_MAX) {  // cudaMemcpy2D's pitches are bounded (cudaDevAttrMaxPitch)
    // The packed QKV gradient of GPT-2 (dq | dk | dv) at copy-engine speed, not an index
    // division per element.
    const size_t rows = (size_t)(n / (na + nb));
    if (na > 0)
      CUDA_CHECK(cudaMemcpy2DAsync(o.data, pitch, a.data, (size_t)na * es, (size_t)na * es, rows,
                                   cudaMemcpyDeviceToDevice, call.stream));
    if (nb > 0)
      CUDA_CHECK(cudaMemcpy2DAsync(o.as<char>() + (size_t)na * es, pitch, b.data, (size_t)nb * es, (size_t)nb * es,
                                   rows, cudaMemcpyDeviceToDevice, call.stream));
    return;
  }
  byFloat(o.type.dtype, [&](auto t) {
    using T = decltype(t);
    concatKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(a.as<T>(), b.as<T>(), o.as<T>(), n, na, nb);
    CUDA_CHECK_LAUNCH();
  });
}

/* outIx maps an output index to its first x element; redIx walks the reduced dims. */
template <typename T>
__global__ void reduceMaxKernel(const T *x, T *out, int64_t m, StridedIndex outIx, StridedIndex redIx, int64_t nred) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < m; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t base;
    outIx.offsets(o, &base, 1);
    T mx = x[base];
    for (int64_t j = 1; j < nred; ++j) {
      int64_t off;
      redIx.offsets(j, &off, 1);
      const T v = x[base + off];
      mx = (v > mx || v != v) ? v : mx;  // NaN wins, as on the CPU
    }
    out[o] = mx;
  }
}

void runReduceMax(const OpCall &call) {
  const DevTensor &x = call.in[0], &o = call.out[0];
  const int64_t m = o.numel();
  if (m == 0 || x.numel() == 0) return;
  const Shape &xs = x.shape();
  checkRank("reduce_max", xs);
  int64_t xst[kMaxRank];
  contiguousStrides(xs, xst);
  StridedIndex outIx, redIx;
  int64_t nred = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (o.shape()[d] == 1 && xs[d] != 1) {
      redIx.shape[redIx.rank] = xs[d];
      redIx.stride[0][redIx.rank++] = xst[d];
      nred *= xs[d];
    } else {
      outIx.shape[outIx.rank] = xs[d];
      outIx.stride[0][outIx.rank++] = xst[d];
    }
  }
  byFloat(x.type.dtype, [&](auto t) {
    using T = decltype(t);
    reduceMaxKernel<T><<<gridFor(m), kThreads, 0, call.stream>>>(x.as<T>(), o.as<T>(), m, outIx, redIx, nred);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addReduceKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"concat", runConcat, noScratch});
  k.push_back({"reduce_max", runReduceMax, noScratch});
}

}  // namespace lmrt::cuda::detail
