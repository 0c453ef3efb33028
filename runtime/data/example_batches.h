/* Implements: the batch transforms over example datasets (`lmrt data build
   --format jsonl`): "classify" (one or two texts and a label), "regression"
   (one or two texts and a float target), "sft" (prompt and response, the loss
   on the response) and "preference" (prompt, chosen and rejected response).

   A row is [CLS] A [SEP] [PAD]... or, when the dataset has a second text field,
   [CLS] A [SEP] B [SEP] [PAD]... (ids in contract/transform_spec.h), with
   segment 0 up to the first [SEP] and 1 after it, attention mask 1 on real
   tokens, and `last` = b * seq + (the row's last real position), the row that
   last-token pooling (GPT, LLaMA) reads. A pair too long for the row loses
   tokens from the end of the longer text, one at a time (Hugging Face's
   "longest_first" truncation); a single text is cut at the row's end.
   The texts are the dataset's text fields in --fields order (A, then B), the
   label its first label field, the target its first target field.

   sft and preference rows are causal: prompt response [SEP] [PAD]..., cut at
   the row's end (as TRL's max_seq_length), [SEP] ending the response (as an
   eos token); `labels` at position t is the token at t + 1 where that token is
   in the response or is the final [SEP], -100 elsewhere (the prompt and the
   padding carry no loss), so `cross_entropy(lm(ids), labels, ignore_index =
   -100)` is SFT's loss. `last` is the row of the final token. preference
   gives the chosen and the rejected row of each record under chosen_* and
   rejected_* (ids, labels, mask, last). The texts are the dataset's text
   fields in --fields order: prompt, response (sft); prompt, chosen, rejected.

   tokens (token classification) rows are [CLS] text [SEP] [PAD]... of the
   first text field, cut at the row's end, with `labels` the first tags
   field's labels at the text's positions (a word's tag on its first token)
   and -100 on [CLS], [SEP], padding and every other token.

   span (SQuAD-style extraction) rows are [CLS] question [SEP] context [SEP]
   [PAD]... (segments 0, then 1 from the context on), the question cut to
   max_question tokens, the context to the rest of the row (HF's
   "only_second" truncation, one window, no doc stride). The context is the
   text field the span field follows, the question the other text field.
   start_positions / end_positions are the row positions of the answer's first
   and last token, or 0 ([CLS]) both when the answer is not wholly in the kept
   context (as HF's run_qa labels such features); -100 on validation rows past
   the last record. With doc_stride = S > 0 a context longer than its room
   (seq - question - 3) is split into windows, as HF's run_qa tokenizes with
   stride = S: window w keeps context tokens [w * step, w * step + room), step
   = room - S (consecutive windows share S tokens), until one reaches the
   context's end; each window is a row of its own (a "feature"), its answer
   positions those of the answer if wholly inside it, else 0 ([CLS]) both.
   Training's epochs and validation's batches then go over the features
   (record by record, in window order) in place of the records.

   seq2seq (encoder-decoder, as HF's T5 fine-tuning) rows: `ids` the first
   text field (the input) cut to seq - 1 tokens, then EOS, padded with T5's
   pad 0 (attention_mask 1 on the input and EOS); `labels` [rows, target_seq]
   the second (the target) cut to target_seq - 1, then EOS, -100 on padding;
   `decoder_ids` the labels shifted right after the start id 0, padding 0
   (HF's _shift_right). The texts may not hold bytes 0 and 1 (T5's pad and EOS).

   Training visits the records in epochs: sample g (row r of step s's batch of
   stepRows rows, g = s * stepRows + r) is record perm_e[g mod R] of epoch
   e = g div R, perm_e a shuffle keyed by (seed, e). So every epoch is one pass
   over the R records in a fresh order, and a batch is a pure function of
   (seed, step): a resumed run sees the same batches. Validation batch i holds
   records i * rows .. in file order; rows past the last record repeat record 0
   with label -100 (the ignore index; sft, preference and seq2seq: every label -100),
   so `cross_entropy` and `accuracy` with ignore_index = -100 score each record
   exactly once (regression has no ignore index: its rows past the end repeat
   record 0).

   With pack = true (classify, regression, tokens, span, sft, preference, seq2seq;
   packing.h) a row holds several examples end to end, each exactly as its padded row has it: training row g is row g
   of the concatenation of the epochs' packed rows (each epoch's records packed
   in that epoch's order), validation packs the records in file order (rows
   past the last repeat record 0 with only -100 labels). Besides the padded
   outputs, doc_ids (example k of the row on its tokens, the row's count of
   examples on its padding) and positions (a token's position in its example)
   are produced; classify and regression give cls_index [b, k] (the row
   b * seq + i of the row's k-th [CLS]) and last_index [b, k] (of its last
   token) in place of last, classify example_labels [b, k] in place of labels,
   regression example_targets and example_mask [b, k] (1 where the row has a
   k-th example) in place of targets; tokens' labels are per token as padded;
   sft's labels end at each example (the last token of an example predicts
   nothing) and it has no last. preference packs each record's pair by the
   longer of its two examples: chosen row b holds the chosen examples of some
   records and rejected row b their rejected examples in the same order, each
   side with its own chosen_/rejected_ doc_ids, positions and last_index [b, k],
   and example_mask [b, k] (1 where the rows have a k-th pair) in place of
   chosen_last and rejected_last. seq2seq packs by both parts (a row closes
   when the input or the target does not fit): the k-th example's input in
   the encoder's row, its target (its own start id 0 first) in the decoder's
   row, decoder_doc_ids [b, target_seq] its ids there. span packs its units
   (records, or with a doc stride windows), each exactly as its padded row,
   and gives example_start_positions / example_end_positions [b, k] (the k-th
   example's answer as row positions, its own [CLS] when cut off; -100 past
   the examples) in place of start_positions / end_positions. */
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/examples.h"
#include "runtime/data/packing.h"
#include "runtime/data/token_source.h"

