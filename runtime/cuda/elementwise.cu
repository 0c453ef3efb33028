/* Implements: the broadcasting ops outside the elementwise table on the GPU:
   lm.where_int (i32 values selected by a float mask, NumPy broadcasting through
   StridedIndex) and lm.sum_to, which reduces leading dims (bias gradients) in two
   deterministic passes: partial sums of fixed 64-row chunks, then the chunks in
   order. The table's ops (lm.add, lm.where, lm.gelu, ...) are in math.cu. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {

void checkRank(const char *op, const Shape &s) {
  if ((int)s.size() > kMaxRank)
    fail("%s: rank %zu is more than the CUDA kernels index (%d)", op, s.size(), kMaxRank);
}

namespace {

// --- where_int ------------------------------------------------------------------

// i32 values by a float mask (f32 or f64), broadcasting as where.
template <typename C>
__global__ void whereIntKernel(const C *c, const int32_t *a, const int32_t *b, int32_t *y, int64_t n,
                               StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    ix.offsets(i, off, 3);
    y[i] = c[off[0]] != (C)0 ? a[off[1]] : b[off[2]];
  }
}

void runWhereInt(const OpCall &call) {
  const Shape &os = call.out[0].shape();
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  checkRank("broadcast", os);
  StridedIndex ix;
  ix.rank = (int)os.size();
  for (int d = 0; d < ix.rank; ++d) ix.shape[d] = os[d];
  for (size_t o = 0; o < call.in.size(); ++o) broadcastStrides(call.in[o].shape(), os, ix.stride[o]);
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using C = decltype(t);
    whereIntKernel<C><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<C>(), call.in[1].as<int32_t>(),
                                                                call.in[2].as<int32_t>(), call.out[0].as<int32_t>(),
                                                                n, ix);
    CUDA_CHECK_LAUNCH();
  });
}

// --- sum_to -------------------------------------------------------------------

constexpr int64_t kRowChunk = 64;

/* True when `s` (leading 1s dropped) is the trailing dims of `full`. */
bool isSuffixOf(const Shape &s, const Shape &full) {
  size_t i = 0;
  while (i < s.size() && s[i] == 1) ++i;
  size_t len = s.size() - i;
  if (len > full.size()) return false;
  return std::equal(s.begin() + i, s.end(), full.end() - len);
}

/* partial[chunk][c] = sum of x[r][c] over the rows of the chunk, in row order. */
template <typename T>
__global__ void columnPartials(const T *x, int64_t rows, int64_t cols, double *partial) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, chunk = blockIdx.y;
  if (c >= cols) return;
  const int64_t r0 = chunk * kRowChunk, r1 = min(rows, r0 + kRowChunk);
  double s = 0;
  for (int64_t r = r0; r < r1; ++r) s += (double)x[r * cols + c];
  partial[chunk * cols + c] = s;
}

template <typename T> __global__ void columnFinish(const double *partial, int64_t chunks, int64_t cols, T *out) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
    double s = 0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[k * cols + c];
    out[c] = (T)s;
  }
}

/* General sum_to: one thread per output element walks the reduced index space. */
template <typename T>
__global__ void sumToGeneral(const T *x, T *out, int64_t m, StridedIndex outIx, StridedIndex redIx, int64_t nred) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < m; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t base;
    outIx.offsets(o, &base, 1);
    double s = 0;
    for (int64_t j = 0; j < nred; ++j) {
      int64_t off;
      redIx.offsets(j, &off, 1);
      s += (double)x[base + off];
    }
    out[o] = (T)s;
  }
}

size_t sumToScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const kernels::Attrs &) {
  int64_t n = in[0].numel(), m = out[0].numel();
  if (m == 0 || n == m) return 0;
  int64_t rows = n / m;
  return (size_t)((rows + kRowChunk - 1) / kRowChunk) * (size_t)m * sizeof(double);
}

void runSumTo(const OpCall &call) {
  const DevTensor &x = call.in[0], &o = call.out[0];
  const int64_t n = x.numel(), m = o.numel();
  if (m == 0) return;
  byFloat(x.type.dtype, [&](auto t) {
    using T = decltype(t);
    if (n == m) {
      CUDA_CHECK(cudaMemcpyAsync(o.data, x.data, n * sizeof(T), cudaMemcpyDeviceToDevice, call.stream));
      return;
    }
    if (isSuffixOf(o.shape(), x.shape())) {  // reduce the leading dims: column sums (m == 1 included)
      const int64_t rows = n / m, chunks = (rows + kRowChunk - 1) / kRowChunk;
      double *partial = static_cast<double *>(call.scratch);
      dim3 grid((unsigned)((m + kThreads - 1) / kThreads), (unsigned)chunks);
      if (chunks > 65535) fail("sum_to: %lld row chunks exceed the CUDA grid", (long long)chunks);
      columnPartials<T><<<grid, kThreads, 0, call.stream>>>(x.as<T>(), rows, m, partial);
      CUDA_CHECK_LAUNCH();
      columnFinish<T><<<gridFor(m), kThreads, 0, call.stream>>>(partial, chunks, m, o.as<T>());
      CUDA_CHECK_LAUNCH();
      return;
    }
    // General: outIx maps an output index to its first input element, redIx walks
    // the dims the output broadcasts along.
    const Shape &xs = x.shape();
    checkRank("sum_to", xs);
    int64_t xst[kMaxRank], ost[kMaxRank];
    contiguousStrides(xs, xst);
    broadcastStrides(o.shape(), xs, ost);
    StridedIndex outIx, redIx;
    int64_t nred = 1;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (ost[d] == 0 && xs[d] != 1) {
        redIx.shape[redIx.rank] = xs[d];
        redIx.stride[0][redIx.rank++] = xst[d];
        nred *= xs[d];
      } else {
        outIx.shape[outIx.rank] = xs[d];
        outIx.stride[0][outIx.rank++] = xst[d];
      }
    }
    sumToGeneral<T><<<gridFor(m), kThreads, 0, call.stream>>>(x.as<T>(), o.as<T>(), m, outIx, redIx, nred);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addElementwiseKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"where_int", runWhereInt, noScratch});
  k.push_back({"sum_to", runSumTo, sumToScratch});
}

}  // namespace lmrt::cuda::detail
