/* Implements: `lmrt eval --predictions FILE` for the example transforms
   (classify, regression): the plan's forward program run on the validation
   batches, one JSON line per validation record, in record order:
     classify    {"record": i, "label": y, "logits": [z_0, ..., z_{C-1}]}
     regression  {"record": i, "label": t, "prediction": p}
     span        {"record": i, "start": s, "end": e, "pred_start": s', "pred_end": e',
                  "prediction": "answer text", "answers": ["gold text"]}
                 (row positions; the prediction is the best s' <= e' in the
                 kept context by start + end logit)
   which `lmrt metrics --predictions FILE` scores (accuracy, F1, MCC, ECE;
   Pearson, Spearman; SQuAD exact match and F1; docs/runtime.md §12). Rows past the last record (the
   padding of the last batch) are not written. A packed classify or regression
   plan (pack = true) writes the same lines, slot k of its output
   [rows, seq(, C)] being the row's k-th record, and so does a packed span
   plan (a packed example's logits are those of its own positions). tokens,
   sft and preference plans: sequence_predictions.h. */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/tensor.h"
#include "contract/plan.pb.h"

namespace lmrt {

class Session;

/* The plan's one forward program ("forward", or the only "forward:<model>"). */
std::string predictionProgram(const Session &s);
/* Forward program `name`'s one output, which the prediction writers read (a model
   returning several tensors is an error naming the program). */
const plan::Program &predictionForward(const Session &s, const std::string &name, std::string &output);
/* Value i of a float (f32 or f64) output. */
double valueAt(const TensorRef &t, size_t i);

/* Writes FILE (atomically) for the weights loaded in `session`; returns the
   records written (tokens, sft, preference: writeSequencePredictions). An empty `path` runs every batch and writes nothing (a
   rank other than 0 of a mesh whose programs hold collectives: `lmrt eval`).
   Throws unless the plan's transform is classify, regression or span and it has one forward program with one output of [batch, C]
   (classify), [batch] / [batch, 1] (regression) or [batch, seq, 2] (span);
   packed: [batch, seq, C] or [batch, seq] / [batch, seq, 1]. */
/* `nullScoreDiffThreshold`: SQuAD v2 span plans answer "no answer" when a
   record's null score exceeds its best answer's by more (HF's
   null_score_diff_threshold, default 0; `lmrt eval --null-score-diff-threshold`). */
uint64_t writeExamplePredictions(Session &session, const std::string &dataDir, uint64_t seed,
                                 const std::string &path, double nullScoreDiffThreshold = 0.0);

}  // namespace lmrt
