/* Implements: the "mlm" batch transform (see mlm.h). */
#include "runtime/data/mlm.h"

#include <algorithm>
#include <utility>

#include "runtime/data/batches.h"
#include "runtime/data/counter_rng.h"
#include "runtime/data/shard.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

using namespace data;

/* The counters of one row's decisions: positions use 0..seq-1 (selection) and
   seq..2 seq-1 (replacement), so these sit above any position. */
enum : uint64_t { kLength = ~0ull, kSplit = ~0ull - 1, kStartA = ~0ull - 2, kIsRandom = ~0ull - 3, kStartB = ~0ull - 4 };

/* The LMC shard behind an "LMC shard" file (its owner; see openLmcShard). */
const Shard &lmcShard(const TokenFile &f) { return *static_cast<const Shard *>(f.owner.get()); }

/* Documents are known only where every file is an LMC shard (the other formats'
   readers keep no document starts); nsp needs them. */
void checkDocuments(const TokenSource &source) {
  for (const TokenFile &f : source.files())
    if (f.format != "LMC shard")
      fail("data '%s' is a %s; the mlm transform with nsp or sop needs the document boundaries of LMC "
           "shards (build the directory with lmrt data build, or compile without sentence pairs)",
           f.path.c_str(), source.format().c_str());
}

/* The document holding stream position `pos`: [start, end) of it, within its file. */
std::pair<uint64_t, uint64_t> documentOf(const TokenSource &source, uint64_t pos) {
  const std::vector<TokenFile> &files = source.files();
  size_t fi = std::upper_bound(files.begin(), files.end(), pos,
                               [](uint64_t p, const TokenFile &f) { return p < f.start; }) -
              files.begin() - 1;
  const TokenFile &file = files[fi];
  const Shard &shard = lmcShard(file);
  uint64_t local = pos - file.start;
  uint64_t count = shard.documentCount();
  if (count == 0) return {file.start, file.start + file.count};
  uint64_t lo = 0, hi = count;  // the last d with start(d) <= local
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    (shard.documentStart(mid) <= local ? lo : hi) = mid;
  }
  uint64_t end = lo + 1 < count ? shard.documentStart(lo + 1) : file.count;
  return {file.start + shard.documentStart(lo), file.start + end};
}

/* Documents in the stream (files' documents summed). */
uint64_t documentCount(const TokenSource &source) {
  uint64_t n = 0;
  for (const TokenFile &f : source.files()) n += f.documents > 0 ? (uint64_t)f.documents : 1;
  return n;
}

}  // namespace

MlmBatcher::MlmBatcher(const std::string &dirIn, int64_t rows, int64_t seq, const MlmOptions &options,
                       uint64_t seed)
    : rows_(rows), seq_(seq), content_(seq - (options.pairs() ? 3 : 2)), options_(options), seed_(seed) {
  if (options.nsp && options.sop) fail("the mlm transform takes nsp or sop, not both");
  if (rows <= 0 || content_ < (options.pairs() ? 2 : 1))
    fail("mlm batches need rows >= 1 and seq >= %d (got %lld x %lld)", options.pairs() ? 5 : 3,
         (long long)rows, (long long)seq);
  checkDataDir(dirIn);
  train_ = TokenSource::open(findSplitFiles(dirIn, "train"));
  val_ = TokenSource::open(findSplitFiles(dirIn, "val"));
  if (options.pairs()) {
    checkDocuments(*train_);
    checkDocuments(*val_);
  }
  if ((int64_t)train_->size() < content_)
    fail("data '%s' has %llu tokens, fewer than the %lld text tokens of one mlm row",
         train_->path().c_str(), (unsigned long long)train_->size(), (long long)content_);
  checkByteData(dirIn, *train_, *val_, "mlm");
}

void MlmBatcher::checkValidation() const {
  if ((int64_t)val_->size() < content_)
    fail("data '%s' has %llu tokens, fewer than the %lld text tokens of one mlm row; rebuild with a "
         "larger --val-fraction or run with --eval-batches 0",
         val_->path().c_str(), (unsigned long long)val_->size(), (long long)content_);
}

void MlmBatcher::valBatch(uint64_t index, MlmBatch &out) const {
  checkValidation();
  fill(*val_, true, index, out, 0);
}

uint64_t MlmBatcher::sampleKey(bool validation, uint64_t index, uint64_t row) const {
  return counterRandom(seed_, validation ? RngStream::ValPairs : RngStream::TrainPairs, index, row);
}

void MlmBatcher::fill(const TokenSource &shard, bool validation, uint64_t index, MlmBatch &out,
                      uint64_t firstRow) const {
  out.ids.assign(rows_ * seq_, kPad);
  out.labels.assign(rows_ * seq_, (int32_t)kIgnoreIndex);
  out.segments.assign(rows_ * seq_, 0);
  out.attention.assign(rows_ * seq_, 0);
  out.nsp.assign(rows_, 0);
  out.bits.assign(rows_ * seq_, 0);
  out.sop.assign(rows_, 0);
  for (int64_t r = 0; r < rows_; ++r) fillRow(shard, validation, sampleKey(validation, index, firstRow + r), r, out);
}

