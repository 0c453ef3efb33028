/* Implements: the "span_mlm" batch transform (see span_mlm.h). */
#include "runtime/data/span_mlm.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "runtime/data/batches.h"
#include "runtime/data/tokenizer.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

using namespace data;

/* The counter of the row offset's draw: the spans' draws count up from 0. */
constexpr uint64_t kOffset = ~0ull;
/* Random draws of a start before a length falls back to a scan. */
constexpr int kStartTries = 64;

}  // namespace

int64_t spanLength(uint64_t h, double p, int64_t maxSpan) {
  const double q = 1.0 - p, z = 1.0 - std::pow(q, (double)maxSpan);
  const double u = uniform01(h) * z;  // the CDF scaled by z: F(l) z = 1 - q^l
  double qPow = 1.0;
  for (int64_t l = 1; l < maxSpan; ++l) {
    qPow *= q;
    if (u < 1.0 - qPow) return l;
  }
  return maxSpan;
}

int64_t spanBudget(double maskProb, int64_t n) {
  // The epsilon keeps 0.15 x 20 = 3.0000000000000004 from becoming 4.
  return std::min<int64_t>(n, (int64_t)std::ceil(maskProb * (double)n - 1e-9));
}

std::vector<Span> sampleSpans(uint64_t seed, RngStream stream, uint64_t sample, int64_t n,
                              const SpanMlmOptions &o) {
  std::vector<Span> spans;
  // taken[t + 1] for text position t; taken[0] and taken[n + 1] are [CLS] and
  // [SEP], never masked.
  std::vector<char> taken(n + 2, 0);
  uint64_t k = 0;
  auto draw = [&] { return counterRandom(seed, stream, sample, k++); };
  // [s - 1, s + len] free: the span and both its boundary tokens unmasked.
  auto fits = [&](int64_t s, int64_t len) {
    for (int64_t t = s; t <= s + len + 1; ++t)
      if (taken[t]) return false;
    return true;
  };
  for (int64_t left = spanBudget(o.maskProb, n); left > 0;) {
    const int64_t drawn = spanLength(draw(), o.geometricP, o.maxSpan);
    int64_t len = std::min({drawn, left, n}), start = -1;
    for (int a = 0; a < kStartTries && start < 0; ++a) {
      int64_t s = (int64_t)uniformBelow(draw(), (uint64_t)(n - len + 1));
      if (fits(s, len)) start = s;
    }
    while (start < 0 && len > 0) {  // crowded: the first free start, else shorter
      for (int64_t s = 0; s + len <= n && start < 0; ++s)
        if (fits(s, len)) start = s;
      if (start < 0) --len;
    }
    if (start < 0) break;  // no token has two free neighbours left
    std::fill(taken.begin() + start + 1, taken.begin() + start + 1 + len, 1);
    spans.push_back({start, len, drawn});
    left -= len;
  }
  return spans;
}

std::vector<Span> sampleWordSpans(uint64_t seed, RngStream stream, uint64_t sample, int64_t n,
                                  const std::vector<Word> &words, const SpanMlmOptions &o) {
  std::vector<Span> spans;
  const int64_t m = (int64_t)words.size();
  if (m == 0) return spans;
  std::vector<char> taken(n + 2, 0);  // as sampleSpans'
  uint64_t k = 0;
  auto draw = [&] { return counterRandom(seed, stream, sample, k++); };
  auto fits = [&](int64_t s, int64_t len) {
    for (int64_t t = s; t <= s + len + 1; ++t)
      if (taken[t]) return false;
    return true;
  };
  int64_t left = spanBudget(o.maskProb, n);
  // Sets start and len to the span of up to `want` words from word j: as many
  // of them as the row has and the position table holds, cut to the budget;
  // leaves them if word j alone exceeds the table or the span would touch
  // another.
  int64_t start = -1, len = 0;
  auto tryAt = [&](int64_t j, int64_t want) {
    int64_t c = std::min(want, m - j);
    while (c > 0 && words[j + c - 1].end - words[j].start > o.maxSpanTokens) --c;
    if (c == 0) return;
    int64_t l = std::min(words[j + c - 1].end - words[j].start, left);
    if (fits(words[j].start, l)) start = words[j].start, len = l;
  };
  while (left > 0) {
    const int64_t drawn = spanLength(draw(), o.geometricP, o.maxSpan);
    start = -1;
    for (int a = 0; a < kStartTries && start < 0; ++a) tryAt((int64_t)uniformBelow(draw(), (uint64_t)m), drawn);
    for (int64_t want = drawn; start < 0 && want > 0; --want)  // crowded: the first free word, else fewer
      for (int64_t j = 0; j < m && start < 0; ++j) tryAt(j, want);
    if (start < 0) break;  // no word has two free neighbours left
    std::fill(taken.begin() + start + 1, taken.begin() + start + 1 + len, 1);
    spans.push_back({start, len, drawn});
    left -= len;
  }
  return spans;
}

