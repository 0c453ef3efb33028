/* Implements: `lmrt eval`, the loss of trained weights on a whole data split.

   The split's tokens are cut into consecutive windows of seq + 1 tokens that
   overlap by one (window w is tokens [w·seq, w·seq + seq]), so every token but
   the first is predicted exactly once, from the context since its window's
   start. Windows go B to a batch (the "eval" program's i32[B, seq + 1] input)
   in order; the windows left over after the last whole batch are not scored
   (the report says how many tokens that leaves out). The loss is the mean of
   the batches' "eval" losses, i.e. nats per scored token; perplexity is its
   exp; bits per byte is loss / ln 2 / (bytes per token), with the bytes per
   token from the split's meta.json counts (1 for byte-level data), or given.

   A plan whose data transform is not causal (mlm, ...) is scored on the
   batches `lmrt run` validates on: the transform's validation batches 0..n-1
   of the split under `seed` (the run's --seed gives the run's own batches),
   n = --batches, else as many as the split's tokens fill (rows x seq each);
   perplexity and bits per byte then do not apply. Every metric the objective
   declares (`metric name = ...`) is averaged over the batches too. On D data
   ranks such a plan's batches (of its batch / D rows) are split whole, round
   robin, and every batch's scores gathered and added in batch order: one
   process's figures for the plan of batch / D rows, bit for bit. */
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"

namespace lmrt {

class Session;

struct EvalOptions {
  std::string dataDir;
  std::string split = "val";  // val | train
  int64_t maxBatches = 0;     // 0: every whole batch
  double bytesPerToken = 0;   // 0: from DIR/meta.json
  uint64_t seed = 1;          // the batch transform's seed (non-causal plans)
  // On a mesh's processes (joinCommandRanks): this process's data rank, of dataRanks.
  // A causal plan's global batch (dataRanks x the eval program's rows) is split over
  // the data ranks as `lmrt run` splits a training batch, so the windows scored are
  // those of the one-process plan of that batch; other transforms' batches (the plan's
  // own) are split whole over the data ranks (batch b on rank b mod dataRanks).
  int dataRank = 0, dataRanks = 1;
};

struct EvalResult {
  std::string file, format;
  uint64_t tokens = 0;        // in the split
  int64_t batches = 0, rows = 0, seq = 0;
  uint64_t tokensScored = 0;  // predictions: batches × rows × seq (causal)
  std::string transform;      // the plan's batch transform
  double loss = 0;            // nats per scored token
  double perplexity = 0;      // causal only
  std::vector<std::pair<std::string, double>> metrics;  // plan order, means over the batches
  std::optional<double> bytesPerToken, bitsPerByte;
};

EvalResult evaluateSplit(Session &session, const EvalOptions &options);

/* The mean "eval" loss and the mean of each metric (plan order) over batches
   0..n-1, whose inputs `batch(i)` gives: the one loop that scores a plan, used by
   `lmrt eval` and by `lmrt run`'s evaluations alike. With `requireFinite`, a
   non-finite batch loss is an error naming the batch. With `dataRanks` > 1 each
   batch's loss and metrics are the mean over the data group's ranks (each scored its
   rows of the batch; the rank-order sum, so every rank gets the same bits). */
struct EvalScores {
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;
};
EvalScores scoreEval(Session &session, int64_t batches,
                     const std::function<std::map<std::string, TensorRef>(int64_t)> &batch, bool requireFinite,
                     int dataRanks = 1);

}  // namespace lmrt
