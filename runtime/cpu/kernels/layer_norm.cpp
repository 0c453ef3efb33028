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

/* rowStats of four consecutive rows at once: four independent dependency chains where
   one row's reduction alone waits on each add's latency (d = 256 to 768: layer norm ran at
   a third of its load bandwidth). Each row's sums are the same vectorised reductions as
   rowStats', in the same order, so the results are bit-identical to four rowStats calls
   (checked on every SIMD clone: LayerNormRowsTest). */
template <typename T>
inline __attribute__((always_inline)) void rowStats4(const T *x, int64_t d, double eps, double *mean, double *rstd) {
  const T *x0 = x, *x1 = x + d, *x2 = x + 2 * d, *x3 = x + 3 * d;
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t j = 0; j < d; ++j) {
    s0 += x0[j];
    s1 += x1[j];
    s2 += x2[j];
    s3 += x3[j];
  }
  const double m0 = d ? s0 / d : 0.0, m1 = d ? s1 / d : 0.0, m2 = d ? s2 / d : 0.0, m3 = d ? s3 / d : 0.0;
  double v0 = 0, v1 = 0, v2 = 0, v3 = 0;
#pragma omp simd reduction(+ : v0, v1, v2, v3)
  for (int64_t j = 0; j < d; ++j) {
    v0 += (x0[j] - m0) * (x0[j] - m0);
    v1 += (x1[j] - m1) * (x1[j] - m1);
    v2 += (x2[j] - m2) * (x2[j] - m2);
    v3 += (x3[j] - m3) * (x3[j] - m3);
  }
  mean[0] = m0, mean[1] = m1, mean[2] = m2, mean[3] = m3;
  rstd[0] = 1.0 / std::sqrt((d ? v0 / d : 0.0) + eps);
  rstd[1] = 1.0 / std::sqrt((d ? v1 / d : 0.0) + eps);
  rstd[2] = 1.0 / std::sqrt((d ? v2 / d : 0.0) + eps);
  rstd[3] = 1.0 / std::sqrt((d ? v3 / d : 0.0) + eps);
}

/* Statistics of rows r .. r + n - 1 (n <= 4): rowStats4 for a full group. */
template <typename T>
inline __attribute__((always_inline)) void rowStatsN(const T *x, int64_t d, int64_t n, double eps, double *mean,
                                                     double *rstd) {
  if (n == 4)
    rowStats4(x, d, eps, mean, rstd);
  else
    for (int64_t k = 0; k < n; ++k) rowStats(x + k * d, d, eps, mean[k], rstd[k]);
}

