/* Implements: one validated, memory-mapped token stream read from any of the
   token file formats `lmrt run --data` takes, detected by their headers:

     LMC shard         "LMCSHARD" magic (`lmrt data build`; shard.h)
     llm.c shard       256 int32 header, magic 20240520 (GPT-2, uint16 tokens)
                       or 20240801 (LLaMA 3, uint32 tokens); llmc_shard.cpp
     Megatron-LM       PREFIX.bin (raw tokens) + PREFIX.idx ("MMIDIDX\0\0"
     indexed dataset   index: dtype, sequence lengths and pointers, document
                       indices); megatron_dataset.cpp

   Each reader checks everything its header and index promise (magic, version,
   token type, exact file sizes, index order) before a token is handed out, and
   every error names the file and what is wrong. The stream is the file's tokens
   in order, whatever the format, so equal token streams give equal batches. */
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lmrt {

/* Token types the formats store (Megatron's integer dtype codes, uint16 and
   uint32 for LMC and llm.c). */
enum class TokenDType { U8, I8, U16, I16, U32, I32, I64 };
size_t tokenDTypeBytes(TokenDType t);
const char *tokenDTypeName(TokenDType t);

/* One file's tokens, mapped and validated. */
struct TokenFile {
  std::string path, format;
  const unsigned char *tokens = nullptr;
  TokenDType dtype = TokenDType::U16;
  uint64_t count = 0;
  int64_t documents = -1;        // recorded documents, -1 where the format records none
  uint64_t start = 0;            // index of its first token in the stream
  std::shared_ptr<void> owner;   // keeps the mapping alive
  std::function<void()> release; // drops its pages (see releasePages)

  int64_t token(uint64_t i) const;  // i-th token of this file
};

/* The token stream of one split: one file, or several concatenated in order
   (llm.c's fineweb_train_000001.bin, ..._000002.bin, ...). */
class TokenSource {
public:
  /* Opens `path`, detecting its format: a `.bin` with a `.idx` beside it is a
     Megatron dataset (its `.bin` has no header of its own), otherwise the first
     bytes decide. Throws lmrt::Error naming the file on any problem. */
  static std::unique_ptr<TokenSource> open(const std::string &path);
  /* Opens every path and concatenates them in the order given. */
  static std::unique_ptr<TokenSource> open(const std::vector<std::string> &paths);

  /* A stream over `count` tokens of type `dtype` at `tokens`; `owner` keeps the
     mapping alive and `release` drops its pages (see releasePages). */
  TokenSource(std::string path, std::string format, const unsigned char *tokens, TokenDType dtype,
              uint64_t count, int64_t documents, std::shared_ptr<void> owner,
              std::function<void()> release);
  /* Appends `next`'s files after this stream's. */
  void append(TokenSource &&next);

  /* The file, or "FIRST (and N more files)". */
  std::string path() const;
  /* "LMC shard", "llm.c shard (GPT-2, uint16)", "Megatron indexed dataset
     (uint16)", with " x N files" for several. */
  std::string format() const;
  uint64_t size() const { return count_; }
  const std::vector<TokenFile> &files() const { return files_; }

  int64_t token(uint64_t i) const;
  /* Copies tokens [start, start + n) into `out` as int32 (the plan's id type),
     across files where the range spans them; throws if the range leaves the
     stream. Tokens are range-checked once, by checkTokenRange, before training. */
  void copyTokens(uint64_t start, uint64_t n, int32_t *out) const;
  /* Lets the kernel drop the mapped pages (re-read from the file on the next
     access), so a full pass does not stay counted in resident memory. */
  void releasePages() const;

private:
  const TokenFile &fileOf(uint64_t i) const;
  std::vector<TokenFile> files_;
  uint64_t count_ = 0;
};

/* Throws naming the file, token and offset if a token is negative or >= vocab:
   "data 'DIR/train.bin': token 300 at offset 1234 is outside the plan's
   vocabulary (256)". */
void checkTokenRange(const TokenSource &source, int64_t vocab);

/* The readers behind TokenSource::open, for tests. */
std::unique_ptr<TokenSource> openLmcShard(const std::string &path);
std::unique_ptr<TokenSource> openLlmcShard(const std::string &path);
std::unique_ptr<TokenSource> openMegatronDataset(const std::string &binPath,
                                                 const std::string &idxPath);

// --- helpers shared by the readers ----------------------------------------------

/* A read-only mapping of a whole regular file (FIFOs, devices and directories
   are refused before anything blocks on them). `what` names the kind of file in
   errors. An empty file maps to {nullptr, 0}. */
struct MappedFile {
  MappedFile(const std::string &path, const char *what);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  void releasePages() const;
  std::string path;
  const unsigned char *data = nullptr;
  size_t size = 0;
};

}  // namespace lmrt
