/* Implements: reading DIR/meta.json, the record `lmrt data build` leaves beside
   its shards: the tokenizer (bytes, or a SentencePiece model stored as
   DIR/tokenizer.model), its vocabulary and special tokens, and per split the
   token, document and text-byte counts. Directories of Megatron or llm.c files
   have no meta.json; then nothing is known beyond the tokens. */
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lmrt {

class Tokenizer;

struct DatasetSplitMeta {
  std::string file;
  uint64_t tokens = 0, documents = 0;
  uint64_t bytes = 0;  // 0 when not recorded (shards built before it was)
};

struct DatasetMeta {
  std::string path;            // DIR/meta.json
  std::string tokenizer;       // "bytes" or "sentencepiece"
  std::string tokenizerModel;  // DIR/tokenizer.model for sentencepiece, else ""
  int64_t vocab = 0;
  int64_t tokenBytes = 0;      // "token_bytes" (2 or 4) of LMC shards, 0 when not recorded
  std::vector<std::pair<std::string, int64_t>> specialTokens;
  DatasetSplitMeta train, val;

  /* The tokenizer the data was built with; throws if its model is missing or
     disagrees with the recorded vocabulary. */
  std::unique_ptr<Tokenizer> loadTokenizer() const;
  /* Text bytes per token of a split, from the recorded counts (1 for bytes). */
  std::optional<double> bytesPerToken(const DatasetSplitMeta &split) const;
};

/* DIR/meta.json, parsed and checked for the fields above, or nullopt if the
   directory has none. Throws naming the file and field when it is malformed. */
std::optional<DatasetMeta> readDatasetMeta(const std::string &dir);

}  // namespace lmrt
