/* Implements: the "causal" batch transform over a train/val shard pair.

   A batch is `rows` windows of `window` (= seq + 1) consecutive tokens; the
   model reads window[:-1] and predicts window[1:]. Row r of training step s
   starts at a uniform offset drawn from counterRandom(seed, Train, s, r), and
   row r of validation batch i from counterRandom(seed, Val, i, r): the data a
   step sees depends on nothing but (seed, step), so resumed, re-threaded or
   re-evaluated runs see identical batches, and every evaluation scores the
   same validation windows. Windows may span document boundaries (as in GPT-2
   and llm.c training).

   The data directory holds the token files of each split, in any format
   TokenSource reads (LMC, llm.c, Megatron): every `*.bin` whose name has the
   word "train" (or "val") between `_`, `-` or `.` or at either end, in name
   order, concatenated: `train.bin`, or llm.c's `tiny_shakespeare_train.bin`,
   or `fineweb_train_000001.bin`, `fineweb_train_000002.bin`, ... (a Megatron
   `.bin` with its `.idx` beside it). */
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/data/dataset_meta.h"
#include "runtime/data/token_source.h"

namespace lmrt {

/* The token files of `split` ("train" or "val") in data directory `dir` (rules
   above), in order; throws naming the directory when there is none. */
std::vector<std::string> findSplitFiles(const std::string &dir, const std::string &split);
/* Throws unless `dir` is an existing directory. */
void checkDataDir(const std::string &dir);
/* The check of the masked-LM transforms (mlm, span_mlm), which read byte data:
   throws, naming `transform`, unless DIR's meta.json (if any) records the byte
   tokenizer and every token of `train` and `val` is a byte (below
   data::kFirstSpecial: the ids above are the transforms' special tokens). */
void checkByteData(const std::string &dir, const TokenSource &train, const TokenSource &val,
                   const char *transform);

class CausalBatcher {
public:
  /* Opens the train and val files of DIR (rules above), validating both (clear
     errors for a missing directory or file). */
  CausalBatcher(const std::string &dir, int64_t rows, int64_t window, uint64_t seed);

  int64_t rows() const { return rows_; }
  int64_t window() const { return window_; }
  const TokenSource &train() const { return *train_; }
  const TokenSource &val() const { return *val_; }
  /* DIR/meta.json when the directory has one (lmrt data build writes it). */
  const std::optional<DatasetMeta> &meta() const { return meta_; }
  /* Every token of both splits is in [0, vocab), and a tokenizer recorded in
     meta.json has no more ids than the plan's vocabulary. */
  void checkVocab(int64_t vocab) const;
  /* "data: train DIR/train.bin (LMC shard), 2419795 tokens; val ..." for the log. */
  std::string describe() const;

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
  void fill(const TokenSource &shard, bool validation, uint64_t index, int32_t *out, uint64_t firstRow) const;
  std::unique_ptr<TokenSource> train_, val_;
  std::optional<DatasetMeta> meta_;
  int64_t rows_, window_;
  uint64_t seed_;
};

}  // namespace lmrt
