/* Implements: reading llm.c token shards (karpathy/llm.c, dev/data/data_common.py
   write_datafile), as TokenSource:

     256 x int32 header: [0] magic, [1] version, [2] token count N, rest zero
     N tokens:           uint16 for GPT-2 (magic 20240520, version 1),
                         uint32 for LLaMA 3 (magic 20240801, version 7)

   llm.c records no document index (documents are separated by the tokenizer's
   end-of-text token), so documentCount() is -1. */
#include <cstring>

#include "runtime/data/token_source.h"
#include "base/tensor.h"

namespace lmrt {

namespace {
constexpr size_t kLlmcHeaderInts = 256;
constexpr size_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;
}  // namespace

std::unique_ptr<TokenSource> openLlmcShard(const std::string &path) {
  auto file = std::make_shared<MappedFile>(path, "llm.c shard");
  const char *p = path.c_str();
  if (file->size < kLlmcHeaderBytes)
    fail("%s is truncated: %zu bytes, smaller than the %zu-byte llm.c header", p, file->size,
         kLlmcHeaderBytes);
  int32_t header[3];
  std::memcpy(header, file->data, sizeof header);
  TokenDType dtype;
  std::string format;
  if (header[0] == 20240520) {
    if (header[1] != 1)
      fail("%s: llm.c GPT-2 shard (magic 20240520) has version %d; lmrt reads version 1", p,
           header[1]);
    dtype = TokenDType::U16;
    format = "llm.c shard (GPT-2, uint16)";
  } else if (header[0] == 20240801) {
    if (header[1] != 7)
      fail("%s: llm.c LLaMA 3 shard (magic 20240801) has version %d; lmrt reads version 7", p,
           header[1]);
    dtype = TokenDType::U32;
    format = "llm.c shard (LLaMA 3, uint32)";
  } else {
    fail("%s is not an llm.c shard (magic %d; expected 20240520 or 20240801)", p, header[0]);
  }
  if (header[2] < 0)
    fail("%s has a corrupted llm.c header: token count %d is negative", p, header[2]);
  uint64_t count = (uint64_t)header[2];
  uint64_t expected = kLlmcHeaderBytes + count * tokenDTypeBytes(dtype);
  if (file->size < expected)
    fail("%s is truncated: header says %llu tokens (%llu bytes), file has %zu bytes", p,
         (unsigned long long)count, (unsigned long long)expected, file->size);
  if (file->size > expected)
    fail("%s has %llu unexpected bytes after its %llu tokens (header says %llu tokens, %llu "
         "bytes)", p, (unsigned long long)(file->size - expected), (unsigned long long)count,
         (unsigned long long)count, (unsigned long long)expected);
  const MappedFile *f = file.get();
  return std::make_unique<TokenSource>(path, format, f->data + kLlmcHeaderBytes, dtype, count, -1,
                                       file, [f] { f->releasePages(); });
}

}  // namespace lmrt