template <typename T> LMRT_SIMD_CLONES void layerNormT(const KernelCall &call) {
  const TensorRef &xr = call.in[0];
  const T *x = xr.as<T>(), *g = call.in[1].as<T>(), *b = call.in[2].as<T>();
  T *y = call.out[0].as<T>();
  double eps = call.attrs.getFloat("epsilon");
  int64_t d = xr.shape().back(), rows = d ? xr.numel() / d : 0;
#pragma omp parallel for if (rows * d >= kParallelMin)
  for (int64_t q = 0; q < (rows + 3) / 4; ++q) {  // groups of four rows (rowStats4)
    const int64_t r0 = q * 4, n = std::min<int64_t>(4, rows - r0);
    double mean[4], rstd[4];
    rowStatsN(x + r0 * d, d, n, eps, mean, rstd);
    for (int64_t k = 0; k < n; ++k) {
      const T *xi = x + (r0 + k) * d;
      T *yi = y + (r0 + k) * d;
      const T m = (T)mean[k], rs = (T)rstd[k];
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yi[j] = (xi[j] - m) * rs * g[j] + b[j];
    }
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

/* One row of layer_norm_grad's sums: sdn = sum(dn), sdnx = sum(dn * xhat) (dn = dy * gamma),
   and the row's terms of the dgamma | dbeta partials pg, pb. */
template <typename T>
inline __attribute__((always_inline)) void gradSums1(const T *xi, const T *dyi, const T *g, int64_t d, T m, T rs,
                                                     T *pg, T *pb, T &sdnOut, T &sdnxOut) {
  T sdn = 0, sdnx = 0;
#pragma omp simd reduction(+ : sdn, sdnx)
  for (int64_t j = 0; j < d; ++j) {
    T xhat = (xi[j] - m) * rs, dn = dyi[j] * g[j];
    sdn += dn;
    sdnx += dn * xhat;
    pg[j] += dyi[j] * xhat;
    pb[j] += dyi[j];
  }
  sdnOut = sdn, sdnxOut = sdnx;
}

/* gradSums1 of four consecutive rows in one pass: each row's reductions in gradSums1's
   order, and the partials take the rows' terms in row order, so the bits are those of
   four gradSums1 calls (as rowStats4). */
template <typename T>
inline __attribute__((always_inline)) void gradSums4(const T *x, const T *dy, const T *g, int64_t d, const T *m,
                                                     const T *rs, T *pg, T *pb, T *sdnOut, T *sdnxOut) {
  const T *x0 = x, *x1 = x + d, *x2 = x + 2 * d, *x3 = x + 3 * d;
  const T *y0 = dy, *y1 = dy + d, *y2 = dy + 2 * d, *y3 = dy + 3 * d;
  const T m0 = m[0], m1 = m[1], m2 = m[2], m3 = m[3], r0 = rs[0], r1 = rs[1], r2 = rs[2], r3 = rs[3];
  T n0 = 0, n1 = 0, n2 = 0, n3 = 0, nx0 = 0, nx1 = 0, nx2 = 0, nx3 = 0;
#pragma omp simd reduction(+ : n0, n1, n2, n3, nx0, nx1, nx2, nx3)
  for (int64_t j = 0; j < d; ++j) {
    T h0 = (x0[j] - m0) * r0, h1 = (x1[j] - m1) * r1, h2 = (x2[j] - m2) * r2, h3 = (x3[j] - m3) * r3;
    T d0 = y0[j] * g[j], d1 = y1[j] * g[j], d2 = y2[j] * g[j], d3 = y3[j] * g[j];
    n0 += d0;
    n1 += d1;
    n2 += d2;
    n3 += d3;
    nx0 += d0 * h0;
    nx1 += d1 * h1;
    nx2 += d2 * h2;
    nx3 += d3 * h3;
    T a = pg[j];
    a += y0[j] * h0;
    a += y1[j] * h1;
    a += y2[j] * h2;
    a += y3[j] * h3;
    pg[j] = a;
    T b = pb[j];
    b += y0[j];
    b += y1[j];
    b += y2[j];
    b += y3[j];
    pb[j] = b;
  }
  sdnOut[0] = n0, sdnOut[1] = n1, sdnOut[2] = n2, sdnOut[3] = n3;
  sdnxOut[0] = nx0, sdnxOut[1] = nx1, sdnxOut[2] = nx2, sdnxOut[3] = nx3;
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
    const int64_t rEnd = std::min(rows, (c + 1) * kChunk);
    for (int64_t r0 = c * kChunk; r0 < rEnd; r0 += 4) {  // groups of four rows (rowStats4)
      const int64_t n = std::min<int64_t>(4, rEnd - r0);
      double mean[4], rstd[4];
      rowStatsN(x + r0 * d, d, n, eps, mean, rstd);
      T m[4], rs[4], sdn[4], sdnx[4];
      for (int64_t k = 0; k < n; ++k) m[k] = (T)mean[k], rs[k] = (T)rstd[k];
      if (n == 4)
        gradSums4(x + r0 * d, dy + r0 * d, g, d, m, rs, pg, pb, sdn, sdnx);
      else
        for (int64_t k = 0; k < n; ++k)
          gradSums1(x + (r0 + k) * d, dy + (r0 + k) * d, g, d, m[k], rs[k], pg, pb, sdn[k], sdnx[k]);
      for (int64_t k = 0; k < n; ++k) {
        const T *xi = x + (r0 + k) * d, *dyi = dy + (r0 + k) * d;
        T *dxi = dx + (r0 + k) * d;
        const T mk = m[k], rk = rs[k], sdnk = sdn[k] / (T)d, sdnxk = sdnx[k] / (T)d;
        // dx = rstd * (dn - mean(dn) - xhat * mean(dn * xhat)), dn = dy * gamma
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          T xhat = (xi[j] - mk) * rk;
          dxi[j] = rk * (dyi[j] * g[j] - sdnk - xhat * sdnxk);
        }
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
