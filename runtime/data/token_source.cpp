/* Implements: TokenSource, format detection, the LMC shard adapter, the token
   range check and MappedFile (see token_source.h). */
#include "runtime/data/token_source.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/data/shard.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt {

size_t tokenDTypeBytes(TokenDType t) {
  switch (t) {
  case TokenDType::U8: case TokenDType::I8: return 1;
  case TokenDType::U16: case TokenDType::I16: return 2;
  case TokenDType::U32: case TokenDType::I32: return 4;
  case TokenDType::I64: return 8;
  }
  return 0;
}

const char *tokenDTypeName(TokenDType t) {
  switch (t) {
  case TokenDType::U8: return "uint8";
  case TokenDType::I8: return "int8";
  case TokenDType::U16: return "uint16";
  case TokenDType::I16: return "int16";
  case TokenDType::U32: return "uint32";
  case TokenDType::I32: return "int32";
  case TokenDType::I64: return "int64";
  }
  return "?";
}

// --- MappedFile -----------------------------------------------------------------

MappedFile::MappedFile(const std::string &p, const char *what) : path(p) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it.
  int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open %s '%s': %s", what, p.c_str(), std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("cannot stat %s '%s': %s", what, p.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("%s '%s' is not a regular file", what, p.c_str());
  }
  size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void *m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    ::close(fd);
    if (m == MAP_FAILED) fail("cannot map %s '%s': %s", what, p.c_str(), std::strerror(e));
    data = static_cast<const unsigned char *>(m);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data) ::munmap(const_cast<unsigned char *>(data), size);
}

void MappedFile::releasePages() const {
  // Advice only: on failure the pages simply stay resident.
  if (data) ::madvise(const_cast<unsigned char *>(data), size, MADV_DONTNEED);
}

// --- TokenSource ----------------------------------------------------------------

TokenSource::TokenSource(std::string path, std::string format, const unsigned char *tokens,
                         TokenDType dtype, uint64_t count, int64_t documents,
                         std::shared_ptr<void> owner, std::function<void()> release)
    : path_(std::move(path)), format_(std::move(format)), tokens_(tokens), dtype_(dtype),
      count_(count), documents_(documents), owner_(std::move(owner)),
      release_(std::move(release)) {}

int64_t TokenSource::token(uint64_t i) const {
  const unsigned char *at = tokens_ + i * tokenDTypeBytes(dtype_);
  auto load = [at](auto v) {
    std::memcpy(&v, at, sizeof v);
    return static_cast<int64_t>(v);
  };
  switch (dtype_) {
  case TokenDType::U8: return load(uint8_t{});
  case TokenDType::I8: return load(int8_t{});
  case TokenDType::U16: return load(uint16_t{});
  case TokenDType::I16: return load(int16_t{});
  case TokenDType::U32: return load(uint32_t{});
  case TokenDType::I32: return load(int32_t{});
  case TokenDType::I64: return load(int64_t{});
  }
  return 0;
}

void TokenSource::copyTokens(uint64_t start, uint64_t n, int32_t *out) const {
  if (start > count_ || n > count_ - start)
    fail("%s: token range [%llu, %llu) is outside its %llu tokens", path_.c_str(),
         (unsigned long long)start, (unsigned long long)(start + n), (unsigned long long)count_);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(token(start + i));
}

void checkTokenRange(const TokenSource &source, int64_t vocab) {
  uint64_t n = source.size();
  for (uint64_t i = 0; i < n; ++i) {
    int64_t t = source.token(i);
    if (t < 0 || t >= vocab)
      fail("data '%s': token %lld at offset %llu is outside the plan's vocabulary (%lld)",
           source.path().c_str(), (long long)t, (unsigned long long)i, (long long)vocab);
    if ((i & ((1u << 21) - 1)) == (1u << 21) - 1) source.releasePages();  // keep the peak low
  }
  source.releasePages();
}

// --- detection ------------------------------------------------------------------

std::unique_ptr<TokenSource> openLmcShard(const std::string &path) {
  auto shard = std::make_shared<Shard>(path);
  const Shard *s = shard.get();
  TokenDType t = s->tokenBytes() == 2 ? TokenDType::U16 : TokenDType::U32;
  return std::make_unique<TokenSource>(path, "LMC shard", s->tokenData(), t, s->size(),
                                       (int64_t)s->documentCount(), shard,
                                       [s] { s->releasePages(); });
}

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::unique_ptr<TokenSource> TokenSource::open(const std::string &path) {
  // A Megatron .bin is raw tokens with no header: its .idx decides, and must be
  // looked at before the .bin's first bytes (which could be anything).
  if (endsWith(path, ".idx"))
    return openMegatronDataset(path.substr(0, path.size() - 4) + ".bin", path);
  if (endsWith(path, ".bin") && exists(path.substr(0, path.size() - 4) + ".idx"))
    return openMegatronDataset(path, path.substr(0, path.size() - 4) + ".idx");
  unsigned char head[8] = {0};
  size_t got = 0;
  {
    MappedFile f(path, "token file");
    got = std::min<size_t>(f.size, 8);
    if (got) std::memcpy(head, f.data, got);
  }
  if (got == 8 && std::memcmp(head, "LMCSHARD", 8) == 0) return openLmcShard(path);
  int32_t magic;
  std::memcpy(&magic, head, 4);
  if (got >= 4 && (magic == 20240520 || magic == 20240801)) return openLlmcShard(path);
  std::string idx = endsWith(path, ".bin") ? path.substr(0, path.size() - 4) + ".idx" : path + ".idx";
  fail("%s is not a token file lmrt knows: it starts with neither \"LMCSHARD\" (lmrt data build) "
       "nor an llm.c header (int32 magic 20240520 or 20240801), and there is no %s beside it "
       "(Megatron indexed dataset)", path.c_str(), idx.c_str());
}

}  // namespace lmrt
