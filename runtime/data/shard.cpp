/* Implements: writing and validating token shards (format in shard.h). */
#include "runtime/data/shard.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_io.h"
#include "base/tensor.h"

namespace lmrt {

// --- writing ------------------------------------------------------------------

namespace {

/* Checksums exactly the bytes written (stream errors surface in writeFileAtomic). */
struct ChecksummedFile {
  std::ostream &f;
  Fnv1a64 sum;
  void put(const void *p, size_t n) {
    sum.update(p, n);
    f.write(static_cast<const char *>(p), (std::streamsize)n);
  }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
};

}  // namespace

void writeShard(const std::string &path, const std::vector<uint32_t> &tokens,
                const std::vector<uint64_t> &docStarts, uint32_t tokenBytes) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shards are little-endian");
  if (tokenBytes != 2 && tokenBytes != 4)
    fail("shard '%s': token width %u is not supported (2 or 4 bytes)", path.c_str(), tokenBytes);
  if (!tokens.empty() && (docStarts.empty() || docStarts[0] != 0))
    fail("shard '%s': the first document must start at token 0", path.c_str());
  for (size_t d = 0; d < docStarts.size(); ++d)
    if (docStarts[d] > tokens.size() || (d && docStarts[d] < docStarts[d - 1]))
      fail("shard '%s': document %zu starts at %llu, out of order or past the %zu tokens",
           path.c_str(), d, (unsigned long long)docStarts[d], tokens.size());
  writeFileAtomic(path, "shard", [&](std::ostream &f) {
    ChecksummedFile out{f, {}};
    out.put(kShardMagic, 8);
    out.u32(kShardVersion);
    out.u32(tokenBytes);
    out.u64(tokens.size());
    out.u64(docStarts.size());
    std::vector<unsigned char> chunk;
    const size_t kChunk = 1 << 16;
    for (size_t i = 0; i < tokens.size(); i += kChunk) {
      size_t n = std::min(kChunk, tokens.size() - i);
      chunk.resize(n * tokenBytes);
      for (size_t j = 0; j < n; ++j) {
        uint32_t t = tokens[i + j];
        if (tokenBytes == 2 && t > 0xffff)
          fail("shard '%s': token %u at offset %zu does not fit in 2 bytes", path.c_str(), t, i + j);
        std::memcpy(&chunk[j * tokenBytes], &t, tokenBytes);
      }
      out.put(chunk.data(), chunk.size());
    }
    for (uint64_t s : docStarts) out.u64(s);
    uint64_t checksum = out.sum.h;
    f.write(reinterpret_cast<const char *>(&checksum), 8);
  });
}

// --- reading ------------------------------------------------------------------