void MlmBatcher::fillRow(const TokenSource &shard, bool validation, uint64_t sample, int64_t row,
                         MlmBatch &out) const {
  const RngStream layout = validation ? RngStream::ValPairs : RngStream::TrainPairs;
  const RngStream masking = validation ? RngStream::ValMask : RngStream::TrainMask;
  auto rnd = [&](RngStream s, uint64_t k) { return counterRandom(seed_, s, sample, k); };
  const uint64_t n = shard.size();

  // Text length: full, or (short_seq_prob) uniform in [min(2, full), full].
  int64_t len = content_;
  int64_t minLen = std::min<int64_t>(2, content_);
  if (options_.shortSeqProb > 0 && uniform01(rnd(layout, kLength)) < options_.shortSeqProb)
    len = minLen + (int64_t)uniformBelow(rnd(layout, kLength - 16), content_ - minLen + 1);
  len = std::min<int64_t>(len, (int64_t)n);

  int32_t *ids = out.ids.data() + row * seq_;
  int32_t *seg = out.segments.data() + row * seq_;
  int64_t la = len, lb = 0;
  uint64_t startA = uniformBelow(rnd(layout, kStartA), n - len + 1);
  if (options_.pairs() && documentCount(shard) > 1) {
    // Sentence pairs stay inside A's document, so "B follows A" is the actual
    // next text of one document: a row crossing the document's end moves back
    // to end there, and a document shorter than the row is the whole row
    // (padded). Documents of one token are too short to split and are crossed.
    auto [docStart, docEnd] = documentOf(shard, startA);
    if (docEnd - docStart >= 2 && startA + len > docEnd) {
      if ((int64_t)(docEnd - docStart) >= len) {
        startA = docEnd - len;
      } else {
        startA = docStart;
        len = (int64_t)(docEnd - docStart);
      }
    }
  }
  if (options_.pairs()) {
    la = 1 + (int64_t)uniformBelow(rnd(layout, kSplit), len - 1);
    lb = len - la;
  } else {
    la = len;
  }
  // The row's two pieces of text: A alone; with nsp A and B, B the text after
  // A or (label 1) from a random offset; with sop A and the text after it, in
  // document order or (label 1) swapped.
  struct Piece {
    uint64_t start;
    int64_t len;
  };
  Piece first{startA, la}, second{startA + la, lb};
  if (options_.nsp) {
    bool random = (rnd(layout, kIsRandom) >> 63) != 0;
    if (random) second.start = uniformBelow(rnd(layout, kStartB), n - lb + 1);
    out.nsp[row] = random ? 1 : 0;
  }
  if (options_.sop) {
    bool swapped = (rnd(layout, kIsRandom) >> 63) != 0;
    if (swapped) std::swap(first, second);
    out.sop[row] = swapped ? 1 : 0;
  }
  int64_t p = 0;
  ids[p++] = kCls;
  shard.copyTokens(first.start, first.len, ids + p);
  p += first.len;
  ids[p++] = kSep;
  if (options_.pairs()) {
    shard.copyTokens(second.start, second.len, ids + p);
    for (int64_t i = p; i < p + second.len + 1; ++i) seg[i] = 1;
    p += second.len;
    ids[p++] = kSep;
  }
  std::fill(out.attention.begin() + row * seq_, out.attention.begin() + row * seq_ + p, 1);

  // Masking: every text position independently; specials are never selected.
  int32_t *labels = out.labels.data() + row * seq_;
  for (int64_t i = 0; i < p; ++i) {
    if (ids[i] >= kFirstSpecial) continue;
    if (uniform01(rnd(masking, (uint64_t)i)) >= options_.maskProb) continue;
    labels[i] = ids[i];
    double u = uniform01(rnd(masking, (uint64_t)(seq_ + i)));
    if (u < 0.8)
      ids[i] = kMask;
    else if (u < 0.9)
      ids[i] = (int32_t)uniformBelow(rnd(masking, (uint64_t)(2 * seq_ + i)), kFirstSpecial);
  }

  // Random bits for the model's own draws (lm.sample: ELECTRA's generator
  // samples), a stream of their own keyed by (sample, position).
  const RngStream draws = validation ? RngStream::ValDraws : RngStream::TrainDraws;
  int32_t *bits = out.bits.data() + row * seq_;
  for (int64_t i = 0; i < seq_; ++i) bits[i] = (int32_t)(uint32_t)(rnd(draws, (uint64_t)i) >> 32);
}

}  // namespace lmrt
