/* Implements: lm.softmax, lm.softmax_grad, lm.cross_entropy,
   lm.cross_entropy_grad, lm.cross_entropy_with_grad, lm.linear_cross_entropy(_with_grad)
   (the row kernels below between cuBLASLt GEMMs, chunk by chunk; bf16 and f16
   operands too) and lm.accuracy on the GPU: one block per row, block reductions in a
   fixed order. Cross-entropy's mean is over the targets that are not
   ignore_index: a one-block pass counts them, the rows' losses are summed in
   row order (double) by another. A target outside the vocabulary (lmrt checks
   token inputs on the host first) makes its row's loss NaN instead of reading
   out of bounds, which the training loop reports as a diverged step. */
#include "contract/linear_cross_entropy.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

template <typename T> __device__ T expOf(T x) { return lmc::exp(x); }

template <typename T> __global__ void softmaxKernel(const T *x, T *y, int64_t rows, int64_t v) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * v;
    T *yr = y + r * v;
    T mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) mx = max(mx, xr[j]);
    mx = blockMax(mx);
    T s = 0;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) s += (yr[j] = expOf(xr[j] - mx));
    const T inv = T(1) / blockSum(s);
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) yr[j] *= inv;
  }
}

template <typename T> __global__ void softmaxGradKernel(const T *y, const T *dy, T *dx, int64_t rows, int64_t v) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *yr = y + r * v, *dyr = dy + r * v;
    T *dxr = dx + r * v;
    T s = 0;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) s += yr[j] * dyr[j];
    s = blockSum(s);
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) dxr[j] = yr[j] * (dyr[j] - s);
  }
}

/* *valid = the number of targets that are not ignore_index (one block). */
__global__ void countValid(const int32_t *tg, int64_t n, int64_t ignore, long long *valid) {
  long long c = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) c += tg[i] != ignore;
  c = blockSum(c);
  if (threadIdx.x == 0) *valid = c;
}

template <typename T>
__global__ void crossEntropyRows(const T *x, const int32_t *tg, int64_t rows, int64_t v, int64_t ignore,
                                 double *rowLoss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t t = tg[r];
    if (t == ignore) {
      if (threadIdx.x == 0) rowLoss[r] = 0;
      continue;
    }
    const T *xr = x + r * v;
    T mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) mx = max(mx, xr[j]);
    mx = blockMax(mx);
    T s = 0;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) s += expOf(xr[j] - mx);
    s = blockSum(s);
    if (threadIdx.x == 0) rowLoss[r] = (t < 0 || t >= v) ? NAN : (double)(mx + log(s) - xr[t]);
  }
}

template <typename T>
__global__ void crossEntropyFinish(const double *rowLoss, int64_t rows, const long long *valid, T *loss) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) s += rowLoss[i];
  s = blockSum(s);
  if (threadIdx.x == 0) *loss = *valid ? (T)(s / (double)*valid) : (T)0;
}

/* dlogits, and each row's loss when rowLoss is not null (cross_entropy_with_grad),
   from one read of each row. dx may be x itself: every thread reads the target logit
   before the block's max reduction (a barrier) and before any row element is
   written, and each element is read by the thread that overwrites it. */
template <typename T>
__global__ void crossEntropyGradRows(const T *x, const int32_t *tg, const T *dloss, const long long *valid, T *dx,
                                     int64_t rows, int64_t v, int64_t ignore, double *rowLoss) {
  const T scale = *valid ? dloss[0] / (T)*valid : T(0);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t t = tg[r];
    const T *xr = x + r * v;
    T *dxr = dx + r * v;
    if (t == ignore) {
      for (int64_t j = threadIdx.x; j < v; j += blockDim.x) dxr[j] = 0;
      if (rowLoss && threadIdx.x == 0) rowLoss[r] = 0;
      __syncthreads();
      continue;
    }
    const bool inVocab = t >= 0 && t < v;
    const T target = inVocab ? xr[t] : T(0);
    T mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) mx = max(mx, xr[j]);
    mx = blockMax(mx);
    T s = 0;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) s += (dxr[j] = expOf(xr[j] - mx));
    s = blockSum(s);
    const T k = scale / s;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) dxr[j] *= k;
    __syncthreads();  // the target's element may have been written by another thread
    if (threadIdx.x == 0) {
      if (rowLoss) rowLoss[r] = inVocab ? (double)(mx + log(s) - target) : NAN;
      if (inVocab)
        dxr[t] -= scale;
      else
        dxr[0] = NAN;
    }
    __syncthreads();  // before the next row's target read
  }
}

