/* Implements: dropout's keep/drop decision, the body of lm.dropout (and of the
   attention kernels' probability dropout) on the CPU and on CUDA devices alike,
   so every backend drops the same elements from the same key.
   Counter-based, like the runtime's other random streams (runtime/data/
   counter_rng.h): the decision for an element is a pure function of
   (row key, site, element index), never of how many were drawn before, so the
   backward regenerates the forward's mask instead of storing it, and a resumed
   run drops what the uninterrupted one dropped. The row key is the plan input
   `dropout_key` (i32[rows, 2]), which the runtime derives from (seed, step,
   sample); the site is the op's place in the program (the frontend numbers
   every dropout of a source). */
#ifndef LMC_DROPOUT_MATH_H
#define LMC_DROPOUT_MATH_H

#include "contract/scalar_math.h"

namespace lmc {

/* splitmix64's finaliser: a full 64-bit avalanche. */
LMC_HD uint64_t dropoutMix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The stream of one row at one site: a row's two key words and the site, each
   mixed in turn, so (row, site) pairs give unrelated streams. */
LMC_HD uint64_t dropoutStream(const int32_t *rowKey, int64_t site) {
  uint64_t k = ((uint64_t)(uint32_t)rowKey[1] << 32) | (uint64_t)(uint32_t)rowKey[0];
  return dropoutMix(dropoutMix(k) ^ (uint64_t)site);
}

/* The first element index of row `row`'s part. A key i32[rows, 2] keys whole
   rows (the row's key: key + 2 * row). A part's key i32[2, rows, 2], which
   -lm-spmd writes for a rank's part of a split op (tensor parallelism's heads,
   sequence parallelism's positions), has the rows' keys first and then, word
   0 of each row, the part index c: the part holds elements c * m ...
   (c + 1) * m - 1 of the whole row (m: the part's elements a row), so each
   rank drops what one process drops. */
LMC_HD uint64_t dropoutPartBase(const int32_t *key, bool parts, int64_t rows, int64_t row, uint64_t partElements) {
  return parts ? (uint64_t)(uint32_t)key[2 * (rows + row)] * partElements : 0;
}

/* Elements are dropped when the top 32 bits of their hash fall below
   p * 2^32: probability p up to the 2^-32 resolution. p = 0 drops nothing. */
LMC_HD uint32_t dropoutThreshold(double p) {
  double t = p * 4294967296.0;
  return t <= 0 ? 0u : t >= 4294967295.0 ? 4294967295u : (uint32_t)t;
}

/* Whether element `index` of the row whose stream is `stream` is kept. */
LMC_HD bool dropoutKeep(uint64_t stream, uint64_t index, uint32_t threshold) {
  return (uint32_t)(dropoutMix(stream ^ index) >> 32) >= threshold;
}

/* The factor an element is multiplied by: 1 / (1 - p) if kept, else 0
   (inverted dropout: the expectation is unchanged, evaluation needs no scale). */
template <typename A> LMC_HD A dropoutFactor(uint64_t stream, uint64_t index, uint32_t threshold, A scale) {
  return dropoutKeep(stream, index, threshold) ? scale : (A)0;
}

}  // namespace lmc

#endif  // LMC_DROPOUT_MATH_H
