/* Implements: lm.softmax / lm.softmax_grad over the last dim, and
   lm.cross_entropy / lm.cross_entropy_grad (fused log-softmax + NLL, mean over
   non-ignored targets) and lm.cross_entropy_with_grad (both from one read). Targets are validated in one serial pass before any
   parallel work, so a bad target id is reported with its flat position. The
   loss is reduced through per-row values summed in order (run-to-run stable). */
#include <cmath>

#include "runtime/cpu/kernels/cross_entropy_rows.h"

namespace lmrt::kernels::detail {
namespace {

// ----------------------------------------------------------------------------
// softmax / softmax_grad

std::string checkSoftmax(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("softmax", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("softmax", "x", in[0]));
    if (in[0].shape.empty()) return "softmax: x " + in[0].str() + " must have rank >= 1";
    return expectType("softmax", "out", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void softmaxT(const TensorRef &xr, const TensorRef &yr) {
  const T *x = xr.as<T>();
  T *y = yr.as<T>();
  int64_t v = xr.shape().back(), rows = v ? xr.numel() / v : 0;
#pragma omp parallel for if (rows * v >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xi = x + r * v;
    T *yi = y + r * v;
    T mx = -INFINITY, s = 0;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < v; ++j) mx = xi[j] > mx ? xi[j] : mx;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < v; ++j) s += (yi[j] = expT(xi[j] - mx));
    T inv = (T)1 / s;
#pragma omp simd
    for (int64_t j = 0; j < v; ++j) yi[j] *= inv;
  }
}

void runSoftmax(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { softmaxT<decltype(t)>(call.in[0], call.out[0]); });
}

std::string checkSoftmaxGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("softmax_grad", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("softmax_grad", "y", in[0]));
    LMRT_CHECK(expectSameDType("softmax_grad", "dy", in[1], "y", in[0]));
    if (in[0].shape.empty()) return "softmax_grad: y " + in[0].str() + " must have rank >= 1";
    if (in[1].shape != in[0].shape)
      return "softmax_grad: dy " + in[1].str() + " must have the shape of y " + in[0].str();
    return expectType("softmax_grad", "dx", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void softmaxGradT(const KernelCall &call) {
  const T *y = call.in[0].as<T>(), *dy = call.in[1].as<T>();
  T *dx = call.out[0].as<T>();
  int64_t v = call.in[0].shape().back(), rows = v ? call.in[0].numel() / v : 0;
#pragma omp parallel for if (rows * v >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T *yi = y + r * v, *dyi = dy + r * v;
    T *dxi = dx + r * v;
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < v; ++j) s += yi[j] * dyi[j];
#pragma omp simd
    for (int64_t j = 0; j < v; ++j) dxi[j] = yi[j] * (dyi[j] - s);
  }
}

void runSoftmaxGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { softmaxGradT<decltype(t)>(call); });
}

// ----------------------------------------------------------------------------
// cross_entropy / cross_entropy_grad

std::string checkCeCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs) {
  LMRT_CHECK(expectFloat(op, "logits", in[0]));
  LMRT_CHECK(expectI32(op, "targets", in[1]));
  attrs.getInt("ignore_index");  // throws, so check() refuses it, unless an integer
  std::string err;
  if (!shapes::crossEntropy(in[0].shape, in[1].shape, err)) return std::string(op) + err.substr(err.find(':'));
  return "";
}

std::string checkCrossEntropy(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                              const Attrs &attrs) {
  return guardCheck("cross_entropy", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(checkCeCommon("cross_entropy", in, attrs));
    return expectType("cross_entropy", "loss", out[0], in[0].dtype, {});
  });
}

template <typename T> LMRT_SIMD_CLONES void crossEntropyT(const KernelCall &call) {
  const T *x = call.in[0].as<T>();
  const int32_t *tg = call.in[1].as<int32_t>();
  int64_t ignore = call.attrs.getInt("ignore_index");
  int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  int64_t valid = validateTargets("cross_entropy", tg, rows, v, ignore);
  std::vector<double> rowLoss(rows, 0.0);
#pragma omp parallel for if (rows * v >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    if (tg[r] == ignore) continue;
    T mx, lse;
    rowLse(x + r * v, v, mx, lse);
    rowLoss[r] = (double)(mx + lse - x[r * v + tg[r]]);
  }
  double s = 0;
  for (double l : rowLoss) s += l;
  call.out[0].as<T>()[0] = valid ? (T)(s / valid) : (T)0;
}

void runCrossEntropy(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { crossEntropyT<decltype(t)>(call); });
}

std::string checkCrossEntropyGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                  const Attrs &attrs) {
  return guardCheck("cross_entropy_grad", in, out, 3, 1, [&]() -> std::string {
    const char *op = "cross_entropy_grad";
    LMRT_CHECK(checkCeCommon(op, in, attrs));
    LMRT_CHECK(expectSameDType(op, "dloss", in[2], "logits", in[0]));
    if (!in[2].shape.empty()) return std::string(op) + ": dloss " + in[2].str() + " must be a scalar";
    return expectType(op, "dlogits", out[0], in[0].dtype, in[0].shape);
  });
}

