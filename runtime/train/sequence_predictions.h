/* Implements: `lmrt eval --predictions FILE` for the per-token and causal
   example transforms (tokens, sft, preference): the plan's forward program
   run on the validation batches, one JSON line per validation record, in
   record order (padded or packed: a packed row's k-th example is read from
   its own tokens, doc_ids = k):
     tokens      {"record": i, "labels": [gold tag per word], "predictions": [argmax tag per word]}
                 (one entry per labelled position: a word's first token, as the loss has them)
     sft         {"record": i, "tokens": n, "loss": mean NLL, "token_accuracy": a}
                 (over the n response tokens the loss scores; nats)
     preference  reward model (forward output one number a row, or a slot of a packed row):
                 {"record": i, "chosen_reward": r_c, "rejected_reward": r_r, "margin": r_c - r_r,
                  "correct": r_c > r_r}
                 causal LM (forward output [rows, seq, V]; DPO): the summed log-probs of
                 the response tokens under the policy and, when the plan holds a frozen
                 reference (parameters ref.*), under it:
                 {"record": i, "chosen_logp": .., "rejected_logp": .., "chosen_ref_logp": ..,
                  "rejected_ref_logp": .., "chosen_reward": logp_c - ref_c,
                  "rejected_reward": logp_r - ref_r, "margin": .., "correct": margin > 0}
                 (DPO's implicit rewards are beta times these)
   A label at or above the logits' width (the transforms' [SEP], 258, ending a
   response) is scored as the newline, byte 10, as the byte models of
   models/post/ read it. */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

class Session;

/* Writes FILE (atomically) for the weights loaded in `session`; returns the
   records written. An empty `path` runs every batch and writes nothing (a
   rank other than 0 of a mesh whose programs hold collectives: `lmrt eval`). Throws unless the transform is tokens, sft or preference
   and the plan has one forward program with one output of the shape above. */
uint64_t writeSequencePredictions(Session &session, const std::string &dataDir, uint64_t seed,
                                  const std::string &path);

}  // namespace lmrt
