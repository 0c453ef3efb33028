/* Implements: lm.layer_norm and lm.layer_norm_grad (and lm.rms_norm, lm.rms_norm_grad)
   over the last dim, one fused
   pass per row (mean, biased variance, normalise, scale, shift). The backward
   recomputes mean and rstd; dgamma/dbeta are reduced through partial sums of
   fixed 32-row chunks added in chunk order, so results vary neither between runs
   nor with the thread count.
   Row statistics are accumulated in double; the per-element math runs in T. */

#include <cmath>

#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

std::string checkEpsilon(const char *op, const Attrs &attrs) {
  return shapes::layerNormEpsilon(attrs.getFloat("epsilon"), op);
}

std::string checkLayerNorm(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("layer_norm", in, out, 3, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("layer_norm", "x", in[0]));
    LMRT_CHECK(expectSameDType("layer_norm", "gamma", in[1], "x", in[0]));
    LMRT_CHECK(expectSameDType("layer_norm", "beta", in[2], "x", in[0]));
    LMRT_CHECK(checkEpsilon("layer_norm", attrs));
    std::string err;
    auto shape = shapes::layerNorm(in[0].shape, in[1].shape, in[2].shape, err);
    if (!shape) return err;
    return expectType("layer_norm", "out", out[0], in[0].dtype, *shape);
  });
}

/* Mean and 1/sqrt(var + eps) of one row, accumulated in double. */
/* Inlined into each SIMD clone of its callers: as a function of its own it was compiled for
   baseline x86-64 only (SSE2 doubles, 2 a vector) and held layer norm at a quarter of the
   vector width. */
template <typename T>
inline __attribute__((always_inline)) void rowStats(const T *x, int64_t d, double eps, double &mean, double &rstd) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < d; ++j) s += x[j];
  mean = d ? s / d : 0.0;
  double v = 0;
#pragma omp simd reduction(+ : v)
  for (int64_t j = 0; j < d; ++j) v += (x[j] - mean) * (x[j] - mean);
  rstd = 1.0 / std::sqrt((d ? v / d : 0.0) + eps);
}

template <typename T> LMRT_SIMD_CLONES void layerNormT(const KernelCall &call) {
  const TensorRef &xr = call.in[0];
  const T *x = xr.as<T>(), *g = call.in[1].as<T>(), *b = call.in[2].as<T>();
  T *y = call.out[0].as<T>();
  double eps = call.attrs.getFloat("epsilon");
  int64_t d = xr.shape().back(), rows = d ? xr.numel() / d : 0;
#pragma omp parallel for if (rows * d >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    double mean, rstd;
    rowStats(x + r * d, d, eps, mean, rstd);
    const T *xi = x + r * d;
    T *yi = y + r * d;
    const T m = (T)mean, rs = (T)rstd;
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) yi[j] = (xi[j] - m) * rs * g[j] + b[j];
  }
}

void runLayerNorm(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { layerNormT<decltype(t)>(call); });
}

// ----------------------------------------------------------------------------
// layer_norm_grad: (x, gamma, dy) -> (dx, dgamma, dbeta)

