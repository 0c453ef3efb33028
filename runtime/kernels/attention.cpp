/* Implements: lm.attention and lm.attention_grad (multi-head scaled dot-product
   attention, optional causal mask). q, k, v are [B, T, H*Dh] with head h in
   columns h*Dh .. (h+1)*Dh-1, read in place with row stride H*Dh.
   Work is split over (batch, head) pairs with OpenMP; each pair walks its query
   rows one at a time holding a single row of scores (O(T) scratch, never T x T),
   and a causal row i only visits keys 0..i. The backward recomputes each row's
   probabilities; a (b, h) pair owns its slices of dq, dk, dv, so no two threads
   write the same element. */
#include <cmath>

#include "runtime/kernels/kernel_common.h"
#include "runtime/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

struct Dims3 {
  int64_t B, T, C, H, Dh;
};

Dims3 dimsOf(const KernelCall &call) {
  const Shape &s = call.in[0].shape();
  int64_t h = call.attrs.getInt("num_heads");
  return {s[0], s[1], s[2], h, s[2] / h};
}

std::string checkAttentionCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs,
                                 Shape &shape) {
  LMRT_CHECK(expectFloat(op, "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "k", in[1], "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "v", in[2], "q", in[0]));
  attrs.getBool("causal");  // required, throws when missing
  std::string err;
  auto s = shapes::attention(in[0].shape, in[1].shape, in[2].shape, attrs.getInt("num_heads"), err);
  if (!s) return std::string(op) + err.substr(err.find(':'));
  shape = *s;
  return "";
}

std::string checkAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("attention", in, out, 3, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkAttentionCommon("attention", in, attrs, s));
    return expectType("attention", "out", out[0], in[0].dtype, s);
  });
}

template <typename T> inline T dot(const T *a, const T *b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/* Fills p[0..n) with softmax(scale * q.k_j) over keys j < n (p sums to one). */
template <typename T>
inline void rowProbs(const T *qi, const T *kh, int64_t n, int64_t C, int64_t Dh, T scale, T *p) {
  T mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    p[j] = dot(qi, kh + j * C, Dh) * scale;
    mx = std::max(mx, p[j]);
  }
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += (p[j] = expT(p[j] - mx));
  T inv = (T)1 / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) p[j] *= inv;
}

template <typename T> void attentionT(const KernelCall &call) {
  Dims3 d = dimsOf(call);
  bool causal = call.attrs.getBool("causal");
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>();
  T *y = call.out[0].as<T>();
  const T scale = (T)(1.0 / std::sqrt((double)d.Dh));
  int64_t pairs = d.B * d.H;
  bool par = pairs > 1 && d.T * d.T * d.Dh >= 1024;
#pragma omp parallel if (par)
  {
    std::vector<T> p(d.T);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      int64_t b = bh / d.H, h = bh % d.H;
      int64_t base = b * d.T * d.C + h * d.Dh;
      const T *qh = q + base, *kh = k + base, *vh = v + base;
      T *yh = y + base;
      for (int64_t i = 0; i < d.T; ++i) {
        int64_t n = causal ? i + 1 : d.T;
        rowProbs(qh + i * d.C, kh, n, d.C, d.Dh, scale, p.data());
        T *yi = yh + i * d.C;
        for (int64_t e = 0; e < d.Dh; ++e) yi[e] = 0;
        for (int64_t j = 0; j < n; ++j) {
          const T pj = p[j], *vj = vh + j * d.C;
#pragma omp simd
          for (int64_t e = 0; e < d.Dh; ++e) yi[e] += pj * vj[e];
        }
      }
    }
  }
}

void runAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call); });
}

// ----------------------------------------------------------------------------
// attention_grad: (q, k, v, dy) -> (dq, dk, dv)

std::string checkAttentionGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                               const Attrs &attrs) {
  return guardCheck("attention_grad", in, out, 4, 3, [&]() -> std::string {
    const char *op = "attention_grad";
    Shape s;
    LMRT_CHECK(checkAttentionCommon(op, in, attrs, s));
    LMRT_CHECK(expectSameDType(op, "dy", in[3], "q", in[0]));
    if (in[3].shape != s) return std::string(op) + ": dy " + in[3].str() + " must have the shape of q " + in[0].str();
    LMRT_CHECK(expectType(op, "dq", out[0], in[0].dtype, s));
    LMRT_CHECK(expectType(op, "dk", out[1], in[0].dtype, s));
    return expectType(op, "dv", out[2], in[0].dtype, s);
  });
}

template <typename T> void attentionGradT(const KernelCall &call) {
  Dims3 d = dimsOf(call);
  bool causal = call.attrs.getBool("causal");
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>(), *dy = call.in[3].as<T>();
  T *dq = call.out[0].as<T>(), *dk = call.out[1].as<T>(), *dv = call.out[2].as<T>();
  const T scale = (T)(1.0 / std::sqrt((double)d.Dh));
  int64_t pairs = d.B * d.H;
  bool par = pairs > 1 && d.T * d.T * d.Dh >= 1024;
#pragma omp parallel if (par)
  {
    std::vector<T> p(d.T), dp(d.T);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      int64_t b = bh / d.H, h = bh % d.H;
      int64_t base = b * d.T * d.C + h * d.Dh;
      const T *qh = q + base, *kh = k + base, *vh = v + base, *dyh = dy + base;
      T *dqh = dq + base, *dkh = dk + base, *dvh = dv + base;
      for (int64_t t = 0; t < d.T; ++t)
        for (int64_t e = 0; e < d.Dh; ++e) dkh[t * d.C + e] = dvh[t * d.C + e] = 0;
      for (int64_t i = 0; i < d.T; ++i) {
        int64_t n = causal ? i + 1 : d.T;
        const T *qi = qh + i * d.C, *dyi = dyh + i * d.C;
        rowProbs(qi, kh, n, d.C, d.Dh, scale, p.data());
        // dP_j = dy_i . v_j ; dv_j += p_j dy_i
        T sumPdp = 0;
        for (int64_t j = 0; j < n; ++j) {
          dp[j] = dot(dyi, vh + j * d.C, d.Dh);
          sumPdp += p[j] * dp[j];
          T *dvj = dvh + j * d.C;
          const T pj = p[j];
#pragma omp simd
          for (int64_t e = 0; e < d.Dh; ++e) dvj[e] += pj * dyi[e];
        }
        // dS_j = p_j (dP_j - sum p dP) ; dq_i = scale sum dS_j k_j ; dk_j += scale dS_j q_i
        T *dqi = dqh + i * d.C;
        for (int64_t e = 0; e < d.Dh; ++e) dqi[e] = 0;
        for (int64_t j = 0; j < n; ++j) {
          const T ds = p[j] * (dp[j] - sumPdp) * scale;
          const T *kj = kh + j * d.C;
          T *dkj = dkh + j * d.C;
#pragma omp simd
          for (int64_t e = 0; e < d.Dh; ++e) {
            dqi[e] += ds * kj[e];
            dkj[e] += ds * qi[e];
          }
        }
      }
    }
  }
}

void runAttentionGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionGradT<decltype(t)>(call); });
}

}  // namespace

void addAttentionKernels(std::vector<KernelDef> &k) {
  k.push_back({"attention", 3, 1, checkAttention, runAttention});
  k.push_back({"attention_grad", 4, 3, checkAttentionGrad, runAttentionGrad});
}

}  // namespace lmrt::kernels::detail
