/* Implements: token shards, the on-disk form of a tokenized corpus.

   Layout (all integers little-endian):
     offset 0   "LMCSHARD"          8-byte magic
            8   u32 version         kShardVersion
           12   u32 token bytes     2 (uint16 tokens) or 4 (uint32 tokens)
           16   u64 token count     N
           24   u64 document count  D
           32   N tokens
                D u64 document start offsets (token index of each document's
                  first token; non-decreasing, the first is 0)
                u64 FNV-1a-64 of every preceding byte
   Readers check magic, version, token width, the exact file size, the
   document index and the checksum before handing out a single token. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/hash.h"

namespace lmrt {

constexpr char kShardMagic[8] = {'L', 'M', 'C', 'S', 'H', 'A', 'R', 'D'};
constexpr uint32_t kShardVersion = 1;
constexpr size_t kShardHeaderBytes = 32;


/* Writes a shard. `docStarts` must start at 0 (or be empty only if `tokens` is
   empty) and be non-decreasing; every token must fit in `tokenBytes`. The file is
   written to PATH.tmp and renamed, so a crash never leaves a half shard behind. */
void writeShard(const std::string &path, const std::vector<uint32_t> &tokens,
                const std::vector<uint64_t> &docStarts, uint32_t tokenBytes = 2);

/* A validated, memory-mapped shard. */
class Shard {
public:
  /* Maps and validates the file; throws Error naming `path` on any problem. */
  explicit Shard(const std::string &path);
  ~Shard();
  Shard(const Shard &) = delete;
  Shard &operator=(const Shard &) = delete;

  const std::string &path() const { return path_; }
  uint64_t size() const { return tokenCount_; }
  uint64_t documentCount() const { return docCount_; }
  uint32_t tokenBytes() const { return tokenBytes_; }
  uint32_t token(uint64_t i) const;
  /* The first token's bytes (tokenBytes() each, little-endian), for TokenSource. */
  const unsigned char *tokenData() const { return map_ + kShardHeaderBytes; }
  uint64_t documentStart(uint64_t d) const;
  /* Lets the kernel drop the mapped pages from memory (they are re-read from the
     file on the next access), so a full pass such as the vocabulary check does
     not leave the whole shard counted in the process's resident memory. */
  void releasePages() const;
  /* Copies tokens [start, start + n) into `out` as int32 (the plan's id type). */
  void copyTokens(uint64_t start, uint64_t n, int32_t *out) const;

private:
  std::string path_;
  const unsigned char *map_ = nullptr;
  size_t mapBytes_ = 0;
  uint32_t tokenBytes_ = 2;
  uint64_t tokenCount_ = 0;
  uint64_t docCount_ = 0;
};

}  // namespace lmrt
