/* Implements: causal batches from shards and the vocabulary check (see batches.h). */
#include "runtime/data/batches.h"

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <dirent.h>
#include <sys/stat.h>
#include <vector>

#include "runtime/data/counter_rng.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

/* Whether `name` has `word` as a whole word between '_', '-' and '.'. */
bool hasWord(const std::string &name, const std::string &word) {
  size_t at = 0;
  while ((at = name.find(word, at)) != std::string::npos) {
    auto sep = [](char c) { return c == '_' || c == '-' || c == '.'; };
    bool left = at == 0 || sep(name[at - 1]);
    size_t end = at + word.size();
    bool right = end == name.size() || sep(name[end]);
    if (left && right) return true;
    at = end;
  }
  return false;
}

/* Every token a byte; pages are released as the scan goes (a split may be
   larger than memory). */
void checkBytes(const TokenSource &shard, const char *transform) {
  uint64_t n = shard.size();
  for (uint64_t i = 0; i < n; ++i) {
    int64_t t = shard.token(i);
    if (t < 0 || t >= data::kFirstSpecial)
      fail("data '%s': token %lld at offset %llu is not a byte; the %s transform reads byte data "
           "(ids >= %d are its special tokens)", shard.path().c_str(), (long long)t,
           (unsigned long long)i, transform, data::kFirstSpecial);
    if ((i & ((1u << 21) - 1)) == (1u << 21) - 1) shard.releasePages();
  }
  shard.releasePages();
}

}  // namespace

void checkByteData(const std::string &dir, const TokenSource &train, const TokenSource &val,
                   const char *transform) {
  // Named by the tokenizer first: a SentencePiece shard's first large id would
  // otherwise be reported as "not a byte".
  if (std::optional<DatasetMeta> meta = readDatasetMeta(dir); meta && meta->tokenizer != "bytes")
    fail("data '%s' was tokenized with %s (%s); the %s transform reads byte data (its special "
         "tokens are ids %d.. after the 256 bytes): build the directory without --tokenizer",
         meta->path.c_str(), meta->tokenizer.c_str(), meta->tokenizerModel.c_str(), transform,
         data::kFirstSpecial);
  checkBytes(train, transform);
  checkBytes(val, transform);
}

std::vector<std::string> findSplitFiles(const std::string &dirIn, const std::string &split) {
  std::string dir = dirIn.empty() || dirIn.back() == '/' ? dirIn : dirIn + "/";
  std::vector<std::string> found;
  if (DIR *d = ::opendir(dirIn.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0 &&
          hasWord(name.substr(0, name.size() - 4), split))
        found.push_back(name);
    }
    ::closedir(d);
  }
  struct stat examples;
  if (found.empty() && ::stat((dir + split + ".examples").c_str(), &examples) == 0)
    fail("data directory '%s' holds example shards (%s.examples, from `lmrt data build --format jsonl`): they "
         "feed the classify and regression transforms, and this plan's transform reads token shards (%s.bin)",
         dirIn.c_str(), split.c_str(), split.c_str());
  if (found.empty())
    fail("data directory '%s' has no %s.bin (nor any *.bin named for '%s'); build it with `lmrt "
         "data build --input ... --out %s`, or put llm.c or Megatron files there",
         dirIn.c_str(), split.c_str(), split.c_str(), dirIn.c_str());
  std::sort(found.begin(), found.end());
  for (std::string &f : found) f = dir + f;
  return found;
}

void checkDataDir(const std::string &dirIn) {
  struct stat st;
  if (::stat(dirIn.c_str(), &st) != 0)
    fail("data directory '%s' does not exist; build one with `lmrt data build --input ... --out %s`",
         dirIn.c_str(), dirIn.c_str());
  if (!S_ISDIR(st.st_mode)) fail("data '%s' is not a directory (expected train.bin and val.bin in it)", dirIn.c_str());
}

