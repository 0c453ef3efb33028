/* Implements: the "causal" batch transform over a train/val shard pair.

   A batch is `rows` windows of `window` (= seq + 1) consecutive tokens; the
   model reads window[:-1] and predicts window[1:]. Row r of training step s
   starts at a uniform offset drawn from counterRandom(seed, Train, s, r), and
   row r of validation batch i from counterRandom(seed, Val, i, r): the data a
   step sees depends on nothing but (seed, step), so resumed, re-threaded or
   re-evaluated runs see identical batches, and every evaluation scores the
   same validation windows. Windows may span document boundaries (as in GPT-2
   and llm.c training). */
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/data/shard.h"

namespace lmrt {

/* Throws naming the shard, token and offset if some token is >= vocab:
   "data 'DIR/train.bin': token 300 at offset 1234 is outside the plan's
   vocabulary (256)". */
void checkShardVocab(const Shard &shard, int64_t vocab);

/* Throws unless `dir` is an existing directory; returns it with a trailing '/'. */
std::string checkDataDir(const std::string &dir);
/* Opens DIR/NAME (DIR with its trailing '/'), with a clear error when missing. */
std::unique_ptr<Shard> openShard(const std::string &dir, const char *name);

class CausalBatcher {
public:
  /* Opens DIR/train.bin and DIR/val.bin, validating both (clear errors for a
     missing directory or file). */
  CausalBatcher(const std::string &dir, int64_t rows, int64_t window, uint64_t seed);

  int64_t rows() const { return rows_; }
  int64_t window() const { return window_; }
  const Shard &train() const { return *train_; }
  const Shard &val() const { return *val_; }
  void checkVocab(int64_t vocab) const;

  /* Fills out[rows * window] (row-major) with training batch `step` (0-based):
     rows firstRow .. firstRow + rows - 1 of that step's row sequence, so K
     micro-batches of b rows (firstRow = j * b) are exactly the rows of one batch
     of K * b rows (gradient accumulation matches a larger batch). */
  void trainBatch(uint64_t step, int32_t *out, uint64_t firstRow = 0) const;
  /* Fills out[rows * window] with validation batch `index`. Throws if the
     validation shard is shorter than one window. */
  /* Throws unless the validation shard holds at least one window (checked before
     training starts, not at the first evaluation). */
  void checkValidationWindow() const;
  void valBatch(uint64_t index, int32_t *out) const;

  /* The window start of (step or batch index, row) in a shard of n tokens;
     exposed for tests. */
  static uint64_t windowStart(uint64_t seed, bool validation, uint64_t index, uint64_t row,
                              uint64_t tokens, uint64_t window);

private:
  void fill(const Shard &shard, bool validation, uint64_t index, int32_t *out, uint64_t firstRow) const;
  std::unique_ptr<Shard> train_, val_;
  int64_t rows_, window_;
  uint64_t seed_;
};

}  // namespace lmrt
