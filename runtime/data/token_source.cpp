/* Implements: TokenSource, format detection, the LMC shard adapter, the token
   range check and MappedFile (see token_source.h). */
#include "runtime/data/token_source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/data/shard.h"
#include "base/tensor.h"

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
    : count_(count) {
  files_.push_back(TokenFile{std::move(path), std::move(format), tokens, dtype, count, documents, 0,
                             std::move(owner), std::move(release)});
}

void TokenSource::append(TokenSource &&next) {
  for (TokenFile &f : next.files_) {
    f.start = count_;
    count_ += f.count;
    files_.push_back(std::move(f));
  }
  next.files_.clear();
  next.count_ = 0;
}

std::string TokenSource::path() const {
  if (files_.size() == 1) return files_[0].path;
  return files_[0].path + " (and " + std::to_string(files_.size() - 1) + " more files)";
}

std::string TokenSource::format() const {
  if (files_.size() == 1) return files_[0].format;
  for (const TokenFile &f : files_)
    if (f.format != files_[0].format) return "mixed formats x " + std::to_string(files_.size()) + " files";
  return files_[0].format + " x " + std::to_string(files_.size()) + " files";
}

int64_t TokenFile::token(uint64_t i) const {
  const unsigned char *at = tokens + i * tokenDTypeBytes(dtype);
  auto load = [at](auto v) {
    std::memcpy(&v, at, sizeof v);
    return static_cast<int64_t>(v);
  };
  switch (dtype) {
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

const TokenFile &TokenSource::fileOf(uint64_t i) const {
  if (files_.size() == 1) return files_[0];
  // The last file starting at or before i (empty files are skipped over).
  auto it = std::upper_bound(files_.begin(), files_.end(), i,
                             [](uint64_t v, const TokenFile &f) { return v < f.start; });
  const TokenFile *f = &*(it - 1);
  while (i >= f->start + f->count && f + 1 < files_.data() + files_.size()) ++f;
  return *f;
}

int64_t TokenSource::token(uint64_t i) const {
  const TokenFile &f = fileOf(i);
  return f.token(i - f.start);
}

void TokenSource::copyTokens(uint64_t start, uint64_t n, int32_t *out) const {
  if (start > count_ || n > count_ - start)
    fail("%s: token range [%llu, %llu) is outside its %llu tokens", path().c_str(),
         (unsigned long long)start, (unsigned long long)(start + n), (unsigned long long)count_);
  while (n > 0) {
    const TokenFile &f = fileOf(start);
    uint64_t off = start - f.start, take = std::min(n, f.count - off);
    for (uint64_t i = 0; i < take; ++i) out[i] = static_cast<int32_t>(f.token(off + i));
    out += take;
    start += take;
    n -= take;
  }
}

void TokenSource::releasePages() const {
  for (const TokenFile &f : files_)
    if (f.release) f.release();
}

void checkTokenRange(const TokenSource &source, int64_t vocab) {
  for (const TokenFile &f : source.files()) {
    for (uint64_t i = 0; i < f.count; ++i) {
      int64_t t = f.token(i);
      if (t < 0 || t >= vocab)
        fail("data '%s': token %lld at offset %llu is outside the plan's vocabulary (%lld)",
             f.path.c_str(), (long long)t, (unsigned long long)i, (long long)vocab);
      if ((i & ((1u << 21) - 1)) == (1u << 21) - 1 && f.release) f.release();  // keep the peak low
    }
    if (f.release) f.release();
  }
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

std::unique_ptr<TokenSource> TokenSource::open(const std::vector<std::string> &paths) {
  if (paths.empty()) fail("no token files to open");
  std::unique_ptr<TokenSource> s = open(paths[0]);
  for (size_t i = 1; i < paths.size(); ++i) s->append(std::move(*open(paths[i])));
  return s;
}

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
