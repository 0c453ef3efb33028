/* Implements: the row arithmetic shared by the cross-entropy kernels (softmax.cpp) and
   the fused linear cross-entropy (linear_cross_entropy.cpp): target validation, a row's
   logsumexp, and a row's loss with its gradient. One definition, so the fused kernel's
   rows are the reference's bits. */
#pragma once
#include <cmath>

#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {

/* Throws on a target outside [0, V) that is not ignore_index; returns the number of counted targets. */
inline int64_t validateTargets(const char *op, const int32_t *t, int64_t n, int64_t v, int64_t ignore) {
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] == ignore) continue;
    if (t[i] < 0 || t[i] >= v)
      fail("%s: target %d at flat position %lld is outside the vocabulary [0, %lld) and is not ignore_index %lld", op,
           t[i], (long long)i, (long long)v, (long long)ignore);
    ++valid;
  }
  return valid;
}

/* Max and log(sum(exp(x - max))) of one row: logsumexp = mx + lse. */
// always_inline: into each SIMD clone of its callers (alone it would be built for baseline x86-64).
template <typename T> inline __attribute__((always_inline)) void rowLse(const T *x, int64_t v, T &mx, T &lse) {
  T m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < v; ++j) m = x[j] > m ? x[j] : m;  // a select vectorises; std::max stayed scalar
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < v; ++j) s += expT(x[j] - m);
  mx = m;
  lse = std::log(s);
}

/* One row's loss, with dx = scale * (softmax(x) - onehot(target)) written (dx may be x:
   the target logit is read first). softmax(x) * scale with one exp per element: the exps
   are stored, then scaled by scale / sum (the row is still in L2); rowLse and a second
   exp pass would cost twice the exps. */
template <typename T>
inline __attribute__((always_inline)) double rowLossAndGrad(const T *x, T *dx, int64_t v, int32_t target, T scale) {
  const T tx = x[target];
  T mx = -INFINITY, sum = 0;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < v; ++j) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < v; ++j) sum += (dx[j] = expT(x[j] - mx));
  const double loss = (double)(mx + std::log(sum) - tx);
  const T k = scale / sum;
#pragma omp simd
  for (int64_t j = 0; j < v; ++j) dx[j] *= k;
  dx[target] -= scale;
  return loss;
}

}  // namespace lmrt::kernels::detail