std::string checkLayerNormGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                               const Attrs &attrs) {
  return guardCheck("layer_norm_grad", in, out, 3, 3, [&]() -> std::string {
    const char *op = "layer_norm_grad";
    LMRT_CHECK(expectFloat(op, "x", in[0]));
    LMRT_CHECK(expectSameDType(op, "gamma", in[1], "x", in[0]));
    LMRT_CHECK(expectSameDType(op, "dy", in[2], "x", in[0]));
    LMRT_CHECK(checkEpsilon(op, attrs));
    std::string err;
    if (!shapes::layerNorm(in[0].shape, in[1].shape, in[1].shape, err))
      return std::string(op) + err.substr(err.find(':'));
    if (in[2].shape != in[0].shape) return std::string(op) + ": dy " + in[2].str() + " must have the shape of x " + in[0].str();
    LMRT_CHECK(expectType(op, "dx", out[0], in[0].dtype, in[0].shape));
    LMRT_CHECK(expectType(op, "dgamma", out[1], in[0].dtype, in[1].shape));
    return expectType(op, "dbeta", out[2], in[0].dtype, in[1].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void layerNormGradT(const KernelCall &call) {
  const TensorRef &xr = call.in[0];
  const T *x = xr.as<T>(), *g = call.in[1].as<T>(), *dy = call.in[2].as<T>();
  T *dx = call.out[0].as<T>(), *dg = call.out[1].as<T>(), *db = call.out[2].as<T>();
  double eps = call.attrs.getFloat("epsilon");
  int64_t d = xr.shape().back(), rows = d ? xr.numel() / d : 0;
  bool par = rows * d >= kParallelMin;
  // dgamma | dbeta partials per fixed chunk of rows, summed in chunk order afterwards:
  // per-thread partials made the parameter gradients (and so every later step)
  // depend on the thread count.
  constexpr int64_t kChunk = 32;
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  std::vector<T> partial((size_t)chunks * 2 * d, (T)0);
#pragma omp parallel for schedule(static) if (par)
  for (int64_t c = 0; c < chunks; ++c) {
    T *pg = partial.data() + (size_t)c * 2 * d, *pb = pg + d;
    for (int64_t r = c * kChunk, rEnd = std::min(rows, r + kChunk); r < rEnd; ++r) {
      const T *xi = x + r * d, *dyi = dy + r * d;
      T *dxi = dx + r * d;
      double mean, rstd;
      rowStats(xi, d, eps, mean, rstd);
      const T m = (T)mean, rs = (T)rstd;
      // dx = rstd * (dn - mean(dn) - xhat * mean(dn * xhat)), dn = dy * gamma
      T sdn = 0, sdnx = 0;
#pragma omp simd reduction(+ : sdn, sdnx)
      for (int64_t j = 0; j < d; ++j) {
        T xhat = (xi[j] - m) * rs, dn = dyi[j] * g[j];
        sdn += dn;
        sdnx += dn * xhat;
        pg[j] += dyi[j] * xhat;
        pb[j] += dyi[j];
      }
      sdn /= (T)d;
      sdnx /= (T)d;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        T xhat = (xi[j] - m) * rs;
        dxi[j] = rs * (dyi[j] * g[j] - sdn - xhat * sdnx);
      }
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    T sg = 0, sb = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      sg += partial[(size_t)c * 2 * d + j];
      sb += partial[(size_t)c * 2 * d + d + j];
    }
    dg[j] = sg;
    db[j] = sb;
  }
}

void runLayerNormGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { layerNormGradT<decltype(t)>(call); });
}

// ----------------------------------------------------------------------------
// rms_norm: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) (LLaMA's RMSNorm)

std::string checkRmsNorm(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                         const Attrs &attrs) {
  return guardCheck("rms_norm", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("rms_norm", "x", in[0]));
    LMRT_CHECK(expectSameDType("rms_norm", "gamma", in[1], "x", in[0]));
    LMRT_CHECK(shapes::layerNormEpsilon(attrs.getFloat("epsilon"), "rms_norm"));
    std::string err;
    auto shape = shapes::rmsNorm(in[0].shape, in[1].shape, err);
    if (!shape) return err;
    return expectType("rms_norm", "out", out[0], in[0].dtype, *shape);
  });
}

/* 1/sqrt(mean(x^2) + eps) of one row, accumulated in double. */
template <typename T> inline __attribute__((always_inline)) double rowRstd(const T *x, int64_t d, double eps) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < d; ++j) s += (double)x[j] * x[j];
  return 1.0 / std::sqrt((d ? s / d : 0.0) + eps);
}

