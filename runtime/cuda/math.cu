/* Implements: the zoo's elementwise ops on the GPU: lm.tanh, sigmoid, log_sigmoid,
   relu, silu, exp, log, sqrt, rsqrt, sin, cos, stop_gradient (one grid-stride loop
   each over the scalar forms of contract/scalar_math.h, which the CPU
   kernels and the generated kernels use too), the comparisons lm.gt ... lm.ne and
   lm.where and lm.where_int (NumPy broadcasting through StridedIndex, as lm.add). */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

#define LMRT_CUDA_UNARY(NAME, EXPR) \
  struct NAME {                     \
    template <typename A> __device__ static A f(A x) { return EXPR; } \
  };
LMRT_CUDA_UNARY(Tanh, lmc::tanh(x))
LMRT_CUDA_UNARY(Sigmoid, lmc::sigmoid(x))
LMRT_CUDA_UNARY(LogSigmoid, lmc::logSigmoid(x))
LMRT_CUDA_UNARY(Relu, lmc::relu(x))
LMRT_CUDA_UNARY(Silu, lmc::silu(x))
LMRT_CUDA_UNARY(Exp, lmc::exp(x))
LMRT_CUDA_UNARY(Log, lmc::log(x))
LMRT_CUDA_UNARY(Sqrt, lmc::sqrt(x))
LMRT_CUDA_UNARY(Rsqrt, lmc::rsqrt(x))
LMRT_CUDA_UNARY(Sin, lmc::sin(x))
LMRT_CUDA_UNARY(Cos, lmc::cos(x))
#undef LMRT_CUDA_UNARY

template <typename Fn, typename T> __global__ void unaryKernel(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = Fn::f(x[i]);
}

template <typename Fn> void runUnary(const OpCall &call) {
  const int64_t n = call.in[0].numel();
  if (n == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    unaryKernel<Fn, T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.out[0].as<T>(), n);
    CUDA_CHECK_LAUNCH();
  });
}

/* stop_gradient is the identity forward. */
void runStopGradient(const OpCall &call) {
  const DevTensor &x = call.in[0];
  if (x.numel() == 0 || call.out[0].data == x.data) return;
  CUDA_CHECK(cudaMemcpyAsync(call.out[0].data, x.data, x.numel() * dtypeSize(x.type.dtype), cudaMemcpyDeviceToDevice,
                             call.stream));
}

// --- comparisons (0/1 masks) and where ------------------------------------------

struct Gt { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a > b); } };
struct Ge { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a >= b); } };
struct Lt { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a < b); } };
struct Le { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a <= b); } };
struct Eq { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a == b); } };
struct Ne { template <typename T> __device__ static T f(T a, T b) { return lmc::mask<T>(a != b); } };

/* Fills ix with the output's shape and each operand's broadcast strides. */
void stridesFor(const OpCall &call, StridedIndex &ix) {
  const Shape &os = call.out[0].shape();
  checkRank("broadcast", os);
  ix.rank = (int)os.size();
  for (int d = 0; d < ix.rank; ++d) ix.shape[d] = os[d];
  for (size_t o = 0; o < call.in.size(); ++o) broadcastStrides(call.in[o].shape(), os, ix.stride[o]);
}

template <typename Op, typename T> __global__ void compareKernel(const T *a, const T *b, T *c, int64_t n, StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    ix.offsets(i, off, 2);
    c[i] = Op::f(a[off[0]], b[off[1]]);
  }
}

template <typename Op> void runCompare(const OpCall &call) {
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  StridedIndex ix;
  stridesFor(call, ix);
  byFloat(call.out[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    compareKernel<Op, T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                                   call.out[0].as<T>(), n, ix);
    CUDA_CHECK_LAUNCH();
  });
}

template <typename T> __global__ void whereKernel(const T *c, const T *a, const T *b, T *y, int64_t n, StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    ix.offsets(i, off, 3);
    y[i] = lmc::select(c[off[0]], a[off[1]], b[off[2]]);
  }
}

void runWhere(const OpCall &call) {
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  StridedIndex ix;
  stridesFor(call, ix);
  byFloat(call.out[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    whereKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<T>(),
                                                             call.in[2].as<T>(), call.out[0].as<T>(), n, ix);
    CUDA_CHECK_LAUNCH();
  });
}

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
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  StridedIndex ix;
  stridesFor(call, ix);
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using C = decltype(t);
    whereIntKernel<C><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<C>(), call.in[1].as<int32_t>(),
                                                                call.in[2].as<int32_t>(), call.out[0].as<int32_t>(),
                                                                n, ix);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addMathKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"tanh", runUnary<Tanh>, noScratch});
  k.push_back({"sigmoid", runUnary<Sigmoid>, noScratch});
  k.push_back({"log_sigmoid", runUnary<LogSigmoid>, noScratch});
  k.push_back({"relu", runUnary<Relu>, noScratch});
  k.push_back({"silu", runUnary<Silu>, noScratch});
  k.push_back({"exp", runUnary<Exp>, noScratch});
  k.push_back({"log", runUnary<Log>, noScratch});
  k.push_back({"sqrt", runUnary<Sqrt>, noScratch});
  k.push_back({"rsqrt", runUnary<Rsqrt>, noScratch});
  k.push_back({"sin", runUnary<Sin>, noScratch});
  k.push_back({"cos", runUnary<Cos>, noScratch});
  k.push_back({"stop_gradient", runStopGradient, noScratch});
  k.push_back({"gt", runCompare<Gt>, noScratch});
  k.push_back({"ge", runCompare<Ge>, noScratch});
  k.push_back({"lt", runCompare<Lt>, noScratch});
  k.push_back({"le", runCompare<Le>, noScratch});
  k.push_back({"eq", runCompare<Eq>, noScratch});
  k.push_back({"ne", runCompare<Ne>, noScratch});
  k.push_back({"where", runWhere, noScratch});
  k.push_back({"where_int", runWhereInt, noScratch});
}

}  // namespace lmrt::cuda::detail
