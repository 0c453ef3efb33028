/* Implements: reading Megatron-LM indexed datasets (megatron/core/datasets/
   indexed_dataset.py, IndexedDatasetBuilder), as TokenSource.

   PREFIX.bin holds the tokens of every sequence back to back, no header.
   PREFIX.idx (all little-endian):
     9 bytes   "MMIDIDX\0\0"
     u64       version, 1
     u8        dtype code: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                           (6 float64, 7 float32: not tokens), 8 uint16
     u64       sequence count S
     u64       document index count D (documents + 1)
     S x i32   sequence lengths (tokens)
     S x i64   sequence pointers (byte offset of each sequence in .bin)
     D x i64   document indices: 0, then the sequence index where each
               document ends (the last is S)
   (Multimodal datasets append S x i8 sequence modes; lmrt reads text only.)

   The writer lays sequences out contiguously; lmrt checks that and reads the
   .bin as one token stream, so the stream equals the concatenated documents. */
#include <cstring>

#include "runtime/data/token_source.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

constexpr char kMegatronMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr size_t kMegatronHeaderBytes = 9 + 8 + 1 + 8 + 8;  // 34

template <typename T> T readAt(const unsigned char *base, size_t offset) {
  T v;
  std::memcpy(&v, base + offset, sizeof v);
  return v;
}

TokenDType megatronDType(const char *idx, uint8_t code) {
  switch (code) {
  case 1: return TokenDType::U8;
  case 2: return TokenDType::I8;
  case 3: return TokenDType::I16;
  case 4: return TokenDType::I32;
  case 5: return TokenDType::I64;
  case 8: return TokenDType::U16;
  case 6:
  case 7:
    fail("%s: dtype code %u (%s) is a floating-point type, not token ids", idx, code,
         code == 6 ? "float64" : "float32");
  default:
    fail("%s: unknown dtype code %u (Megatron's codes are 1-8)", idx, code);
  }
}

}  // namespace

std::unique_ptr<TokenSource> openMegatronDataset(const std::string &binPath,
                                                 const std::string &idxPath) {
  const char *ip = idxPath.c_str(), *bp = binPath.c_str();
  uint64_t tokens = 0, documents = 0;
  TokenDType dtype;
  {
    MappedFile idx(idxPath, "Megatron index");
    const unsigned char *m = idx.data;
    if (idx.size < kMegatronHeaderBytes)
      fail("%s is truncated: %zu bytes, smaller than the %zu-byte Megatron index header", ip,
           idx.size, kMegatronHeaderBytes);
    if (std::memcmp(m, kMegatronMagic, 9) != 0)
      fail("%s is not a Megatron index (bad magic; expected \"MMIDIDX\\0\\0\")", ip);
    uint64_t version = readAt<uint64_t>(m, 9);
    if (version != 1)
      fail("%s has Megatron index version %llu; lmrt reads version 1", ip,
           (unsigned long long)version);
    dtype = megatronDType(ip, readAt<uint8_t>(m, 17));
    const size_t w = tokenDTypeBytes(dtype);
    uint64_t S = readAt<uint64_t>(m, 18), D = readAt<uint64_t>(m, 26);
    if (S >> 56 || D >> 56)
      fail("%s has a corrupted header: %llu sequences and %llu document indices", ip,
           (unsigned long long)S, (unsigned long long)D);
    const size_t lengthsAt = kMegatronHeaderBytes, pointersAt = lengthsAt + S * 4,
                 docsAt = pointersAt + S * 8, expected = docsAt + D * 8;
    if (idx.size < expected)
      fail("%s is truncated: header says %llu sequences and %llu document indices (%zu bytes), "
           "file has %zu bytes", ip, (unsigned long long)S, (unsigned long long)D, expected,
           idx.size);
    if (idx.size == expected + S && S > 0)
      fail("%s is a multimodal Megatron index (it has sequence modes); lmrt reads text datasets",
           ip);
    if (idx.size > expected)
      fail("%s has %zu unexpected trailing bytes (header says %llu sequences and %llu document "
           "indices, %zu bytes)", ip, idx.size - expected, (unsigned long long)S,
           (unsigned long long)D, expected);
    // Sequences must be back to back from byte 0: that makes the .bin one stream.
    uint64_t at = 0;
    for (uint64_t i = 0; i < S; ++i) {
      int32_t len = readAt<int32_t>(m, lengthsAt + i * 4);
      int64_t ptr = readAt<int64_t>(m, pointersAt + i * 8);
      if (len < 0) fail("%s: sequence %llu has negative length %d", ip, (unsigned long long)i, len);
      if ((uint64_t)ptr != at)
        fail("%s: sequence %llu starts at byte %lld, expected %llu (lmrt reads sequences laid "
             "out back to back, as Megatron's IndexedDatasetBuilder writes them)", ip,
             (unsigned long long)i, (long long)ptr, (unsigned long long)at);
      at += (uint64_t)len * w;
      tokens += (uint64_t)len;
    }
    if (D == 0) fail("%s has no document indices (expected at least the leading 0)", ip);
    for (uint64_t d = 0; d < D; ++d) {
      int64_t s = readAt<int64_t>(m, docsAt + d * 8);
      int64_t prev = d ? readAt<int64_t>(m, docsAt + (d - 1) * 8) : 0;
      if ((d == 0 && s != 0) || s < prev || (uint64_t)s > S)
        fail("%s: document index %llu is %lld, out of order or past the %llu sequences", ip,
             (unsigned long long)d, (long long)s, (unsigned long long)S);
    }
    int64_t last = readAt<int64_t>(m, docsAt + (D - 1) * 8);
    if ((uint64_t)last != S)
      fail("%s: the last document index is %lld, but there are %llu sequences (the documents "
           "must cover every sequence)", ip, (long long)last, (unsigned long long)S);
    documents = D - 1;
  }
  auto bin = std::make_shared<MappedFile>(binPath, "Megatron data file");
  const size_t w = tokenDTypeBytes(dtype);
  uint64_t expected = tokens * w;
  if (bin->size < expected)
    fail("%s is truncated: %s says %llu %s tokens (%llu bytes), file has %zu bytes", bp, ip,
         (unsigned long long)tokens, tokenDTypeName(dtype), (unsigned long long)expected,
         bin->size);
  if (bin->size > expected)
    fail("%s has %llu unexpected bytes after the %llu %s tokens that %s describes", bp,
         (unsigned long long)(bin->size - expected), (unsigned long long)tokens,
         tokenDTypeName(dtype), ip);
  const MappedFile *f = bin.get();
  return std::make_unique<TokenSource>(
      binPath, std::string("Megatron indexed dataset (") + tokenDTypeName(dtype) + ")", f->data,
      dtype, tokens, (int64_t)documents, bin, [f] { f->releasePages(); });
}

}  // namespace lmrt
