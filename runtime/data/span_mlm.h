/* Implements: the "span_mlm" batch transform (SpanBERT's pretraining batches,
   Joshi et al. 2020) over a train/val shard pair of byte tokens.

   A row is [CLS] text [SEP]: seq - 2 contiguous tokens from a uniform offset of
   the split, crossing documents freely (one full-length segment, no pairs, no
   padding). Spans of the text are masked until the budget, B = ceil(mask_prob
   x (seq - 2)) tokens, is spent (the budget counts tokens, as the paper's 15 %).

   Spans of whole words (unit = "word", the default, as the paper). The row's
   words are its complete words (words.h: on bytes a maximal run of
   non-whitespace bytes, punctuation included; a word cut by the row's start or
   end is none). A span of L words is word j's first token through word
   j + L - 1's last, with the whitespace between those words and none before or
   after them (on SentencePiece pieces a word's first piece carries its
   U+2581). Each span:
     1. draws L from the geometric distribution with parameter geometric_p
        truncated to [1, max_span] (P(L = l) proportional to p (1 - p)^(l - 1);
        p = 0.2, max_span = 10 give the paper's mean, 3.8 words);
     2. draws a word j uniformly among the row's words; the span is the L words
        from j, fewer where the row has fewer left, and fewer where their tokens
        exceed max_span_tokens (the rows of the SBO's position table: span_pos <
        max_span_tokens; the paper's code keeps such spans whole and drops the
        SBO targets past its table); a word j longer than that table is not a
        start. The span is then cut to the budget left, so a row's last span
        may end inside a word (the paper's code does the same: the budget is
        exact). It is taken when no token of [s - 1, e + 1] (e its last token)
        is masked yet, so spans never overlap or touch and both boundary tokens
        x_{s-1} and x_{e+1} are unmasked text, [CLS] or [SEP]. A length whose 64
        draws of a word all collide takes the first word where it fits, else
        one word fewer (never in rows of ordinary text at mask_prob 0.15). A
        row whose words cannot hold the budget (text without whitespace) masks
        less: the word spans it has, possibly none.
   Spans of tokens (unit = "token"): L tokens (max_span <= max_span_tokens),
   from a uniform start among the text positions where [s, s + L) fits, by the
   same rules.
   Each span as a whole becomes [MASK] (80 %), uniform random bytes (10 %) or
   stays (10 %); every masked token's label is its original id (-100 elsewhere).

   For the span boundary objective every position i gets span_left and
   span_right, rows of the batch's hidden states flattened to [rows * seq, d]:
   b * seq + s - 1 and b * seq + e + 1 for a masked token of span [s, e] in row
   b, and b * seq + i elsewhere (a valid row that the loss ignores); span_pos is
   i - s (0 elsewhere), the token offset in the span (the paper's position
   embeddings p_1, p_2, ... index tokens), below max_span_tokens.

   Randomness is keyed as the mlm transform's (mlm.h): a sample's key is
   counterRandom(seed, stream, step, row) and each decision is
   counterRandom(seed, stream, key, k) for its own k, in streams of its own. */
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/counter_rng.h"
#include "runtime/data/token_source.h"
#include "runtime/data/words.h"

namespace lmrt {

/* What a span's length counts (the plan's "unit": its index). */
enum class SpanUnit { Word = 0, Token = 1 };

struct SpanMlmOptions {
  double maskProb = 0.15;
  double geometricP = 0.2;
  int64_t maxSpan = 10;        // in units
  SpanUnit unit = SpanUnit::Word;
  int64_t maxSpanTokens = 15;  // tokens of a span, the position table's rows
};

/* One batch, row-major [rows, seq]. */
struct SpanMlmBatch {
  std::vector<int32_t> ids, labels, left, right, pos;
  std::vector<uint8_t> attention;  // all 1: rows are never padded
};

/* A span of text positions [start, start + length) (tokens); `drawn` is the
   length drawn (in units) before it was shortened to fit or cut to the budget. */
struct Span {
  int64_t start, length, drawn;
};

/* The length the truncated geometric distribution gives the uniform word h
   (inverse CDF): P(L = l) = p (1 - p)^(l - 1) / (1 - (1 - p)^maxSpan). */
int64_t spanLength(uint64_t h, double p, int64_t maxSpan);

/* The masking budget of n text tokens: ceil(maskProb x n). */
int64_t spanBudget(double maskProb, int64_t n);

/* The token spans of one row of n text tokens, in the order drawn; draw k is
   counterRandom(seed, stream, sample, k). */
std::vector<Span> sampleSpans(uint64_t seed, RngStream stream, uint64_t sample, int64_t n,
                              const SpanMlmOptions &o);

/* The whole-word spans of one row of n text tokens whose complete words are
   `words` (findWords), in the order drawn; draws as sampleSpans'. */
std::vector<Span> sampleWordSpans(uint64_t seed, RngStream stream, uint64_t sample, int64_t n,
                                  const std::vector<Word> &words, const SpanMlmOptions &o);

class SpanMlmBatcher {
public:
  /* Opens the train and val files of DIR (findSplitFiles), checks that every
     token is a byte (checkByteData) and that the train split holds one row of
     text. */
  SpanMlmBatcher(const std::string &dir, int64_t rows, int64_t seq, const SpanMlmOptions &options,
                 uint64_t seed);

  int64_t rows() const { return rows_; }
  int64_t seq() const { return seq_; }
  /* Rows firstRow .. firstRow + rows - 1 of training step `step` (0-based). */
  void trainBatch(uint64_t step, SpanMlmBatch &out, uint64_t firstRow = 0) const {
    fill(*train_, false, step, out, firstRow);
  }
  /* Throws unless the validation shard holds one row of text. */
  void checkValidation() const;
  void valBatch(uint64_t index, SpanMlmBatch &out) const;

  /* Row `row` of `out` (sized by a fill) for the sample of key `sample`. */
  void fillRow(const TokenSource &shard, bool validation, uint64_t sample, int64_t row,
               SpanMlmBatch &out) const;
  uint64_t sampleKey(bool validation, uint64_t index, uint64_t row) const;
  const TokenSource &train() const { return *train_; }
  const TokenSource &val() const { return *val_; }

private:
  void fill(const TokenSource &shard, bool validation, uint64_t index, SpanMlmBatch &out,
            uint64_t firstRow) const;
  std::unique_ptr<TokenSource> train_, val_;
  int64_t rows_, seq_, content_;  // content_: text tokens of a row, seq - 2
  SpanMlmOptions options_;
  uint64_t seed_;
  std::vector<TokenClass> classes_;  // of the byte vocabulary (unit word)
};

}  // namespace lmrt
