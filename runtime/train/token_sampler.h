/* Implements: the choice of one token from a row of logits: greedy when
   temperature is 0, else a draw from softmax(logits / temperature) restricted
   to the top_k largest logits (all when top_k is 0; ties go to the lower id).
   The draw inverts the cumulative distribution at a given uniform `u`, so the
   caller's counter-based RNG alone decides the result. */
#pragma once
#include <cstdint>
#include <vector>

namespace lmrt {

/* `u` in [0, 1). Returns a token id in [0, logits.size()). */
int64_t sampleToken(const std::vector<double> &logits, double temperature, int64_t topK, double u);

}  // namespace lmrt