void rowsOf(const Shape &s, int64_t &rows, int64_t &v) {
  v = s.empty() ? 1 : s.back();
  rows = v ? numel(s) / v : 0;
}

unsigned rowBlocks(int64_t rows) { return (unsigned)std::max<int64_t>(1, std::min<int64_t>(rows, 1 << 16)); }

void runSoftmax(const OpCall &call) {
  int64_t rows, v;
  rowsOf(call.in[0].shape(), rows, v);
  if (rows * v == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    softmaxKernel<T><<<rowBlocks(rows), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<T>(), rows, v);
    CUDA_CHECK_LAUNCH();
  });
}

void runSoftmaxGrad(const OpCall &call) {
  int64_t rows, v;
  rowsOf(call.in[0].shape(), rows, v);
  if (rows * v == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    softmaxGradKernel<T><<<rowBlocks(rows), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                                        call.out[0].as<T>(), rows, v);
    CUDA_CHECK_LAUNCH();
  });
}

size_t crossEntropyScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &) {
  return 256 + (size_t)in[1].numel() * sizeof(double);
}

void runCrossEntropy(const OpCall &call) {
  const int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  const int64_t ignore = call.attrs.getInt("ignore_index");
  long long *valid = static_cast<long long *>(call.scratch);
  double *rowLoss = reinterpret_cast<double *>(static_cast<char *>(call.scratch) + 256);
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    countValid<<<1, 1024, 0, call.stream>>>(call.in[1].as<int32_t>(), rows, ignore, valid);
    CUDA_CHECK_LAUNCH();
    if (rows > 0) {
      crossEntropyRows<T><<<rowBlocks(rows), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<int32_t>(),
                                                                         rows, v, ignore, rowLoss);
      CUDA_CHECK_LAUNCH();
    }
    crossEntropyFinish<T><<<1, 1024, 0, call.stream>>>(rowLoss, rows, valid, call.out[0].as<T>());
    CUDA_CHECK_LAUNCH();
  });
}

/* cross_entropy_grad, or with loss (output 1) cross_entropy_with_grad. */
void runCrossEntropyGradRows(const OpCall &call, bool withLoss) {
  const int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  const int64_t ignore = call.attrs.getInt("ignore_index");
  long long *valid = static_cast<long long *>(call.scratch);
  double *rowLoss = withLoss ? reinterpret_cast<double *>(static_cast<char *>(call.scratch) + 256) : nullptr;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    countValid<<<1, 1024, 0, call.stream>>>(call.in[1].as<int32_t>(), rows, ignore, valid);
    CUDA_CHECK_LAUNCH();
    if (rows > 0) {
      crossEntropyGradRows<T><<<rowBlocks(rows), kThreads, 0, call.stream>>>(
          call.in[0].as<T>(), call.in[1].as<int32_t>(), call.in[2].as<T>(), valid, call.out[0].as<T>(), rows, v,
          ignore, rowLoss);
      CUDA_CHECK_LAUNCH();
    }
    if (withLoss) {
      crossEntropyFinish<T><<<1, 1024, 0, call.stream>>>(rowLoss, rows, valid, call.out[1].as<T>());
      CUDA_CHECK_LAUNCH();
    }
  });
}

void runCrossEntropyGrad(const OpCall &call) { runCrossEntropyGradRows(call, false); }
void runCrossEntropyWithGrad(const OpCall &call) { runCrossEntropyGradRows(call, true); }

/* linear_cross_entropy(_with_grad): per chunk of rows, the logits GEMM into the
   step's scratch, the row kernels above on the chunk (the gradient in place), then
   dh_chunk = dlogits w and dw += dlogits^T h_chunk (cuBLASLt, accumulating from the
   second chunk). The chunk is the GPU's (linearCrossEntropyCudaChunkRows: thousands of
   rows where lmc chose the CPU's rule, chunk_rows where it was set by hand). Scratch: the valid count, one double a row, one [chunk, V] chunk.
   bf16 or f16 h and w (-lm-mixed-precision), as the CPU kernel
   (runtime/cpu/kernels/linear_cross_entropy.cpp): the GEMMs take the reduced
   operands and accumulate in fp32, the logits, loss, dh and dw are f32, and the
   backward GEMMs read the chunk's gradient rounded to the operands' type, in a
   second [chunk, V] scratch. */
size_t linearCeChunkOffset(int64_t rows) { return 256 + ((size_t)rows * sizeof(double) + 255) / 256 * 256; }

bool reducedType(DType t) { return t == DType::BF16 || t == DType::F16; }