/* dlogits (and, when loss is not null, the mean loss as cross_entropy computes it) of
   logits x, targets and dloss, the inputs of both cross_entropy_grad and
   cross_entropy_with_grad. dx may be x itself: a row's target logit is read first,
   and each element is read before the exponential pass writes it. */
template <typename T>
LMRT_SIMD_CLONES void crossEntropyGradRows(const KernelCall &call, const char *op, T *dx, T *loss) {
  const T *x = call.in[0].as<T>();
  const int32_t *tg = call.in[1].as<int32_t>();
  T dloss = call.in[2].as<T>()[0];
  int64_t ignore = call.attrs.getInt("ignore_index");
  int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  int64_t valid = validateTargets(op, tg, rows, v, ignore);
  const T scale = valid ? dloss / (T)valid : (T)0;
  std::vector<double> rowLoss(loss ? rows : 0, 0.0);
#pragma omp parallel for if (rows * v >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    T *dxi = dx + r * v;
    if (tg[r] == ignore) {
      for (int64_t j = 0; j < v; ++j) dxi[j] = 0;
      continue;
    }
    const double l = rowLossAndGrad<T>(x + r * v, dxi, v, tg[r], scale);
    if (loss) rowLoss[r] = l;
  }
  if (!loss) return;
  double s = 0;
  for (double l : rowLoss) s += l;
  *loss = valid ? (T)(s / valid) : (T)0;
}

void runCrossEntropyGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    crossEntropyGradRows<T>(call, "cross_entropy_grad", call.out[0].as<T>(), nullptr);
  });
}

std::string checkCrossEntropyWithGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                      const Attrs &attrs) {
  return guardCheck("cross_entropy_with_grad", in, out, 3, 2, [&]() -> std::string {
    const char *op = "cross_entropy_with_grad";
    LMRT_CHECK(checkCeCommon(op, in, attrs));
    LMRT_CHECK(expectSameDType(op, "dloss", in[2], "logits", in[0]));
    if (!in[2].shape.empty()) return std::string(op) + ": dloss " + in[2].str() + " must be a scalar";
    LMRT_CHECK(expectType(op, "dlogits", out[0], in[0].dtype, in[0].shape));
    return expectType(op, "loss", out[1], in[0].dtype, {});
  });
}

/* cross_entropy and cross_entropy_grad from one read of each row, with their
   formulas and summation orders (the same bits). */
void runCrossEntropyWithGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    crossEntropyGradRows<T>(call, "cross_entropy_with_grad", call.out[0].as<T>(), call.out[1].as<T>());
  });
}

// ----------------------------------------------------------------------------
// accuracy (a metric: no gradient kernel)

std::string checkAccuracy(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                          const Attrs &attrs) {
  return guardCheck("accuracy", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(checkCeCommon("accuracy", in, attrs));
    return expectType("accuracy", "accuracy", out[0], in[0].dtype, {});
  });
}

template <typename T> void accuracyT(const KernelCall &call) {
  const T *x = call.in[0].as<T>();
  const int32_t *tg = call.in[1].as<int32_t>();
  int64_t ignore = call.attrs.getInt("ignore_index");
  int64_t v = call.in[0].shape().back(), rows = call.in[1].numel();
  int64_t valid = validateTargets("accuracy", tg, rows, v, ignore);
  int64_t correct = 0;
#pragma omp parallel for reduction(+ : correct) if (rows * v >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    if (tg[r] == ignore) continue;
    // The target is the argmax (the first maximal class) when no class before
    // it reaches its logit and none after it exceeds it.
    const T *xi = x + r * v;
    const T t = xi[tg[r]];
    bool first = true;
    for (int64_t j = 0; j < v && first; ++j)
      first = j < tg[r] ? !(xi[j] >= t) : !(xi[j] > t);
    correct += first && t == t;  // a NaN logit is never correct
  }
  call.out[0].as<T>()[0] = valid ? (T)((double)correct / (double)valid) : (T)0;
}

void runAccuracy(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { accuracyT<decltype(t)>(call); });
}

}  // namespace

void addSoftmaxKernels(std::vector<KernelDef> &k) {
  k.push_back({"softmax", 1, 1, checkSoftmax, runSoftmax});
  k.push_back({"softmax_grad", 2, 1, checkSoftmaxGrad, runSoftmaxGrad});
  k.push_back({"cross_entropy", 2, 1, checkCrossEntropy, runCrossEntropy});
  k.push_back({"cross_entropy_grad", 3, 1, checkCrossEntropyGrad, runCrossEntropyGrad});
  k.push_back({"cross_entropy_with_grad", 3, 2, checkCrossEntropyWithGrad, runCrossEntropyWithGrad});
  k.push_back({"accuracy", 2, 1, checkAccuracy, runAccuracy});
}

}  // namespace lmrt::kernels::detail
