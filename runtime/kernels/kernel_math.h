/* Implements: LMRT_SIMD_CLONES, and expT, an exp the compiler can vectorise for f32 (glibc's expf is a
   scalar call without -ffast-math, and softmax, cross-entropy, attention and
   GELU spend most of their time in exp). f64 keeps std::exp: the double path is
   the accuracy reference for the gradient checks.
   f32 method (Cephes expf): exp(x) = 2^n * exp(r), n = round(x / ln2),
   r = x - n ln2 in [-ln2/2, ln2/2], exp(r) by a degree-7 polynomial; about
   1-2 ulp. Branch-free so the loops around it stay SIMD. */
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

/* On a function with vectorisable loops: GCC compiles it for AVX-512, AVX2+FMA and the
   baseline x86-64 and picks one at load time, so a portable build still runs the
   elementwise, exp and reduction loops 8 or 16 floats wide (BLAS does the same for the
   GEMMs). Results may differ in the last bits between machines (FMA contraction), never
   between runs or thread counts on one machine. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LMRT_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LMRT_SIMD_CLONES
#endif

namespace lmrt::kernels::detail {

inline float expT(float x) {
  // Below -87.3 the result is under the smallest normal float: flush to 0 (and
  // exp(-inf) = 0). Above 88.3, 2^n would overflow the exponent field.
  const float lo = -87.3f, hi = 88.3f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  // Round to nearest by the 1.5 * 2^23 trick (no SSE4.1 round instruction needed).
  const float magic = 12582912.0f;
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
  std::memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x < lo ? 0.0f : y;
  y = x > 88.72283f ? INFINITY : y;  // true overflow (inputs in (88.3, 88.72] get exp(88.3))
  return x != x ? x : y;  // NaN in, NaN out
}

inline double expT(double x) { return std::exp(x); }

/* tanh through exp: 1 - 2 / (exp(2u) + 1); saturates to +-1 without overflow trouble. */
template <typename T> inline T tanhT(T u) { return (T)1 - (T)2 / (expT((T)2 * u) + (T)1); }

}  // namespace lmrt::kernels::detail
