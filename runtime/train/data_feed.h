/* Implements: what `lmrt run` feeds train_step and eval, from the plan's
   DataConfig (docs/runtime.md, "Batch transforms"): the batch transform it
   names ("causal" windows, "mlm" masked-LM rows with optional sentence
   pairs, "span_mlm" SpanBERT's span-masked rows, "span_corruption" T5's
   sentinel-corrupted inputs and targets, or the example transforms
   "classify", "regression", "sft", "preference" over records), filling every
   input the programs declare, each in its own type. A
   batch depends on nothing but (seed, sample index), so the feed has no state
   a checkpoint would need to hold. */
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace lmrt {

class Session;
class TokenSource;
class CausalBatcher;
class MlmBatcher;
struct MlmBatch;
class SpanMlmBatcher;
struct SpanMlmBatch;
class SpanCorruptionBatcher;
struct SpanCorruptionBatch;
class ExampleBatcher;
struct ExampleBatch;

class DataFeed {
public:
  /* Checks the plan's DataConfig against train_step's (and, with evalOn,
     eval's) inputs and opens DIR's shards; throws with the reason otherwise
     ("plan has no data pipeline ...", a missing shard, a token out of range).
     The causal transform is main's CausalBatcher (any TokenSource format, the
     meta.json checks); mlm reads the splits through TokenSource too. */
  DataFeed(const Session &session, const std::string &dir, uint64_t seed, bool evalOn);
  ~DataFeed();

  /* The inputs of training step `step` (0-based; rows firstRow.. of the step's
     batch, for micro-batches) / validation batch `index`; valid until the next
     call. */
  const std::map<std::string, TensorRef> &trainInputs(uint64_t step, uint64_t firstRow = 0);
  const std::map<std::string, TensorRef> &valInputs(uint64_t index);
  /* The splits (for checkpoints' data fingerprints and file stamps). */
  const TokenSource &train() const;
  const TokenSource &val() const;
  /* "data: train DIR/train.bin (LMC shard), N tokens; val ..." for the log. */
  std::string describe() const;
  /* Throws unless the validation shard holds one batch row. */
  void checkValidation() const;
  /* Rows of one batch (train_step's first dimension): micro-batch j of a step
     reads trainInputs(step, j * rows()). */
  int64_t rows() const { return rows_; }
  /* Tokens a training step reads (for tok/s): rows x seq. */
  double tokensPerStep() const { return tokensPerStep_; }
  /* Micro-batches a training step reads (lmrt run --accumulate): the example
     transforms' epochs count every row of a step. */
  void setAccumulate(int64_t micro);
  /* The example transforms' batcher (classify, regression, sft, preference), else null. */
  const ExampleBatcher *examples() const { return examples_.get(); }
  /* The inputs under the names of the parity dump ("tokens" for the causal window). */
  std::vector<std::pair<std::string, TensorRef>> dumpInputs() const;

private:
  void convert(const MlmBatch &b);
  void convert(const SpanMlmBatch &b);
  void convert(const SpanCorruptionBatch &b);
  void convert(const ExampleBatch &b);
  /* The dropout_key input, if the programs read one: row r's key is
     counterRandom(seed, Train/ValDropout, step or batch index, firstRow + r),
     keyed like the rows' data, so micro-batches, ranks and resumes agree. */
  void fillDropoutKeys(bool validation, uint64_t index, uint64_t firstRow);
  uint64_t seed_;
  bool hasDropoutKey_ = false;
  std::string tokenName_;  // the causal window's input
  std::string transform_;
  std::unique_ptr<CausalBatcher> causal_;
  std::unique_ptr<MlmBatcher> mlm_;
  std::unique_ptr<MlmBatch> mlmBatch_;
  std::unique_ptr<SpanMlmBatcher> span_;
  std::unique_ptr<SpanMlmBatch> spanBatch_;
  std::unique_ptr<SpanCorruptionBatcher> corrupt_;
  std::unique_ptr<SpanCorruptionBatch> corruptBatch_;
  std::unique_ptr<ExampleBatcher> examples_;
  std::unique_ptr<ExampleBatch> exampleBatch_;
  std::map<std::string, TensorType> types_;       // the programs' inputs
  std::map<std::string, std::vector<char>> bufs_;  // their storage
  std::map<std::string, TensorRef> refs_;
  double tokensPerStep_ = 0;
  int64_t rows_ = 0;
};

}  // namespace lmrt
