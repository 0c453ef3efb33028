/* Implements: lm.gelu (tanh form, as GPT-2) and lm.gelu_grad, lm.gelu_erf (the
   exact form, HF's "gelu": ELECTRA, DeBERTa) and lm.gelu_erf_grad,
   one flat parallel loop each over the scalar forms of scalar_math.h (the
   generated kernels' too). */
#include <cmath>

#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

/* The two forms: each op's name, its forward and its dy * gelu'(x). */
struct Tanh {
  static constexpr const char *op = "gelu", *grad = "gelu_grad";
  template <typename A> static A f(A x) { return lmc::gelu(x); }
  template <typename A> static A df(A x, A dy) { return lmc::geluGrad(x, dy); }
};
struct Erf {
  static constexpr const char *op = "gelu_erf", *grad = "gelu_erf_grad";
  template <typename A> static A f(A x) { return lmc::geluErf(x); }
  template <typename A> static A df(A x, A dy) { return lmc::geluErfGrad(x, dy); }
};

template <typename Form>
std::string checkGelu(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck(Form::op, in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat(Form::op, "x", in[0]));
    return expectType(Form::op, "out", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename Form, typename T> LMRT_SIMD_CLONES void geluT(const T *x, T *y, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = Form::f(x[i]);
}

template <typename Form> void runGelu(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluT<Form, T>(call.in[0].as<T>(), call.out[0].as<T>(), call.in[0].numel());
  });
}

template <typename Form>
std::string checkGeluGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  const char *op = Form::grad;
  return guardCheck(op, in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat(op, "x", in[0]));
    LMRT_CHECK(expectSameDType(op, "dy", in[1], "x", in[0]));
    if (in[1].shape != in[0].shape)
      return std::string(op) + ": dy " + in[1].str() + " must have the shape of x " + in[0].str();
    return expectType(op, "dx", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename Form, typename T> LMRT_SIMD_CLONES void geluGradT(const T *x, const T *dy, T *dx, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] = Form::df(x[i], dy[i]);
}

template <typename Form> void runGeluGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluGradT<Form, T>(call.in[0].as<T>(), call.in[1].as<T>(), call.out[0].as<T>(), call.in[0].numel());
  });
}

}  // namespace

void addGeluKernels(std::vector<KernelDef> &k) {
  k.push_back({"gelu", 1, 1, checkGelu<Tanh>, runGelu<Tanh>});
  k.push_back({"gelu_grad", 2, 1, checkGeluGrad<Tanh>, runGeluGrad<Tanh>});
  k.push_back({"gelu_erf", 1, 1, checkGelu<Erf>, runGelu<Erf>});
  k.push_back({"gelu_erf_grad", 2, 1, checkGeluGrad<Erf>, runGeluGrad<Erf>});
}

}  // namespace lmrt::kernels::detail
