/* Implements: the "mlm" batch transform (BERT's and RoBERTa's pretraining
   batches) over a train/val shard pair of byte tokens.

   A sample is row r of step i's batch (r counts across the micro-batches of a
   step, as the causal windows' rows do: firstRow); its key is
   g = counterRandom(seed, stream, i, r), and every random decision for it is
   counterRandom(seed, stream, g, k) for its own k. So a batch is a pure
   function of (seed, sample): a resumed run sees the same batches (the
   transform has no state beyond these numbers), while a sample drawn again
   later gets a fresh mask (dynamic masking, as RoBERTa).
   Validation batches use their own streams, so every evaluation scores the
   same masked rows.

   A row is [CLS] A [SEP] [PAD]... or, with nsp, [CLS] A [SEP] B [SEP] [PAD]...
   (ids in contract/transform_spec.h). The splits are read through
   TokenSource (the files CausalBatcher finds, in any format it reads). A and B
   are contiguous text: A starts
   at a uniform offset; B is the text right after A (nsp label 0) or, with
   probability 1/2, text from another uniform offset (label 1). With nsp, A and
   its actual next B stay inside one document of the shard (a row crossing the
   document's end moves back; a shorter document is a shorter, padded row;
   documents come from LMC shards, so nsp refuses other formats);
   without nsp rows cross documents freely (RoBERTa's FULL-SENTENCES). A row fills
   seq except, with probability short_seq_prob, when its length is uniform in
   [2, full] (as BERT's short sequences; the rest is padding). Every non-special
   position is selected with probability mask_prob; a selected token is
   replaced by [MASK] (80 %), by a uniform byte (10 %) or kept (10 %), and its
   label is the original id; every other label is -100. Every position also
   gets 32 random bits of a stream of its own (random_bits: the randomness of
   the model's own draws, lm.sample), keyed like the rest by (sample, position).

   With sop (ALBERT's sentence-order prediction) a row is a pair too, laid out
   as with nsp, but B is always the text right after A in A's document; with
   probability 1/2 the two are swapped, [CLS] B [SEP] A [SEP] (sop label 1, as
   HF's sentence_order_label; 0: document order). Segment 0 is whichever comes
   first. nsp and sop exclude each other. */
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/token_source.h"

namespace lmrt {

struct MlmOptions {
  double maskProb = 0.15;
  bool nsp = false;
  double shortSeqProb = 0.0;
  bool sop = false;
  bool pairs() const { return nsp || sop; }
};

/* One batch, row-major [rows, seq] (nsp, sop: [rows]). */
struct MlmBatch {
  std::vector<int32_t> ids, labels, segments, nsp, sop;
  std::vector<int32_t> bits;  // 32 random bits a position (uint32 as i32), for lm.sample
  std::vector<uint8_t> attention;  // 1: a real token, 0: padding
};

class MlmBatcher {
public:
  /* Opens the train and val files of DIR (as CausalBatcher: findSplitFiles) and
     checks that every token is a byte (< 256, below the special ids). */
  MlmBatcher(const std::string &dir, int64_t rows, int64_t seq, const MlmOptions &options, uint64_t seed);

  int64_t rows() const { return rows_; }
  int64_t seq() const { return seq_; }
  /* Rows firstRow .. firstRow + rows - 1 of training step `step` (0-based). */
  void trainBatch(uint64_t step, MlmBatch &out, uint64_t firstRow = 0) const {
    fill(*train_, false, step, out, firstRow);
  }
  /* Throws unless the validation shard holds one full row of text. */
  void checkValidation() const;
  void valBatch(uint64_t index, MlmBatch &out) const;

  /* Row `row` of `out` for the sample of key `sample` (exposed for tests). */
  void fillRow(const TokenSource &shard, bool validation, uint64_t sample, int64_t row, MlmBatch &out) const;
  /* The key of row `row` of batch `index` (training or validation). */
  uint64_t sampleKey(bool validation, uint64_t index, uint64_t row) const;
  const TokenSource &train() const { return *train_; }
  const TokenSource &val() const { return *val_; }

private:
  void fill(const TokenSource &shard, bool validation, uint64_t index, MlmBatch &out, uint64_t firstRow) const;
  std::unique_ptr<TokenSource> train_, val_;
  int64_t rows_, seq_, content_;  // content_: text tokens of a full row
  MlmOptions options_;
  uint64_t seed_;
};

}  // namespace lmrt
