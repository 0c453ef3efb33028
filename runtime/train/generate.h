/* Implements: `lmrt sample`, byte-level text generation with a plan's
   "forward" program (tokens i32[B, T] -> logits [B, T, V]).
   The context is the last T tokens of prompt + generated text, placed at the
   start of batch row 0; the rest of the batch is padding (0), and positions
   after the context's end do not influence it because attention is causal.
   Token i is drawn from softmax(logits / temperature), restricted to the
   top_k most likely tokens when top_k > 0, with the uniform number
   counterRandom(seed, Sample, i): the same seed gives the same text.
   Temperature 0 is greedy decoding. An empty prompt starts from "\n". */
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lmrt {

class Session;

struct SampleOptions {
  std::string prompt;
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t topK = 0;
  uint64_t seed = 1;
};

/* Generates `tokens` bytes; calls `emit` with each one as it is produced. */
void generate(Session &session, const SampleOptions &options,
              const std::function<void(unsigned char)> &emit);

/* The same over token ids, for any tokenizer: continues `context` (ids, not
   empty) by up to options.tokens ids drawn among [0, min(logits width, plan
   vocabulary, idLimit)), calling `emit` with each; stops early after emitting
   `stopId` (-1: never). options.prompt is ignored. */
void generateIds(Session &session, const SampleOptions &options, std::vector<int32_t> context,
                 int64_t idLimit, int32_t stopId, const std::function<void(int32_t)> &emit);

}  // namespace lmrt