/* The logits' bytes (f32 for bf16 and f16 operands), rounded up to 256. */
size_t linearCeLogitBytes(int64_t chunk, int64_t v, DType operands) {
  return ((size_t)(chunk * v) * (reducedType(operands) ? 4 : dtypeSize(operands)) + 255) / 256 * 256;
}

size_t linearCrossEntropyScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &,
                                 const kernels::Attrs &attrs) {
  const bool tb = attrs.getBool("transpose_rhs");
  const int64_t rows = in[2].numel(), v = tb ? in[1].shape[0] : in[1].shape[1], d = tb ? in[1].shape[1] : in[1].shape[0];
  const int64_t chunk = kernels::linearCrossEntropyCudaChunkRows(attrs.getInt("chunk_rows"), rows, v, d);
  const size_t copy = reducedType(in[0].dtype) ? (size_t)(chunk * v) * dtypeSize(in[0].dtype) : 0;
  return linearCeChunkOffset(rows) + linearCeLogitBytes(chunk, v, in[0].dtype) + copy;
}

/* y = x rounded to A (round to nearest even: contract/scalar_math.h, as the CPU). */
template <typename A> __global__ void roundTo(const float *x, A *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = lmc::store<A>(x[i]);
}

/* f(T{}, A{}) for h's dtype: the operands' type A and the results' type T. */
template <typename F> void byOperands(DType h, F &&f) {
  if (h == DType::BF16) return f(float{}, lmc::bf16{});
  if (h == DType::F16) return f(float{}, lmc::f16{});
  byFloat(h, [&](auto t) { f(t, t); });
}

void runLinearCrossEntropyRows(const OpCall &call, bool withGrad) {
  const bool tb = call.attrs.getBool("transpose_rhs");
  const int64_t ignore = call.attrs.getInt("ignore_index");
  const int64_t d = call.in[0].shape().back(), rows = call.in[2].numel();
  const int64_t v = tb ? call.in[1].shape()[0] : call.in[1].shape()[1];
  const int64_t chunk = kernels::linearCrossEntropyCudaChunkRows(call.attrs.getInt("chunk_rows"), rows, v, d);
  const DType operands = call.in[0].type.dtype;
  if (call.in[1].type.dtype != operands)
    fail("linear_cross_entropy: h is %s but w is %s", dtypeName(operands), dtypeName(call.in[1].type.dtype));
  long long *valid = static_cast<long long *>(call.scratch);
  double *rowLoss = reinterpret_cast<double *>(static_cast<char *>(call.scratch) + 256);
  void *x = static_cast<char *>(call.scratch) + linearCeChunkOffset(rows);
  void *copy = static_cast<char *>(x) + linearCeLogitBytes(chunk, v, operands);
  const int32_t *tg = call.in[2].as<int32_t>();
  byOperands(operands, [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    constexpr bool reduced = !std::is_same_v<A, T>;
    const A *h = call.in[0].as<A>(), *w = call.in[1].as<A>();
    T *xc = static_cast<T *>(x);
    // What the backward GEMMs read: the gradient in place, or its reduced copy.
    const void *dlogits = reduced ? copy : x;
    countValid<<<1, 1024, 0, call.stream>>>(tg, rows, ignore, valid);
    CUDA_CHECK_LAUNCH();
    if (withGrad && rows == 0) CUDA_CHECK(cudaMemsetAsync(call.out[1].data, 0, call.out[1].numel() * sizeof(T), call.stream));
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t c = std::min(chunk, rows - r0);
      GemmArgs g;  // logits [c, V] = h_c w^T (w [V, D]) or h_c w (w [D, V])
      g.dtype = operands;
      g.tb = tb;
      g.m = c, g.n = v, g.k = d;
      g.a = h + r0 * d, g.lda = d;
      g.b = w, g.ldb = tb ? d : v;
      g.c = xc, g.ldc = v;
      call.gemm.run(g);
      if (!withGrad) {
        crossEntropyRows<T><<<rowBlocks(c), kThreads, 0, call.stream>>>(xc, tg + r0, c, v, ignore, rowLoss + r0);
        CUDA_CHECK_LAUNCH();
        continue;
      }
      crossEntropyGradRows<T><<<rowBlocks(c), kThreads, 0, call.stream>>>(
          xc, tg + r0, call.in[3].as<T>(), valid, xc, c, v, ignore, rowLoss + r0);
      CUDA_CHECK_LAUNCH();
      if constexpr (reduced) {
        roundTo<A><<<gridFor(c * v), kThreads, 0, call.stream>>>(xc, static_cast<A *>(copy), c * v);
        CUDA_CHECK_LAUNCH();
      }
      GemmArgs dh;  // dh_c [c, D] = dlogits_c w (w [V, D]) or dlogits_c w^T (w [D, V])
      dh.dtype = operands;
      dh.tb = !tb;
      dh.m = c, dh.n = d, dh.k = v;
      dh.a = dlogits, dh.lda = v;
      dh.b = w, dh.ldb = tb ? d : v;
      dh.c = call.out[0].as<T>() + r0 * d, dh.ldc = d;
      call.gemm.run(dh);
      GemmArgs dw;  // dw [V, D] += dlogits_c^T h_c, or dw [D, V] += h_c^T dlogits_c
      dw.dtype = operands;
      dw.ta = true;
      dw.m = tb ? v : d, dw.n = tb ? d : v, dw.k = c;
      dw.a = tb ? dlogits : (const void *)(h + r0 * d), dw.lda = tb ? v : d;
      dw.b = tb ? (const void *)(h + r0 * d) : dlogits, dw.ldb = tb ? d : v;
      dw.c = call.out[1].data, dw.ldc = tb ? d : v;
      dw.accumulate = r0 > 0;
      call.gemm.run(dw);
    }
    crossEntropyFinish<T><<<1, 1024, 0, call.stream>>>(rowLoss, rows, valid, call.out[withGrad ? 2 : 0].as<T>());
    CUDA_CHECK_LAUNCH();
  });
}