CausalBatcher::CausalBatcher(const std::string &dirIn, int64_t rows, int64_t window, uint64_t seed)
    : rows_(rows), window_(window), seed_(seed) {
  if (rows <= 0 || window <= 1)
    fail("causal batches need rows >= 1 and a window of at least 2 tokens (got %lld x %lld)",
         (long long)rows, (long long)window);
  checkDataDir(dirIn);
  train_ = TokenSource::open(findSplitFiles(dirIn, "train"));
  val_ = TokenSource::open(findSplitFiles(dirIn, "val"));
  meta_ = readDatasetMeta(dirIn);
  if (meta_)
    for (const auto &[src, split] : {std::pair{train_.get(), &meta_->train}, {val_.get(), &meta_->val}})
      if (src->size() != split->tokens)
        fail("%s says %s holds %llu tokens, but %s has %llu (rebuild the directory with lmrt data "
             "build)", meta_->path.c_str(), split->file.c_str(), (unsigned long long)split->tokens,
             src->path().c_str(), (unsigned long long)src->size());
  // Document counts and token width are recorded for LMC's own shards; llm.c and
  // Megatron files in a directory with a meta.json are not compared with it.
  if (meta_)
    for (const auto &[src, split] : {std::pair{train_.get(), &meta_->train}, {val_.get(), &meta_->val}}) {
      if (src->files().size() != 1 || src->files()[0].format != "LMC shard") continue;
      const TokenFile &f = src->files()[0];
      if (f.documents >= 0 && (uint64_t)f.documents != split->documents)
        fail("%s says %s holds %llu documents, but %s has %lld (rebuild the directory with lmrt data "
             "build)", meta_->path.c_str(), split->file.c_str(), (unsigned long long)split->documents,
             f.path.c_str(), (long long)f.documents);
      if (meta_->tokenBytes && (size_t)meta_->tokenBytes != tokenDTypeBytes(f.dtype))
        fail("%s says token_bytes %lld, but %s has %zu-byte tokens (rebuild the directory with lmrt data "
             "build)", meta_->path.c_str(), (long long)meta_->tokenBytes, f.path.c_str(),
             tokenDTypeBytes(f.dtype));
    }
  if ((int64_t)train_->size() < window)
    fail("data '%s' has %llu tokens, fewer than one window of seq + 1 = %lld", train_->path().c_str(),
         (unsigned long long)train_->size(), (long long)window);
}

void CausalBatcher::checkVocab(int64_t vocab) const {
  // Named by the tokenizer rather than by the first token out of range (byte
  // data keeps the token error, which says which byte).
  if (meta_ && meta_->tokenizer != "bytes" && meta_->vocab > vocab)
    fail("data '%s' was tokenized with a vocabulary of %lld (%s), larger than the plan's %lld; "
         "compile the plan with -D vocab=%lld", meta_->path.c_str(), (long long)meta_->vocab,
         meta_->tokenizerModel.c_str(), (long long)vocab,
         (long long)meta_->vocab);
  checkTokenRange(*train_, vocab);
  checkTokenRange(*val_, vocab);
  // Byte data within range whose meta.json still records a larger vocabulary:
  // meta.json does not belong to these shards or the plan is too small.
  if (meta_ && meta_->vocab > vocab)
    fail("data '%s' was tokenized with a vocabulary of %lld (%s), larger than the plan's %lld; "
         "compile the plan with -D vocab=%lld", meta_->path.c_str(), (long long)meta_->vocab,
         meta_->tokenizer == "bytes" ? "bytes" : meta_->tokenizerModel.c_str(), (long long)vocab,
         (long long)meta_->vocab);
}

std::string CausalBatcher::describe() const {
  auto one = [](const char *name, const TokenSource &s) {
    return std::string(name) + " " + s.path() + " (" + s.format() + "), " +
           std::to_string(s.size()) + " tokens";
  };
  return "data: " + one("train", *train_) + "; " + one("val", *val_);
}

uint64_t CausalBatcher::windowStart(uint64_t seed, bool validation, uint64_t index, uint64_t row,
                                    uint64_t tokens, uint64_t window) {
  uint64_t h = counterRandom(seed, validation ? RngStream::Val : RngStream::Train, index, row);
  return uniformBelow(h, tokens - window + 1);
}

void CausalBatcher::fill(const TokenSource &shard, bool validation, uint64_t index, int32_t *out,
                         uint64_t firstRow) const {
  for (int64_t r = 0; r < rows_; ++r) {
    uint64_t start = windowStart(seed_, validation, index, firstRow + r, shard.size(), window_);
    shard.copyTokens(start, window_, out + r * window_);
  }
}

void CausalBatcher::trainBatch(uint64_t step, int32_t *out, uint64_t firstRow) const {
  fill(*train_, false, step, out, firstRow);
}

void CausalBatcher::checkValidationWindow() const {
  if ((int64_t)val_->size() < window_)
    fail("data '%s' has %llu tokens, fewer than one window of seq + 1 = %lld; rebuild with a larger "
         "--val-fraction or run with --eval-batches 0", val_->path().c_str(),
         (unsigned long long)val_->size(), (long long)window_);
}

void CausalBatcher::valBatch(uint64_t index, int32_t *out) const {
  checkValidationWindow();
  fill(*val_, true, index, out, 0);
}

}  // namespace lmrt
