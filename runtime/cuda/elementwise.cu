/* Implements: lm.add/sub/mul/div with NumPy broadcasting, lm.neg, lm.gelu,
   lm.gelu_grad, lm.gelu_erf, lm.gelu_erf_grad and lm.sum_to on the GPU, with the scalar math of the CPU
   kernels (contract/scalar_math.h: lmc::gelu, lmc::geluGrad).
   sum_to reduces leading dims (bias gradients) in two deterministic passes:
   partial sums of fixed 64-row chunks, then the chunks in order. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {

void checkRank(const char *op, const Shape &s) {
  if ((int)s.size() > kMaxRank)
    fail("%s: rank %zu is more than the CUDA kernels index (%d)", op, s.size(), kMaxRank);
}

namespace {

struct Add { template <typename T> __device__ static T f(T a, T b) { return a + b; } };
struct Sub { template <typename T> __device__ static T f(T a, T b) { return a - b; } };
struct Mul { template <typename T> __device__ static T f(T a, T b) { return a * b; } };
struct Div { template <typename T> __device__ static T f(T a, T b) { return a / b; } };

template <typename Op, typename T> __global__ void binarySame(const T *a, const T *b, T *c, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    c[i] = Op::f(a[i], b[i]);
}

template <typename Op, typename T> __global__ void binaryStrided(const T *a, const T *b, T *c, int64_t n, StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    ix.offsets(i, off, 2);
    c[i] = Op::f(a[off[0]], b[off[1]]);
  }
}

template <typename Op> void runBinary(const OpCall &call) {
  const DevTensor &l = call.in[0], &r = call.in[1], &o = call.out[0];
  const int64_t n = o.numel();
  if (n == 0) return;
  byFloat(o.type.dtype, [&](auto t) {
    using T = decltype(t);
    if (l.numel() == n && r.numel() == n) {
      binarySame<Op, T><<<gridFor(n), kThreads, 0, call.stream>>>(l.as<T>(), r.as<T>(), o.as<T>(), n);
    } else {
      checkRank("broadcast", o.shape());
      StridedIndex ix;
      ix.rank = (int)o.shape().size();
      for (int d = 0; d < ix.rank; ++d) ix.shape[d] = o.shape()[d];
      broadcastStrides(l.shape(), o.shape(), ix.stride[0]);
      broadcastStrides(r.shape(), o.shape(), ix.stride[1]);
      binaryStrided<Op, T><<<gridFor(n), kThreads, 0, call.stream>>>(l.as<T>(), r.as<T>(), o.as<T>(), n, ix);
    }
    CUDA_CHECK_LAUNCH();
  });
}

// --- neg, gelu, gelu_grad -----------------------------------------------------

template <typename T> __global__ void negKernel(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = -x[i];
}
template <typename T> __global__ void geluKernel(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = lmc::gelu(x[i]);
}
template <typename T> __global__ void geluGradKernel(const T *x, const T *dy, T *dx, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = lmc::geluGrad(x[i], dy[i]);
}

template <typename T> __global__ void geluErfKernel(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = lmc::geluErf(x[i]);
}
template <typename T> __global__ void geluErfGradKernel(const T *x, const T *dy, T *dx, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = lmc::geluErfGrad(x[i], dy[i]);
}

void runNeg(const OpCall &call) {
  int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    negKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

void runGelu(const OpCall &call) {
  int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

void runGeluGrad(const OpCall &call) {
  int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluGradKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                                call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

void runGeluErf(const OpCall &call) {
  int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluErfKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

void runGeluErfGrad(const OpCall &call) {
  int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluErfGradKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                                   call.out[0].as<T>(), n);
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
  k.push_back({"add", runBinary<Add>, noScratch});
  k.push_back({"sub", runBinary<Sub>, noScratch});
  k.push_back({"mul", runBinary<Mul>, noScratch});
  k.push_back({"div", runBinary<Div>, noScratch});
  k.push_back({"neg", runNeg, noScratch});
  k.push_back({"gelu", runGelu, noScratch});
  k.push_back({"gelu_grad", runGeluGrad, noScratch});
  k.push_back({"gelu_erf", runGeluErf, noScratch});
  k.push_back({"gelu_erf_grad", runGeluErfGrad, noScratch});
  k.push_back({"sum_to", runSumTo, sumToScratch});
}

}  // namespace lmrt::cuda::detail