void runLinearCrossEntropy(const OpCall &call) { runLinearCrossEntropyRows(call, false); }
void runLinearCrossEntropyWithGrad(const OpCall &call) { runLinearCrossEntropyRows(call, true); }

/* correct[r] = 1 when row r's target is its first maximal class (the CPU
   kernel's rule: nothing before it reaches its logit, nothing after exceeds it). */
template <typename T>
__global__ void accuracyRows(const T *x, const int32_t *tg, int64_t rows, int64_t v, int64_t ignore, int *correct) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t t = tg[r];
    if (t == ignore || t < 0 || t >= v) {
      if (threadIdx.x == 0) correct[r] = 0;
      continue;
    }
    const T *xr = x + r * v;
    const T xt = xr[t];
    int beaten = 0;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) beaten += j < t ? xr[j] >= xt : xr[j] > xt;
    beaten = blockSum(beaten);
    if (threadIdx.x == 0) correct[r] = beaten == 0 && xt == xt;
  }
}

template <typename T>
__global__ void accuracyFinish(const int *correct, int64_t rows, const long long *valid, T *acc) {
  long long c = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) c += correct[i];
  c = blockSum(c);
  if (threadIdx.x == 0) *acc = *valid ? (T)((double)c / (double)*valid) : (T)0;
}

size_t accuracyScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &) {
  return 256 + (size_t)in[1].numel() * sizeof(int);
}

void runAccuracy(const OpCall &call) {
  const int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  const int64_t ignore = call.attrs.getInt("ignore_index");
  long long *valid = static_cast<long long *>(call.scratch);
  int *correct = reinterpret_cast<int *>(static_cast<char *>(call.scratch) + 256);
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    countValid<<<1, 1024, 0, call.stream>>>(call.in[1].as<int32_t>(), rows, ignore, valid);
    CUDA_CHECK_LAUNCH();
    if (rows > 0) {
      accuracyRows<T><<<rowBlocks(rows), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<int32_t>(),
                                                                     rows, v, ignore, correct);
      CUDA_CHECK_LAUNCH();
    }
    accuracyFinish<T><<<1, 1024, 0, call.stream>>>(correct, rows, valid, call.out[0].as<T>());
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addSoftmaxKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"softmax", runSoftmax, noScratch});
  k.push_back({"softmax_grad", runSoftmaxGrad, noScratch});
  k.push_back({"cross_entropy", runCrossEntropy, crossEntropyScratch});
  k.push_back({"cross_entropy_grad", runCrossEntropyGrad, crossEntropyScratch});
  k.push_back({"cross_entropy_with_grad", runCrossEntropyWithGrad, crossEntropyScratch});
  k.push_back({"linear_cross_entropy", runLinearCrossEntropy, linearCrossEntropyScratch, true});
  k.push_back({"linear_cross_entropy_with_grad", runLinearCrossEntropyWithGrad, linearCrossEntropyScratch, true});
  k.push_back({"accuracy", runAccuracy, accuracyScratch});
}

}  // namespace lmrt::cuda::detail