SpanMlmBatcher::SpanMlmBatcher(const std::string &dir, int64_t rows, int64_t seq,
                               const SpanMlmOptions &options, uint64_t seed)
    : rows_(rows), seq_(seq), content_(seq - 2), options_(options), seed_(seed) {
  if (rows <= 0 || content_ < 1)
    fail("span_mlm batches need rows >= 1 and seq >= 3 (got %lld x %lld)", (long long)rows,
         (long long)seq);
  if (rows * seq > INT32_MAX)
    fail("span_mlm batches of %lld x %lld tokens are too large for i32 row indices", (long long)rows,
         (long long)seq);
  if (!(options.geometricP > 0 && options.geometricP <= 1) || options.maxSpan < 1)
    fail("span_mlm needs 0 < geometric_p <= 1 and max_span >= 1 (got %g, %lld)", options.geometricP,
         (long long)options.maxSpan);
  if (options.maxSpanTokens < 1 || (options.unit == SpanUnit::Token && options.maxSpan > options.maxSpanTokens))
    fail("span_mlm needs max_span_tokens >= 1, and max_span <= max_span_tokens with unit \"token\" (got "
         "%lld, %lld)", (long long)options.maxSpanTokens, (long long)options.maxSpan);
  checkDataDir(dir);
  train_ = TokenSource::open(findSplitFiles(dir, "train"));
  val_ = TokenSource::open(findSplitFiles(dir, "val"));
  if ((int64_t)train_->size() < content_)
    fail("data '%s' has %llu tokens, fewer than the %lld text tokens of one span_mlm row",
         train_->path().c_str(), (unsigned long long)train_->size(), (long long)content_);
  checkByteData(dir, *train_, *val_, "span_mlm");
  if (options.unit == SpanUnit::Word) classes_ = tokenClasses(*byteTokenizer());
}

void SpanMlmBatcher::checkValidation() const {
  if ((int64_t)val_->size() < content_)
    fail("data '%s' has %llu tokens, fewer than the %lld text tokens of one span_mlm row; rebuild "
         "with a larger --val-fraction or run with --eval-batches 0",
         val_->path().c_str(), (unsigned long long)val_->size(), (long long)content_);
}

void SpanMlmBatcher::valBatch(uint64_t index, SpanMlmBatch &out) const {
  checkValidation();
  fill(*val_, true, index, out, 0);
}

uint64_t SpanMlmBatcher::sampleKey(bool validation, uint64_t index, uint64_t row) const {
  return counterRandom(seed_, validation ? RngStream::ValSpans : RngStream::TrainSpans, index, row);
}

void SpanMlmBatcher::fill(const TokenSource &shard, bool validation, uint64_t index, SpanMlmBatch &out,
                          uint64_t firstRow) const {
  const size_t n = (size_t)(rows_ * seq_);
  out.ids.assign(n, kPad);
  out.labels.assign(n, (int32_t)kIgnoreIndex);
  out.attention.assign(n, 1);
  out.left.assign(n, 0);
  out.right.assign(n, 0);
  out.pos.assign(n, 0);
  for (int64_t r = 0; r < rows_; ++r)
    fillRow(shard, validation, sampleKey(validation, index, firstRow + r), r, out);
}

void SpanMlmBatcher::fillRow(const TokenSource &shard, bool validation, uint64_t sample, int64_t row,
                             SpanMlmBatch &out) const {
  const RngStream layout = validation ? RngStream::ValSpans : RngStream::TrainSpans;
  const RngStream masking = validation ? RngStream::ValSpanMask : RngStream::TrainSpanMask;
  const int64_t base = row * seq_;
  int32_t *ids = out.ids.data() + base, *labels = out.labels.data() + base;
  int32_t *left = out.left.data() + base, *right = out.right.data() + base, *pos = out.pos.data() + base;

  uint64_t start = uniformBelow(counterRandom(seed_, layout, sample, kOffset), shard.size() - content_ + 1);
  ids[0] = kCls;
  shard.copyTokens(start, (uint64_t)content_, ids + 1);
  ids[seq_ - 1] = kSep;
  for (int64_t i = 0; i < seq_; ++i) {
    labels[i] = (int32_t)kIgnoreIndex;
    left[i] = right[i] = (int32_t)(base + i);
    pos[i] = 0;
  }

  std::vector<Span> spans;
  if (options_.unit == SpanUnit::Word) {
    // The ids just outside the row tell whether its first and last words are whole.
    const int64_t before = start > 0 ? shard.token(start - 1) : -1;
    const int64_t after = start + (uint64_t)content_ < shard.size() ? shard.token(start + content_) : -1;
    spans = sampleWordSpans(seed_, layout, sample, content_,
                            findWords(ids + 1, content_, before, after, classes_), options_);
  } else {
    spans = sampleSpans(seed_, layout, sample, content_, options_);
  }
  for (size_t j = 0; j < spans.size(); ++j) {
    // Row positions [s, e] of the span (text position t is row position t + 1).
    const int64_t s = spans[j].start + 1, e = s + spans[j].length - 1;
    const double u = uniform01(counterRandom(seed_, masking, sample, j));  // one choice per span
    for (int64_t i = s; i <= e; ++i) {
      labels[i] = ids[i];
      if (u < 0.8)
        ids[i] = kMask;
      else if (u < 0.9)
        ids[i] = (int32_t)uniformBelow(counterRandom(seed_, masking, sample, (uint64_t)(seq_ + i)),
                                       kFirstSpecial);
      left[i] = (int32_t)(base + s - 1);
      right[i] = (int32_t)(base + e + 1);
      pos[i] = (int32_t)(i - s);
    }
  }
}

}  // namespace lmrt
