/* Implements: one categorical draw from softmax(logits) of a row, the body of
   lm.sample on the CPU and on CUDA devices alike (same operations in the same
   order, so both backends draw the same ids from the same bits).
   Inverse transform sampling: u = (bits + 0.5) / 2^32 is uniform in (0, 1) with
   32 random bits; the draw is the first v whose cumulative sum of exp(x - max)
   exceeds u times the total, accumulated in f64. Each id v is drawn with
   probability p_v up to the 2^-32 resolution of u. */
#ifndef LMC_SAMPLE_MATH_H
#define LMC_SAMPLE_MATH_H

#include "contract/scalar_math.h"

namespace lmc {

/* The id drawn from row x[0 .. v), or -1 when the row has no finite maximum
   or its total is not a positive finite number (NaN or +inf logits). */
template <typename T> LMC_HD int32_t sampleRow(const T *x, int64_t v, uint32_t bits) {
  double m = -INFINITY;
  for (int64_t i = 0; i < v; ++i) {
    double xi = (double)x[i];
    if (xi != xi) return -1;
    m = xi > m ? xi : m;
  }
  if (!(m > -INFINITY) || !(m < INFINITY)) return -1;
  double total = 0;
  for (int64_t i = 0; i < v; ++i) total += ::exp((double)x[i] - m);
  const double target = ((double)bits + 0.5) * 0x1.0p-32 * total;
  double acc = 0;
  int32_t last = 0;  // the last id of nonzero probability: the draw if rounding leaves acc <= target
  for (int64_t i = 0; i < v; ++i) {
    double p = ::exp((double)x[i] - m);
    if (p > 0) last = (int32_t)i;
    acc += p;
    if (acc > target) return (int32_t)i;
  }
  return last;
}

}  // namespace lmc

#endif  // LMC_SAMPLE_MATH_H