template <typename T> LMRT_SIMD_CLONES void rmsNormT(const KernelCall &call) {
  const TensorRef &xr = call.in[0];
  const T *x = xr.as<T>(), *g = call.in[1].as<T>();
  T *y = call.out[0].as<T>();
  double eps = call.attrs.getFloat("epsilon");
  int64_t d = xr.shape().back(), rows = d ? xr.numel() / d : 0;
#pragma omp parallel for if (rows * d >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xi = x + r * d;
    T *yi = y + r * d;
    const T rs = (T)rowRstd(xi, d, eps);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) yi[j] = xi[j] * rs * g[j];
  }
}

void runRmsNorm(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { rmsNormT<decltype(t)>(call); });
}

std::string checkRmsNormGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                             const Attrs &attrs) {
  return guardCheck("rms_norm_grad", in, out, 3, 2, [&]() -> std::string {
    const char *op = "rms_norm_grad";
    LMRT_CHECK(expectFloat(op, "x", in[0]));
    LMRT_CHECK(expectSameDType(op, "gamma", in[1], "x", in[0]));
    LMRT_CHECK(expectSameDType(op, "dy", in[2], "x", in[0]));
    LMRT_CHECK(shapes::layerNormEpsilon(attrs.getFloat("epsilon"), op));
    std::string err;
    if (!shapes::rmsNorm(in[0].shape, in[1].shape, err)) return std::string(op) + err.substr(err.find(':'));
    if (in[2].shape != in[0].shape) return std::string(op) + ": dy " + in[2].str() + " must have the shape of x " + in[0].str();
    LMRT_CHECK(expectType(op, "dx", out[0], in[0].dtype, in[0].shape));
    return expectType(op, "dgamma", out[1], in[0].dtype, in[1].shape);
  });
}

/* dx = rstd * (dn - xhat * mean(dn * xhat)), dn = dy * gamma, xhat = x * rstd;
   dgamma = sum over rows of dy * xhat, through fixed 32-row chunks as layer_norm_grad. */
template <typename T> LMRT_SIMD_CLONES void rmsNormGradT(const KernelCall &call) {
  const TensorRef &xr = call.in[0];
  const T *x = xr.as<T>(), *g = call.in[1].as<T>(), *dy = call.in[2].as<T>();
  T *dx = call.out[0].as<T>(), *dg = call.out[1].as<T>();
  double eps = call.attrs.getFloat("epsilon");
  int64_t d = xr.shape().back(), rows = d ? xr.numel() / d : 0;
  constexpr int64_t kChunk = 32;
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  std::vector<T> partial((size_t)chunks * d, (T)0);
#pragma omp parallel for schedule(static) if (rows * d >= kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    T *pg = partial.data() + (size_t)c * d;
    for (int64_t r = c * kChunk, rEnd = std::min(rows, r + kChunk); r < rEnd; ++r) {
      const T *xi = x + r * d, *dyi = dy + r * d;
      T *dxi = dx + r * d;
      const T rs = (T)rowRstd(xi, d, eps);
      T sdnx = 0;
#pragma omp simd reduction(+ : sdnx)
      for (int64_t j = 0; j < d; ++j) {
        T xhat = xi[j] * rs;
        sdnx += dyi[j] * g[j] * xhat;
        pg[j] += dyi[j] * xhat;
      }
      sdnx /= (T)d;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) dxi[j] = rs * (dyi[j] * g[j] - xi[j] * rs * sdnx);
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    T sg = 0;
    for (int64_t c = 0; c < chunks; ++c) sg += partial[(size_t)c * d + j];
    dg[j] = sg;
  }
}

void runRmsNormGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { rmsNormGradT<decltype(t)>(call); });
}

}  // namespace

void addLayerNormKernels(std::vector<KernelDef> &k) {
  k.push_back({"layer_norm", 3, 1, checkLayerNorm, runLayerNorm});
  k.push_back({"layer_norm_grad", 3, 3, checkLayerNormGrad, runLayerNormGrad});
  k.push_back({"rms_norm", 2, 1, checkRmsNorm, runRmsNorm});
  k.push_back({"rms_norm_grad", 3, 2, checkRmsNormGrad, runRmsNormGrad});
}

}  // namespace lmrt::kernels::detail
