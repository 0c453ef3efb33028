/* Fuzz target: a Megatron-LM indexed dataset (runtime/data/megatron_dataset.cpp),
   opened as `lmrt run --data` opens it: PREFIX.bin with PREFIX.idx beside it.

   Input: u32 little-endian N | N bytes of PREFIX.idx | the rest, PREFIX.bin
   (N past the end takes everything as the index). scripts/fuzz.sh packs the
   seeds this way from datasets written as Megatron's IndexedDatasetBuilder does.

   Invariants of an accepted dataset (the readers memory-map, where ASan does not
   see every overrun; see shard_fuzzer.cpp): the .bin holds exactly the tokens the
   index counts, and the stream reads end to end. */
#include "base/tensor.h"
#include "runtime/data/token_source.h"
#include "test/Fuzz/FuzzSupport.h"

using namespace lmrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t n;
  std::memcpy(&n, data, 4);
  const std::string_view rest(reinterpret_cast<const char *>(data) + 4, size - 4);
  const std::string_view idx = rest.substr(0, n), bin = rest.substr(idx.size());
  const std::string &dir = lmc_fuzz::scratchDir("megatron");
  lmc_fuzz::writeFile(dir + "/d.idx", idx);
  lmc_fuzz::writeFile(dir + "/d.bin", bin);

  std::unique_ptr<TokenSource> s;
  try {
    s = TokenSource::open(dir + "/d.bin");
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
    return 0;
  }
  LMC_FUZZ_CHECK(s->files().size() == 1, "");
  const TokenFile &f = s->files()[0];
  LMC_FUZZ_CHECK(f.format.rfind("Megatron indexed dataset", 0) == 0, f.format);
  LMC_FUZZ_CHECK(f.documents >= 0, "");
  LMC_FUZZ_CHECK(bin.size() == f.count * tokenDTypeBytes(f.dtype),
                 std::to_string(bin.size()) + " bytes, " + std::to_string(f.count) + " tokens");
  uint64_t sum = 0;  // reads every token (unsigned: int64 tokens may be anything)
  for (uint64_t i = 0; i < s->size(); ++i) sum += (uint64_t)s->token(i);
  (void)sum;
  try {
    checkTokenRange(*s, 50257);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  return 0;
}
