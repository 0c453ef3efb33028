/* Implements: OptimizerTargets.h's functions for the level LMRT_ADAMW_LEVEL names (set by
   CMakeLists.txt with this object's -march). */
#include "test/Unit/train/OptimizerTargets.h"

#include "contract/adamw_math.h"
#include "runtime/cpu/block_sum_squares.h"

#define LMRT_CAT2(a, b) a##b
#define LMRT_CAT(a, b) LMRT_CAT2(a, b)
#define LMRT_LOOP LMRT_CAT(adamwLoop_, LMRT_ADAMW_LEVEL)
#define LMRT_SUM LMRT_CAT(sumSquares_, LMRT_ADAMW_LEVEL)

namespace lmrt::test {
namespace {

template <typename T>
void loop(T *__restrict p, const T *__restrict g, T *__restrict m, T *__restrict v, int64_t n, const AdamWArgs &a) {
  const lmc::AdamWScalars<T> s = lmc::adamwScalars<T>(a.lr, a.decay, a.beta1, a.beta2, a.eps, a.bc1, a.bc2,
                                                      a.gradScale, a.clipValue);
  for (int64_t i = 0; i < n; ++i) {
    T mi = m[i], vi = v[i];
    p[i] = lmc::adamwElement(p[i], g[i], mi, vi, s);
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void LMRT_LOOP(float *p, const float *g, float *m, float *v, int64_t n, const AdamWArgs &a) { loop(p, g, m, v, n, a); }
void LMRT_LOOP(double *p, const double *g, double *m, double *v, int64_t n, const AdamWArgs &a) {
  loop(p, g, m, v, n, a);
}

double LMRT_SUM(const float *g, int64_t n) { return blockSumSquaresInOrder(g, n); }
double LMRT_SUM(const double *g, int64_t n) { return blockSumSquaresInOrder(g, n); }

}  // namespace lmrt::test
