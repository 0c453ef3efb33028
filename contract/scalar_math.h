/* Implements: the scalar math every kernel body shares, on the host and on CUDA
   devices: storage types (f32, f64, bf16, f16) with their accumulation types,
   loads and stores that convert, a vectorisable exp, tanh and the GELU pair.
   This header is the prelude of every generated kernel source (lmc embeds it
   verbatim, so it includes nothing of LMC's) and the hand-written CPU kernels
   use the same functions, so a fused kernel computes what the unfused ops do.
   Reduced-precision storage (bf16, f16) loads to float and accumulates in float;
   f64 stays double throughout (it is the accuracy reference). */
#ifndef LMC_SCALAR_MATH_H
#define LMC_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define LMC_HD __host__ __device__ __forceinline__
#else
#define LMC_HD inline __attribute__((always_inline))
#endif

/* A generated CPU entry point. GCC compiles it for AVX-512, AVX2+FMA and baseline
   x86-64 and picks one when the library is loaded, so one plan runs on any x86-64
   machine at the width the machine has. */
#if !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LMC_CPU_ENTRY extern "C" __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LMC_CPU_ENTRY extern "C"
#endif

namespace lmc {

#if defined(__CUDACC__)
using bf16 = __nv_bfloat16;
using f16 = __half;
LMC_HD float toFloat(bf16 v) { return __bfloat162float(v); }
LMC_HD float toFloat(f16 v) { return __half2float(v); }
template <typename T> LMC_HD T fromFloat(float v);
template <> LMC_HD bf16 fromFloat<bf16>(float v) { return __float2bfloat16_rn(v); }
template <> LMC_HD f16 fromFloat<f16>(float v) { return __float2half_rn(v); }
#else
/* Host storage types: the bit patterns of bfloat16 and IEEE binary16. */
struct bf16 { uint16_t bits; };
struct f16 { uint16_t bits; };
LMC_HD float toFloat(bf16 v) {
  uint32_t u = (uint32_t)v.bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
LMC_HD float toFloat(f16 v) {
  uint32_t sign = (uint32_t)(v.bits & 0x8000u) << 16, exp = (v.bits >> 10) & 0x1fu, man = v.bits & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);  // inf / NaN
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400u));
    u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