Shard::Shard(const std::string &path) : path_(path) {
  const char *p = path.c_str();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open shard '%s': %s", p, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("cannot stat shard '%s': %s", p, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("shard '%s' is not a regular file (a FIFO or device cannot be memory-mapped and re-read)", p);
  }
  size_t fileBytes = static_cast<size_t>(st.st_size);
  if (fileBytes < kShardHeaderBytes) {
    ::close(fd);
    fail("%s is truncated: %zu bytes, smaller than the %zu-byte shard header", p, fileBytes,
         kShardHeaderBytes);
  }
  void *m = ::mmap(nullptr, fileBytes, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail("cannot map shard '%s': %s", p, std::strerror(e));
  map_ = static_cast<const unsigned char *>(m);
  mapBytes_ = fileBytes;
  // From here on the destructor will not run if we throw, so unmap by hand.
  try {
    if (std::memcmp(map_, kShardMagic, 8) != 0)
      fail("%s is not a token shard (bad magic; expected \"LMCSHARD\")", p);
    uint32_t version;
    std::memcpy(&version, map_ + 8, 4);
    if (version != kShardVersion)
      fail("%s has shard format version %u; this lmrt reads version %u", p, version, kShardVersion);
    std::memcpy(&tokenBytes_, map_ + 12, 4);
    if (tokenBytes_ != 2 && tokenBytes_ != 4)
      fail("%s has token width %u bytes; only 2 and 4 are valid", p, tokenBytes_);
    std::memcpy(&tokenCount_, map_ + 16, 8);
    std::memcpy(&docCount_, map_ + 24, 8);
    // A garbage header could make the size arithmetic overflow; no real shard
    // has 2^56 tokens or documents.
    if (tokenCount_ >> 56 || docCount_ >> 56)
      fail("%s has a corrupted header: %llu tokens and %llu documents", p,
           (unsigned long long)tokenCount_, (unsigned long long)docCount_);
    uint64_t expected = kShardHeaderBytes + tokenCount_ * tokenBytes_ + docCount_ * 8 + 8;
    if (fileBytes < expected)
      fail("%s is truncated: header says %llu tokens and %llu documents (%llu bytes), file has %zu "
           "bytes", p, (unsigned long long)tokenCount_, (unsigned long long)docCount_,
           (unsigned long long)expected, fileBytes);
    if (fileBytes > expected)
      fail("%s has %llu unexpected trailing bytes after the checksum (header says %llu tokens and "
           "%llu documents)", p, (unsigned long long)(fileBytes - expected),
           (unsigned long long)tokenCount_, (unsigned long long)docCount_);
    // Checksum in chunks, dropping each from memory once hashed, so validating a
    // large shard does not raise the process's peak resident memory.
    Fnv1a64 sum;
    const size_t kChunk = size_t(4) << 20;  // a multiple of any page size
    for (size_t at = 0; at < fileBytes - 8; at += kChunk) {
      size_t n = std::min(kChunk, fileBytes - 8 - at);
      sum.update(map_ + at, n);
      if (n == kChunk) ::madvise(const_cast<unsigned char *>(map_ + at), n, MADV_DONTNEED);
    }
    uint64_t stored;
    std::memcpy(&stored, map_ + fileBytes - 8, 8);
    if (stored != sum.h)
      fail("%s: checksum mismatch (corrupted): stored %016llx, computed %016llx", p,
           (unsigned long long)stored, (unsigned long long)sum.h);
    if (tokenCount_ > 0 && docCount_ == 0) fail("%s has tokens but no document index", p);
    for (uint64_t d = 0; d < docCount_; ++d) {
      uint64_t s = documentStart(d);
      if ((d == 0 && s != 0) || s > tokenCount_ || (d && s < documentStart(d - 1)))
        fail("%s: document %llu starts at token %llu, which is out of order or past the %llu "
             "tokens", p, (unsigned long long)d, (unsigned long long)s,
             (unsigned long long)tokenCount_);
    }
  } catch (...) {
    ::munmap(const_cast<unsigned char *>(map_), mapBytes_);
    throw;
  }
}

Shard::~Shard() {
  if (map_) ::munmap(const_cast<unsigned char *>(map_), mapBytes_);
}

uint32_t Shard::token(uint64_t i) const {
  const unsigned char *at = map_ + kShardHeaderBytes + i * tokenBytes_;
  if (tokenBytes_ == 2) {
    uint16_t t;
    std::memcpy(&t, at, 2);
    return t;
  }
  uint32_t t;
  std::memcpy(&t, at, 4);
  return t;
}

uint64_t Shard::documentStart(uint64_t d) const {
  uint64_t s;
  std::memcpy(&s, map_ + kShardHeaderBytes + tokenCount_ * tokenBytes_ + d * 8, 8);
  return s;
}

void Shard::releasePages() const {
  // Advice only: on failure the pages simply stay resident.
  ::madvise(const_cast<unsigned char *>(map_), mapBytes_, MADV_DONTNEED);
}

void Shard::copyTokens(uint64_t start, uint64_t n, int32_t *out) const {
  if (start > tokenCount_ || n > tokenCount_ - start)
    fail("%s: token range [%llu, %llu) is outside its %llu tokens", path_.c_str(),
         (unsigned long long)start, (unsigned long long)(start + n),
         (unsigned long long)tokenCount_);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(token(start + i));
}

}  // namespace lmrt
