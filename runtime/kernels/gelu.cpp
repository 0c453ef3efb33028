/* Implements: lm.gelu (tanh form, as GPT-2) and lm.gelu_grad, one flat parallel
   loop each over the scalar forms of scalar_math.h (the generated kernels' too). */
#include <cmath>

#include "runtime/kernels/kernel_common.h"
#include "runtime/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

std::string checkGelu(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("gelu", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("gelu", "x", in[0]));
    return expectType("gelu", "out", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void geluT(const T *x, T *y, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = lmc::gelu(x[i]);
}

void runGelu(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluT<T>(call.in[0].as<T>(), call.out[0].as<T>(), call.in[0].numel());
  });
}

std::string checkGeluGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("gelu_grad", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("gelu_grad", "x", in[0]));
    LMRT_CHECK(expectSameDType("gelu_grad", "dy", in[1], "x", in[0]));
    if (in[1].shape != in[0].shape)
      return "gelu_grad: dy " + in[1].str() + " must have the shape of x " + in[0].str();
    return expectType("gelu_grad", "dx", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void geluGradT(const T *x, const T *dy, T *dx, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] = lmc::geluGrad(x[i], dy[i]);
}

void runGeluGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    geluGradT<T>(call.in[0].as<T>(), call.in[1].as<T>(), call.out[0].as<T>(), call.in[0].numel());
  });
}

}  // namespace

void addGeluKernels(std::vector<KernelDef> &k) {
  k.push_back({"gelu", 1, 1, checkGelu, runGelu});
  k.push_back({"gelu_grad", 2, 1, checkGeluGrad, runGeluGrad});
}

}  // namespace lmrt::kernels::detail
