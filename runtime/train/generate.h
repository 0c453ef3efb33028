/* Implements: `lmrt sample`, text generation with a plan (docs/runtime.md,
   "Sampling"). Two ways to get the logits of the next token, which give the
   same text:
   - with a KV cache, when the plan has the "prefill" and "decode" programs
     (lmc writes them for a causal model): prefill runs the context once and
     fills every attention's key/value cache, then decode runs one token at a
     time at its position, reading and extending the caches;
   - without (--no-kv-cache, or a plan without those programs): the "forward"
     program (tokens i32[B, T] -> logits [B, T, V]) re-runs the whole context
     for every token, placed at the start of batch row 0 (the rest of the batch
     is padding, 0; positions after the context's end do not influence it
     because attention is causal).
   The context is the prompt plus the generated text, at most the window W (the
   programs' T). When a token would make it longer, the oldest tokens are
   dropped so that the last W / 2 remain (then the cache is refilled by one
   prefill): both ways read the same context for every token, and with a cache
   a refill costs one forward per W / 2 tokens.
   Token i is drawn from softmax(logits / temperature), restricted to the
   top_k most likely tokens when top_k > 0 and to the nucleus of probability top_p,
   after the repetition penalty over every token of the context (prompt and
   generated), with the uniform number counterRandom(seed, Sample, i): the same
   seed gives the same text.
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
  double topP = 1.0;               // nucleus sampling (token_sampler.h); 1: off
  double repetitionPenalty = 1.0;  // CTRL's, over the whole context (token_sampler.h); 1: off
  uint64_t seed = 1;
  /* Use the prefill and decode programs when the plan has them. */
  bool kvCache = true;
  /* >= 0: with the cache, also run the forward program on the same context for
     every token and fail when a logit differs by more than this (absolute);
     the largest difference is reported on stderr. */
  double checkCache = -1;
};

/* The checks every sampler makes of its options (--tokens, --temperature, --top-k,
   --top-p, --repetition-penalty, --check-kv-cache), each a clear error. */
void checkSampleOptions(const SampleOptions &options);

/* How many tokens of the context survive when the window is full (W / 2, at least 1). */
int64_t contextKeep(int64_t window);

/* Generates `tokens` bytes; calls `emit` with each one as it is produced, and stops
   early when it returns false. */
void generate(Session &session, const SampleOptions &options,
              const std::function<bool(unsigned char)> &emit);

/* The same over token ids, for any tokenizer: continues `context` (ids, not
   empty) by up to options.tokens ids drawn among [0, min(logits width, plan
   vocabulary, idLimit)), calling `emit` with each; stops early after emitting
   `stopId` (-1: never) or when `emit` returns false. options.prompt is ignored. */
void generateIds(Session &session, const SampleOptions &options, std::vector<int32_t> context,
                 int64_t idLimit, int32_t stopId, const std::function<bool(int32_t)> &emit);

}  // namespace lmrt