namespace lmrt {

enum class ExampleTask { Classify, Regression, Sft, Preference, Tokens, Span, Seq2Seq };
/* The task of a transform name, or false. */
bool exampleTask(const std::string &transform, ExampleTask &task);

/* One batch by output name (contract/transform_spec.h): the i32 outputs and
   the float ones, row-major [rows, seq] or [rows]. */
struct ExampleBatch {
  std::map<std::string, std::vector<int32_t>> ints;
  std::map<std::string, std::vector<float>> floats;
};

class ExampleBatcher {
public:
  /* Opens DIR/train.examples and DIR/val.examples and checks them against the
     task: the fields it needs, byte data (the specials follow the bytes), every
     label below `classes` (classify). Errors name the file and record. */
  ExampleBatcher(const std::string &dir, ExampleTask task, int64_t rows, int64_t seq, int64_t classes,
                 uint64_t seed);
  ~ExampleBatcher();

  /* Rows a training step reads in all (rows x micro-batches): consecutive
     steps take consecutive samples of the epoch order. Default: rows. */
  void setStepRows(uint64_t n) { stepRows_ = n; }
  void trainBatch(uint64_t step, ExampleBatch &out, uint64_t firstRow = 0) const;
  void valBatch(uint64_t index, ExampleBatch &out) const;
  /* Throws unless the validation split has a record. */
  void checkValidation() const;
  /* span: the most tokens a question keeps (the transform's max_question). */
  void setMaxQuestion(int64_t n) { maxQuestion_ = n; }
  /* seq2seq: the decoder rows' length (the transform's target_seq). */
  void setTargetSeq(int64_t n) { targetSeq_ = n; }
  /* span: where record's context starts in its row and how many of its
     tokens the row keeps (the row is [CLS] question [SEP] context [SEP]);
     `window` > 0 with a doc stride: that window, whose first context token
     is windowStart (else 0). */
  void spanRow(const ExampleShard &s, uint64_t record, int64_t &contextStart, int64_t &kept, int64_t window = 0,
               int64_t *windowStart = nullptr) const;
  /* span: the tokens of a record's window in a row ([CLS] question [SEP]
     context [SEP]; packed, its length in the row). */
  int64_t spanLength(const ExampleShard &s, uint64_t record, int64_t window) const;
  /* span: the windows of a record's context (1 without a doc stride). */
  int64_t spanWindows(const ExampleShard &s, uint64_t record) const;
  /* span: split long contexts into windows overlapping by `stride` tokens
     (the transform's doc_stride; 0: one window). Call after setMaxQuestion. */
  void setDocStride(int64_t stride);
  int64_t docStride() const { return docStride_; }
  /* With a doc stride: the (record, window) of each row of training's epoch
     order and of validation (the features). */
  struct Feature {
    uint64_t record;
    int64_t window;
  };
  const std::vector<Feature> &valFeatures() const { return valFeatures_; }
  /* What an epoch passes over: the records, or with a doc stride the features. */
  uint64_t trainUnits() const { return docStride_ ? trainFeatures_.size() : train_->records(); }
  uint64_t valUnits() const { return docStride_ ? valFeatures_.size() : val_->records(); }
  /* span: the context (text) field and the span field. */
  int contextField() const { return textB_; }
  int spanField() const { return span_; }
  /* Several examples a row (the transform's pack). span packs its units:
     the records, or with a doc stride the windows (call setDocStride after
     or before; either repacks). */
  void setPack(bool on);
  bool packed() const { return pack_; }
  int64_t seq() const { return seq_; }
  /* pack: the training rows of the first `epochs` epochs (each epoch's
     order packs into its own count of rows). */
  uint64_t trainRowsOfEpochs(uint64_t epochs) const;
  /* pack: epoch e's rows (of training records) and validation's. */
  const PackedRows &trainRows(uint64_t epoch) const;
  const PackedRows &valRows() const { return valRows_; }
  /* The tokens record's example has in a row (at most seq). */
  int64_t exampleLength(const ExampleShard &s, uint64_t record) const;
  /* The record sample g of training reads (epoch order above); for tests. */
  uint64_t trainRecord(uint64_t g) const;

