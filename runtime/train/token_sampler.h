/* Implements: the choice of one token from a row of logits: greedy when
   temperature is 0, else a draw from softmax(logits / temperature) restricted
   to the top_k largest logits (all when top_k is 0; ties go to the lower id) and to
   the nucleus of probability top_p.
   The draw inverts the cumulative distribution at a given uniform `u`, so the
   caller's counter-based RNG alone decides the result. */
#pragma once
#include <cstdint>
#include <vector>

namespace lmrt {

/* `u` in [0, 1). Returns a token id in [0, logits.size()). With topP < 1 (nucleus
   sampling, after temperature and top_k as Hugging Face orders them), the draw is
   among the fewest most likely candidates whose probabilities add up to at least topP
   (ties to the lower id; at least one). topP >= 1 changes nothing. */
int64_t sampleToken(const std::vector<double> &logits, double temperature, int64_t topK, double u,
                    double topP = 1.0);

/* The CTRL paper's repetition penalty, as Hugging Face's RepetitionPenaltyLogitsProcessor:
   the logit of every id that occurs in `seen` is divided by `penalty` when positive and
   multiplied by it when negative (penalty > 1 discourages repeats; 1 changes nothing). */
void penalizeRepeats(std::vector<double> &logits, const std::vector<int32_t> &seen, double penalty);

}  // namespace lmrt
