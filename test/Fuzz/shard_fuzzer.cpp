/* Fuzz target: one token file, opened as `lmrt run --data` opens it
   (runtime/data/token_source.h: TokenSource::open detects an LMC shard or an
   llm.c shard by its first bytes), then read the ways training reads it.
   LMC shards also go through Shard (runtime/data/shard.h) and its document index.

   The readers memory-map the file, and ASan does not see reads past the end of a
   mapping that stay inside its last page; so the target checks what every
   accepted file must satisfy instead: its size is exactly what its header
   promises (then every token and index entry lies inside it), and the document
   starts are ordered and within the tokens. An LMC shard's input is also tried
   with its trailing checksum made to match, so that mutations get past it. */
#include "base/hash.h"
#include "base/tensor.h"
#include "runtime/data/shard.h"
#include "runtime/data/token_source.h"
#include "test/Fuzz/FuzzSupport.h"

using namespace lmrt;

namespace {

void readAll(const std::string &path, size_t fileBytes) {
  std::unique_ptr<TokenSource> s;
  try {
    s = TokenSource::open(path);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
    return;
  }
  LMC_FUZZ_CHECK(s->files().size() == 1, "");
  const TokenFile &f = s->files()[0];
  const uint64_t width = tokenDTypeBytes(f.dtype);
  LMC_FUZZ_CHECK(s->size() == f.count, "");
  if (f.format == "LMC shard") {
    LMC_FUZZ_CHECK(f.documents >= 0, "");
    LMC_FUZZ_CHECK(fileBytes == kShardHeaderBytes + f.count * width + (uint64_t)f.documents * 8 + 8,
                   std::to_string(fileBytes) + " bytes");
    Shard shard(path);  // accepted once, so accepted again
    LMC_FUZZ_CHECK(shard.size() == f.count && (int64_t)shard.documentCount() == f.documents, "");
    uint64_t prev = 0;
    for (uint64_t d = 0; d < shard.documentCount(); ++d) {
      uint64_t start = shard.documentStart(d);
      LMC_FUZZ_CHECK(start >= prev && start <= shard.size() && (d || start == 0), std::to_string(d));
      prev = start;
    }
    for (uint64_t i = 0; i < shard.size(); i += 1 + shard.size() / 16)
      LMC_FUZZ_CHECK((int64_t)shard.token(i) == s->token(i), std::to_string(i));
  } else {
    LMC_FUZZ_CHECK(f.format.rfind("llm.c shard", 0) == 0, f.format);
    LMC_FUZZ_CHECK(f.documents == -1 && fileBytes == 1024 + f.count * width, std::to_string(fileBytes));
  }
  (void)s->format();
  (void)s->path();
  if (s->size() > 0) {
    std::vector<int32_t> out(std::min<uint64_t>(s->size(), 64));
    s->copyTokens(s->size() - out.size(), out.size(), out.data());
    LMC_FUZZ_CHECK(out.back() == (int32_t)s->token(s->size() - 1), "");
  }
  try {
    std::vector<int32_t> out(1);
    s->copyTokens(s->size(), 1, out.data());  // past the end: refused
    lmc_fuzz::violated("copyTokens past the end was accepted");
  } catch (const Error &) {
    // as it must be
  }
  try {
    checkTokenRange(*s, 50257);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  s->releasePages();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = lmc_fuzz::scratchDir("shard") + "/data.bin";
  std::string bytes = lmc_fuzz::bytesOf(data, size);
  lmc_fuzz::writeFile(path, bytes);
  readAll(path, size);
  if (size >= kShardHeaderBytes + 8 && std::memcmp(data, kShardMagic, sizeof kShardMagic) == 0) {
    std::string fixed = bytes;
    lmc_fuzz::storeLE<uint64_t>(fixed, size - 8, fnv1a64(fixed.data(), size - 8));
    if (fixed != bytes) {
      lmc_fuzz::writeFile(path, fixed);
      readAll(path, size);
    }
  }
  return 0;
}