  const ExampleShard &trainShard() const { return *train_; }
  const ExampleShard &valShard() const { return *val_; }
  const TokenSource &train() const { return *trainTokens_; }
  const TokenSource &val() const { return *valTokens_; }
  uint64_t valBatches() const;  // batches covering every validation record once

private:
  // `offset`: where in the row the example starts (0 unless packed).
  // `window`: span's context window (doc stride).
  void fillRow(const ExampleShard &shard, uint64_t record, int64_t row, bool ignore, ExampleBatch &out,
               int64_t offset = 0, int64_t window = 0) const;
  void fillCausal(const std::vector<int32_t> &prompt, const std::vector<int32_t> &response, int64_t row,
                  bool ignore, const std::string &prefix, ExampleBatch &out, int64_t offset = 0) const;
  // A packed row of records[0 .. n).
  void fillPacked(const ExampleShard &shard, const uint64_t *records, uint64_t n, int64_t row, bool ignore,
                  ExampleBatch &out) const;
  // preference: the chosen and the rejected rows of the same records.
  void fillPackedPairs(const ExampleShard &shard, const uint64_t *records, uint64_t n, int64_t row, bool ignore,
                       ExampleBatch &out) const;
  void epochOrder(uint64_t epoch, std::vector<uint64_t> &order) const;
  // Row `row` from unit u of an epoch or of validation (a record, or a feature).
  void fillUnit(const ExampleShard &shard, const std::vector<Feature> &features, uint64_t u, int64_t row,
                bool ignore, ExampleBatch &out) const;
  void fillSeq2Seq(const std::vector<int32_t> &input, const std::vector<int32_t> &target, int64_t row, bool ignore,
                   ExampleBatch &out, int64_t offset = 0, int64_t targetOffset = 0) const;
  // span: the window's answer as positions in its own row (0, [CLS], when cut off).
  void spanAnswer(const ExampleShard &s, uint64_t record, int64_t window, int32_t &start, int32_t &end) const;
  // Unit u of shard s: a record (window 0), or with a doc stride its feature.
  Feature feature(const ExampleShard &s, uint64_t u) const;
  // seq2seq: the tokens of a record's target row part (target EOS, at most target_seq).
  int64_t targetLength(const ExampleShard &s, uint64_t record) const;
  // Packs `order` of shard s (seq2seq: by both the input's and the target's length).
  PackedRows pack(const ExampleShard &s, const std::vector<uint64_t> &order) const;
  void resize(ExampleBatch &out) const;
  std::unique_ptr<ExampleShard> train_, val_;
  std::unique_ptr<TokenSource> trainTokens_, valTokens_;
  ExampleTask task_;
  int64_t rows_, seq_, classes_;
  uint64_t seed_, stepRows_;
  int textA_ = -1, textB_ = -1, textC_ = -1, label_ = -1, target_ = -1, tags_ = -1, span_ = -1;
  int64_t maxQuestion_ = 64;
  int64_t targetSeq_ = 0;
  // The last epoch's order, cached: a pure function of (seed, epoch).
  mutable uint64_t permEpoch_ = UINT64_MAX;
  mutable std::vector<uint64_t> perm_;
  bool pack_ = false;
  int64_t docStride_ = 0;
  std::vector<Feature> trainFeatures_, valFeatures_;
  PackedRows valRows_;
  // pack: the cumulative training rows of epochs 0, 1, ... (as far as asked),
  // and the last epoch's packing, cached.
  mutable std::vector<uint64_t> epochRowsEnd_;
  mutable uint64_t packEpoch_ = UINT64_MAX;
  mutable PackedRows packRows_;
};

}  // namespace lmrt
