/* Implements: the "span_corruption" batch transform (see span_corruption.h). */
#include "runtime/data/span_corruption.h"

#include <algorithm>
#include <numeric>

#include "runtime/data/batches.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

using namespace data;

/* The counter of the row offset's draw: the segmentations' draws count up from 0. */
constexpr uint64_t kOffset = ~0ull;

/* HF's _random_segmentation: `items` cut into `segments` non-empty runs, the
   segments - 1 cut points a uniformly random subset of the items - 1 gaps (a
   partial Fisher-Yates shuffle, where NumPy shuffles a boolean mask: the same
   distribution); the run lengths in order. */
std::vector<int64_t> randomSegmentation(int64_t items, int64_t segments, uint64_t seed, RngStream stream,
                                        uint64_t sample, uint64_t &k) {
  std::vector<int64_t> gaps(items - 1);
  std::iota(gaps.begin(), gaps.end(), 1);  // a cut at gap g starts a run at item g
  for (int64_t i = 0; i < segments - 1; ++i) {
    int64_t j = i + (int64_t)uniformBelow(counterRandom(seed, stream, sample, k++), (uint64_t)(items - 1 - i));
    std::swap(gaps[i], gaps[j]);
  }
  std::vector<int64_t> cuts(gaps.begin(), gaps.begin() + (segments - 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(items);
  std::vector<int64_t> lengths;
  int64_t at = 0;
  for (int64_t c : cuts) {
    lengths.push_back(c - at);
    at = c;
  }
  return lengths;
}

}  // namespace

std::vector<uint8_t> spanNoiseMask(uint64_t seed, RngStream stream, uint64_t sample, int64_t length,
                                   const SpanCorruptionOptions &o) {
  const SpanNoise n = spanNoise(length, o.noiseDensity, o.meanSpanLength);
  uint64_t k = 0;
  const std::vector<int64_t> noise = randomSegmentation(n.noise, n.spans, seed, stream, sample, k);
  const std::vector<int64_t> kept = randomSegmentation(length - n.noise, n.spans, seed, stream, sample, k);
  std::vector<uint8_t> mask;
  mask.reserve(length);
  for (int64_t s = 0; s < n.spans; ++s) {  // interleaved: a kept run, then a noise span
    mask.insert(mask.end(), kept[s], 0);
    mask.insert(mask.end(), noise[s], 1);
  }
  return mask;
}

SpanCorruptionBatcher::SpanCorruptionBatcher(const std::string &dir, int64_t rows, int64_t seq, int64_t vocab,
                                             const SpanCorruptionOptions &options, uint64_t seed)
    : rows_(rows), seq_(seq), vocab_(vocab), options_(options), seed_(seed) {
  const SpanCorruptionLengths l = spanCorruptionLengths(seq, options.noiseDensity, options.meanSpanLength);
  if (l.raw < 0)
    fail("span_corruption: seq %lld has no raw length whose corrupted inputs are exactly that long",
         (long long)seq);
  raw_ = l.raw;
  targets_ = l.targets;
  const int64_t spans = spanNoise(raw_, options.noiseDensity, options.meanSpanLength).spans;
  if (vocab - spans < kFirstSpecial)
    fail("span_corruption: vocab %lld leaves no room above the 256 bytes for the %lld sentinels of a row",
         (long long)vocab, (long long)spans);
  checkDataDir(dir);
  train_ = TokenSource::open(findSplitFiles(dir, "train"));
  val_ = TokenSource::open(findSplitFiles(dir, "val"));
  if ((int64_t)train_->size() < raw_)
    fail("data '%s' has %llu tokens, fewer than the %lld raw tokens of one span_corruption row",
         train_->path().c_str(), (unsigned long long)train_->size(), (long long)raw_);
  checkByteData(dir, *train_, *val_, "span_corruption");
}

void SpanCorruptionBatcher::checkValidation() const {
  if ((int64_t)val_->size() < raw_)
    fail("data '%s' has %llu tokens, fewer than the %lld raw tokens of one span_corruption row; rebuild "
         "with a larger --val-fraction or run with --eval-batches 0",
         val_->path().c_str(), (unsigned long long)val_->size(), (long long)raw_);
}

void SpanCorruptionBatcher::valBatch(uint64_t index, SpanCorruptionBatch &out) const {
  checkValidation();
  fill(*val_, true, index, out, 0);
}

void SpanCorruptionBatcher::fill(const TokenSource &shard, bool validation, uint64_t index,
                                 SpanCorruptionBatch &out, uint64_t firstRow) const {
  const RngStream stream = validation ? RngStream::ValCorrupt : RngStream::TrainCorrupt;
  out.ids.assign((size_t)(rows_ * seq_), kT5Pad);
  out.attention.assign((size_t)(rows_ * seq_), 1);
  out.labels.assign((size_t)(rows_ * targets_), (int32_t)kIgnoreIndex);
  out.decoder.assign((size_t)(rows_ * targets_), kT5Pad);
  std::vector<int32_t> raw((size_t)raw_);
  for (int64_t r = 0; r < rows_; ++r) {
    const uint64_t sample = counterRandom(seed_, stream, index, firstRow + (uint64_t)r);
    const uint64_t start = uniformBelow(counterRandom(seed_, stream, sample, kOffset), shard.size() - raw_ + 1);
    shard.copyTokens(start, (uint64_t)raw_, raw.data());
    const std::vector<uint8_t> noise = spanNoiseMask(seed_, stream, sample, raw_, options_);
    // filter_input_ids: a sentinel where a span of the other kind starts, its
    // other tokens dropped, then EOS. The inputs' sentinels number the noise
    // spans, the targets' the kept runs (the first run, at 0, gets s_0).
    int32_t *ids = out.ids.data() + r * seq_, *labels = out.labels.data() + r * targets_;
    int64_t ni = 0, nl = 0, inputSpans = 0, targetSpans = 0;
    for (int64_t i = 0; i < raw_; ++i) {
      const bool starts = i == 0 || noise[i] != noise[i - 1];
      if (noise[i]) {
        if (starts) ids[ni++] = (int32_t)(vocab_ - 1 - inputSpans++);
        labels[nl++] = raw[i];
      } else {
        if (starts) labels[nl++] = (int32_t)(vocab_ - 1 - targetSpans++);
        ids[ni++] = raw[i];
      }
    }
    ids[ni++] = kT5Eos;
    labels[nl++] = kT5Eos;
    if (ni != seq_ || nl != targets_)
      fail("span_corruption: a row of %lld raw tokens gave %lld inputs and %lld targets, not %lld and %lld",
           (long long)raw_, (long long)ni, (long long)nl, (long long)seq_, (long long)targets_);
    // shift_tokens_right: the start id, then the targets but the last; -100 as pad.
    int32_t *decoder = out.decoder.data() + r * targets_;
    decoder[0] = kT5Pad;
    for (int64_t t = 1; t < targets_; ++t) decoder[t] = labels[t - 1] == kIgnoreIndex ? kT5Pad : labels[t - 1];
  }
}

}  // namespace lmrt
