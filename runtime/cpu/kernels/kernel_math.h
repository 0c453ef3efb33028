/* Implements: LMRT_SIMD_CLONES, and expT / tanhT for the library kernels: the
   vectorisable exp (glibc's expf is a scalar call without -ffast-math, and softmax,
   cross-entropy, attention and GELU spend most of their time in exp) and the tanh
   built on it, from scalar_math.h (Cephes expf, 1-2 ulp, branch-free; f64 keeps
   the library exp, the accuracy reference of the gradient checks). */
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "contract/scalar_math.h"

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

/* The scalar math lives in scalar_math.h, which generated kernels embed too, so a
   library kernel and a fused one compute the same values. */
inline float expT(float x) { return lmc::exp(x); }
inline double expT(double x) { return lmc::exp(x); }
template <typename T> inline T tanhT(T u) { return lmc::tanh(u); }

}  // namespace lmrt::kernels::detail
