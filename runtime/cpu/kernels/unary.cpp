/* Implements: the zoo's elementwise unary ops (lm.tanh, sigmoid, log_sigmoid, relu,
   silu, exp, log, sqrt, rsqrt, sin, cos, stop_gradient), one flat parallel loop each
   over the scalar forms of scalar_math.h, which the generated kernels use too, so
   fused and unfused plans compute the same values. Their VJPs are compositions of
   elementwise ops (dialect/IR/GradientRules/Elementwise.cpp): no *_grad kernels. */
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

#define LMRT_UNARY(NAME, OP, EXPR) \
  struct NAME {                    \
    static constexpr const char *op = OP; \
    template <typename A> static A f(A x) { return EXPR; } \
  };
LMRT_UNARY(Tanh, "tanh", lmc::tanh(x))
LMRT_UNARY(Sigmoid, "sigmoid", lmc::sigmoid(x))
LMRT_UNARY(LogSigmoid, "log_sigmoid", lmc::logSigmoid(x))
LMRT_UNARY(Relu, "relu", lmc::relu(x))
LMRT_UNARY(Silu, "silu", lmc::silu(x))
LMRT_UNARY(Exp, "exp", lmc::exp(x))
LMRT_UNARY(Log, "log", lmc::log(x))
LMRT_UNARY(Sqrt, "sqrt", lmc::sqrt(x))
LMRT_UNARY(Rsqrt, "rsqrt", lmc::rsqrt(x))
LMRT_UNARY(Sin, "sin", lmc::sin(x))
LMRT_UNARY(Cos, "cos", lmc::cos(x))
LMRT_UNARY(StopGradient, "stop_gradient", x)
#undef LMRT_UNARY

template <typename Fn, typename T> LMRT_SIMD_CLONES void unaryT(const T *x, T *y, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = Fn::f(x[i]);
}

template <typename Fn> struct Unary {
  static std::string check(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
    return guardCheck(Fn::op, in, out, 1, 1, [&]() -> std::string {
      LMRT_CHECK(expectFloat(Fn::op, "x", in[0]));
      return expectType(Fn::op, "out", out[0], in[0].dtype, in[0].shape);
    });
  }
  static void run(const KernelCall &call) {
    dispatchFloat(call.in[0].type.dtype, [&](auto t) {
      using T = decltype(t);
      unaryT<Fn, T>(call.in[0].as<T>(), call.out[0].as<T>(), call.in[0].numel());
    });
  }
  static KernelDef def() { return {Fn::op, 1, 1, check, run}; }
};

}  // namespace

void addUnaryKernels(std::vector<KernelDef> &k) {
  k.push_back(Unary<Tanh>::def());
  k.push_back(Unary<Sigmoid>::def());
  k.push_back(Unary<LogSigmoid>::def());
  k.push_back(Unary<Relu>::def());
  k.push_back(Unary<Silu>::def());
  k.push_back(Unary<Exp>::def());
  k.push_back(Unary<Log>::def());
  k.push_back(Unary<Sqrt>::def());
  k.push_back(Unary<Rsqrt>::def());
  k.push_back(Unary<Sin>::def());
  k.push_back(Unary<Cos>::def());
  k.push_back(Unary<StopGradient>::def());
}

}  // namespace lmrt::kernels::detail
