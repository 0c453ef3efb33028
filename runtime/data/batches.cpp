/* Implements: causal batches from shards and the vocabulary check (see batches.h). */
#include "runtime/data/batches.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "runtime/data/counter_rng.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt {

void checkShardVocab(const Shard &shard, int64_t vocab) {
  uint64_t n = shard.size();
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t t = shard.token(i);
    if ((int64_t)t >= vocab)
      fail("data '%s': token %u at offset %llu is outside the plan's vocabulary (%lld)",
           shard.path().c_str(), t, (unsigned long long)i, (long long)vocab);
    if ((i & ((1u << 21) - 1)) == (1u << 21) - 1) shard.releasePages();  // keep the peak low
  }
  shard.releasePages();
}

std::unique_ptr<Shard> openShard(const std::string &dir, const char *name) {
  std::string path = dir + name;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    fail("data directory '%s' has no %s (%s); build it with `lmrt data build --input ... --out %s`",
         dir.c_str(), name, std::strerror(errno), dir.c_str());
  return std::make_unique<Shard>(path);
}

std::string checkDataDir(const std::string &dirIn) {
  struct stat st;
  if (::stat(dirIn.c_str(), &st) != 0)
    fail("data directory '%s' does not exist; build one with `lmrt data build --input ... --out %s`",
         dirIn.c_str(), dirIn.c_str());
  if (!S_ISDIR(st.st_mode)) fail("data '%s' is not a directory (expected train.bin and val.bin in it)", dirIn.c_str());
  return dirIn.back() == '/' ? dirIn : dirIn + "/";
}

CausalBatcher::CausalBatcher(const std::string &dirIn, int64_t rows, int64_t window, uint64_t seed)
    : rows_(rows), window_(window), seed_(seed) {
  if (rows <= 0 || window <= 1)
    fail("causal batches need rows >= 1 and a window of at least 2 tokens (got %lld x %lld)",
         (long long)rows, (long long)window);
  std::string dir = checkDataDir(dirIn);
  train_ = openShard(dir, "train.bin");
  val_ = openShard(dir, "val.bin");
  if ((int64_t)train_->size() < window)
    fail("data '%s' has %llu tokens, fewer than one window of seq + 1 = %lld", train_->path().c_str(),
         (unsigned long long)train_->size(), (long long)window);
}

void CausalBatcher::checkVocab(int64_t vocab) const {
  checkShardVocab(*train_, vocab);
  checkShardVocab(*val_, vocab);
}

uint64_t CausalBatcher::windowStart(uint64_t seed, bool validation, uint64_t index, uint64_t row,
                                    uint64_t tokens, uint64_t window) {
  uint64_t h = counterRandom(seed, validation ? RngStream::Val : RngStream::Train, index, row);
  return uniformBelow(h, tokens - window + 1);
}

void CausalBatcher::fill(const Shard &shard, bool validation, uint64_t index, int32_t *out,
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