template <typename T> LMC_HD T fromFloat(float v);
template <> LMC_HD bf16 fromFloat<bf16>(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{(uint16_t)((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return bf16{(uint16_t)(u >> 16)};
}
template <> LMC_HD f16 fromFloat<f16>(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return f16{(uint16_t)(sign | 0x7e00u)};
  if (a >= 0x477ff000u) return f16{(uint16_t)(sign | 0x7c00u)};  // rounds to inf
  if (a < 0x38800000u) {  // subnormal or zero in f16: units of 2^-24, rounded to nearest even
    const uint32_t e = a >> 23;
    if (e < 102) return f16{(uint16_t)sign};  // under 2^-25: rounds to 0 (2^-25 itself is the tie, to 0)
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;  // 14..24
    const uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    uint32_t q = mant >> shift;
    q += rest > half || (rest == half && (q & 1u));  // may carry into the smallest normal, 0x400
    return f16{(uint16_t)(sign | q)};
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
  return f16{(uint16_t)(sign | (r >> 13))};
}
#endif

/* The type a kernel computes in for a storage type. */
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };
template <typename T> using acc_t = typename Acc<T>::type;

LMC_HD float load(float v) { return v; }
LMC_HD double load(double v) { return v; }
LMC_HD float load(bf16 v) { return toFloat(v); }
LMC_HD float load(f16 v) { return toFloat(v); }
template <typename T, typename A> LMC_HD T store(A v) { return (T)v; }
template <> LMC_HD bf16 store<bf16, float>(float v) { return fromFloat<bf16>(v); }
template <> LMC_HD f16 store<f16, float>(float v) { return fromFloat<f16>(v); }

/* exp for f32 that compilers vectorise (glibc's expf is a scalar call), Cephes
   method: exp(x) = 2^n exp(r), n = round(x / ln2), r in [-ln2/2, ln2/2], a
   degree-7 polynomial; 1-2 ulp; branch-free. f64 keeps the library exp. */
LMC_HD float exp(float x) {
  const float lo = -87.3f, hi = 88.3f;  // below: under the smallest normal; above: 2^n overflows
  float xc = x < lo ? lo : (x > hi ? hi : x);
  const float magic = 12582912.0f;  // 1.5 * 2^23: round to nearest without SSE4.1
  float n = (xc * 1.44269504088896341f + magic) - magic;
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;  // ln2 split in two for accuracy
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x < lo ? 0.0f : y;
  y = x > 88.72283f ? (float)INFINITY : y;  // true overflow
  return x != x ? x : y;                          // NaN in, NaN out
}
LMC_HD double exp(double x) { return ::exp(x); }

/* tanh through exp: 1 - 2 / (exp(2u) + 1); saturates to +-1 without overflow. */
template <typename A> LMC_HD A tanh(A u) { return (A)1 - (A)2 / (lmc::exp((A)2 * u) + (A)1); }

/* GELU, tanh form (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
template <typename A> LMC_HD A gelu(A x) {
  const A s = (A)0.7978845608028654, c = (A)0.044715;
  return (A)0.5 * x * ((A)1 + lmc::tanh(s * (x + c * x * x * x)));
}

/* dy * gelu'(x). */
template <typename A> LMC_HD A geluGrad(A x, A dy) {
  const A s = (A)0.7978845608028654, c = (A)0.044715;
  A th = lmc::tanh(s * (x + c * x * x * x));
  A du = s * ((A)1 + (A)3 * c * x * x);  // d/dx of the tanh argument
  return dy * ((A)0.5 * ((A)1 + th) + (A)0.5 * x * ((A)1 - th * th) * du);
}

/* Phi(x), the standard normal CDF, = 0.5 erfc(-x / sqrt 2). In f32, erfc(z) for z >= 0
   is Numerical Recipes' Chebyshev fit t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (relative
   error under 1.2e-7 for every z), over the vectorisable exp above: glibc's erff is a
   scalar call that kept every loop around it scalar (about 20 ns an element: most of
   ELECTRA's and DeBERTa's bias-gradient kernels on the CPU). Taking erfc of |x| keeps the
   relative accuracy far into the lower tail, where 1 + erf(x) cancels. f64 keeps the C
   library's erf (gradient checks). */
LMC_HD float normalCdf(float x) {
  const float z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float half = 0.5f * t * lmc::exp(p - z * z);  // erfc(|x| / sqrt 2) / 2
  return x < 0.0f ? half : 1.0f - half;
}
LMC_HD double normalCdf(double x) { return 0.5 * (1.0 + ::erf(x * 0.7071067811865476)); }

/* GELU, exact form (HF's "gelu": ELECTRA, DeBERTa): x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)). */
template <typename A> LMC_HD A geluErf(A x) { return x * lmc::normalCdf(x); }

/* dy * (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). */
template <typename A> LMC_HD A geluErfGrad(A x, A dy) {
  A cdf = lmc::normalCdf(x);
  A pdf = (A)0.3989422804014327 * lmc::exp((A)-0.5 * x * x);
  return dy * (cdf + x * pdf);
}

/* The math of the zoo's elementwise ops (lm.sigmoid, lm.silu, ...), each for the
   accumulation types float and double. The library calls (logf, sinf, ...) exist
   on the host and on CUDA devices alike. */
LMC_HD float log(float x) { return ::logf(x); }
LMC_HD double log(double x) { return ::log(x); }
LMC_HD float log1p(float x) { return ::log1pf(x); }
LMC_HD double log1p(double x) { return ::log1p(x); }
LMC_HD float sqrt(float x) { return ::sqrtf(x); }
LMC_HD double sqrt(double x) { return ::sqrt(x); }
LMC_HD float sin(float x) { return ::sinf(x); }
LMC_HD double sin(double x) { return ::sin(x); }
LMC_HD float cos(float x) { return ::cosf(x); }
LMC_HD double cos(double x) { return ::cos(x); }
template <typename A> LMC_HD A rsqrt(A x) { return (A)1 / lmc::sqrt(x); }
template <typename A> LMC_HD A relu(A x) { return x > (A)0 ? x : (A)0; }
/* 1 / (1 + exp(-x)); exp(-x) overflows to inf for x < -88, which gives 0. */
template <typename A> LMC_HD A sigmoid(A x) { return (A)1 / ((A)1 + lmc::exp(-x)); }
/* log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)): no overflow, no log(0). */
template <typename A> LMC_HD A logSigmoid(A x) {
  A ax = x < (A)0 ? -x : x;
  return (x < (A)0 ? x : (A)0) - lmc::log((A)1 + lmc::exp(-ax));
}
/* softplus(x) = log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow,
   and ~exp(x) (not 0) far below zero. */
template <typename A> LMC_HD A softplus(A x) {
  A ax = x < (A)0 ? -x : x;
  return (x > (A)0 ? x : (A)0) + lmc::log1p(lmc::exp(-ax));
}
/* x * sigmoid(x) (SiLU, the gate of SwiGLU). */
template <typename A> LMC_HD A silu(A x) { return x * lmc::sigmoid(x); }
/* where(c, a, b): c is a float mask, true where it is not 0. */
template <typename A> LMC_HD A select(A c, A a, A b) { return c != (A)0 ? a : b; }
/* Comparisons give 1 or 0 in the float type (masks that multiply or select). */
template <typename A> LMC_HD A mask(bool b) { return b ? (A)1 : (A)0; }

}  // namespace lmc

#endif  // LMC_SCALAR_MATH_H
