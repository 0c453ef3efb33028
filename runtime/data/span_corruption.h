/* Implements: the "span_corruption" batch transform, T5's pretraining
   objective (Raffel et al. 2020) as Hugging Face's run_t5_mlm_flax.py writes
   it (random_spans_noise_mask, create_sentinel_ids, filter_input_ids,
   compute_input_and_target_lengths, shift_tokens_right), over a train/val
   shard pair of byte tokens.

   For inputs of seq ids, a row reads R raw tokens, R and the targets' length
   Tt given by compute_input_and_target_lengths(seq, noise_density,
   mean_noise_span_length) (contract/transform_spec.h; 568 and 114 for 512 at
   the defaults 0.15 and 3): R consecutive tokens from a uniform offset of the
   split, crossing documents freely (as the causal transform). Of them N =
   round(R x noise_density) are noise (kept in [1, R - 1]), in S =
   round(N / mean_noise_span_length) spans (at least 1); the N noise tokens are
   cut into S spans and the R - N others into S runs, each cut a uniformly
   random composition (HF's _random_segmentation: S - 1 cut points among the
   N - 1 gaps), and the row alternates run, span, run, span, ... from a
   non-noise run. Sentinel k (the k-th span, from 0) is vocab - 1 - k.
     ids            = run_1 s_0 run_2 s_1 ... run_S s_(S-1) EOS      (exactly seq)
     labels         = s_0 span_1 s_1 span_2 ... s_(S-1) span_S EOS   (exactly Tt)
     decoder_ids    = 0, labels[0 .. Tt - 2]  (shifted right; 0 = T5's pad, its start id)
     attention_mask = 1 everywhere
   EOS is 1 and pad 0 (T5's ids; on byte data those are the bytes NUL and SOH,
   which text does not hold). The lengths are exact, so no row is padded and
   no label is -100 (the outputs keep the seq2seq transform's meaning for
   both).

   Randomness is keyed like the other transforms': a row's key is
   counterRandom(seed, Train/ValCorrupt, step or batch index, row), and its
   draws counterRandom(seed, stream, key, k), so resumes, micro-batches and
   data-parallel ranks see the same rows. */
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/counter_rng.h"
#include "runtime/data/token_source.h"

namespace lmrt {

struct SpanCorruptionOptions {
  double noiseDensity = 0.15;
  double meanSpanLength = 3.0;
};

/* One batch, row-major: ids and attention [rows, seq], decoder and labels [rows, Tt]. */
struct SpanCorruptionBatch {
  std::vector<int32_t> ids, decoder, labels;
  std::vector<uint8_t> attention;
};

/* HF's random_spans_noise_mask for a row of `length` raw tokens: 1 on noise;
   the cut points of both segmentations come from counterRandom(seed, stream,
   sample, k), k = 0, 1, ... */
std::vector<uint8_t> spanNoiseMask(uint64_t seed, RngStream stream, uint64_t sample, int64_t length,
                                   const SpanCorruptionOptions &o);

class SpanCorruptionBatcher {
public:
  /* Opens the train and val files of DIR (findSplitFiles), checks that every
     token is a byte and that the train split holds one row's raw tokens;
     throws when seq has no raw length (compute_input_and_target_lengths) or
     vocab has no room for a row's sentinels above the bytes. */
  SpanCorruptionBatcher(const std::string &dir, int64_t rows, int64_t seq, int64_t vocab,
                        const SpanCorruptionOptions &options, uint64_t seed);

  int64_t rows() const { return rows_; }
  int64_t seq() const { return seq_; }
  int64_t targetSeq() const { return targets_; }
  int64_t rawLength() const { return raw_; }
  /* Rows firstRow .. firstRow + rows - 1 of training step `step` (0-based). */
  void trainBatch(uint64_t step, SpanCorruptionBatch &out, uint64_t firstRow = 0) const {
    fill(*train_, false, step, out, firstRow);
  }
  /* Throws unless the validation shard holds one row's raw tokens. */
  void checkValidation() const;
  void valBatch(uint64_t index, SpanCorruptionBatch &out) const;
  const TokenSource &train() const { return *train_; }
  const TokenSource &val() const { return *val_; }

private:
  void fill(const TokenSource &shard, bool validation, uint64_t index, SpanCorruptionBatch &out,
            uint64_t firstRow) const;
  std::unique_ptr<TokenSource> train_, val_;
  int64_t rows_, seq_, vocab_, raw_, targets_;
  SpanCorruptionOptions options_;
  uint64_t seed_;
};

}  // namespace lmrt
