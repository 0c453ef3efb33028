/* Implements: `lmrt data build`: text files -> token shards, byte-level or
   through a SentencePiece model (tokenizer.h). With a model, each document's
   tokens are followed by the model's eos token when it has one (the document
   separator, as GPT-2's <|endoftext|>), the model is copied into the output as
   DIR/tokenizer.model, and every document is checked to decode back to its
   exact text.
   Every document goes, whole, to train or to validation by a counter-based
   hash of (seed, document index) against the validation fraction, so the split
   is a pure function of the inputs, their order and the seed. Writes
   DIR/train.bin, DIR/val.bin and DIR/meta.json. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "base/paths.h"
#include "runtime/data/corpus.h"

namespace lmrt {

struct DatasetBuildOptions {
  std::vector<std::string> inputs;  // files and/or directories
  std::string outDir;
  double valFraction = 0.05;
  uint64_t seed = 1;
  TextFormat format = TextFormat::Auto;
  std::string tokenizer;  // SentencePiece model; "" = bytes
  /* Replace files in outDir that are not an earlier build's (see buildDataset). */
  bool overwrite = false;
  FILE *log = nullptr;    // where a removed stale temporary is reported
};

struct DatasetBuildStats {
  std::vector<std::string> files;    // read, in order
  std::vector<std::string> skipped;  // "path (reason)"
  uint64_t trainDocs = 0, trainTokens = 0;
  uint64_t valDocs = 0, valTokens = 0;
  uint64_t trainBytes = 0, valBytes = 0;  // UTF-8 bytes of the documents' text
  std::string tokenizer = "bytes";        // "bytes" or "sentencepiece"
  int64_t vocab = 256;
  uint64_t roundTripExact = 0;            // documents that decode back to their text
  std::vector<std::pair<std::string, int32_t>> specialTokens;
};

/* The files a data build writes under --out besides meta.json (and tokenizer.model). */
struct DataBuildShards {
  const char *magic;  // 8 bytes: an existing file with it is an earlier build's, replaced
  const char *train, *val;
  const char *what;   // how an error names such a file
};

/* The output rules (base/paths.h) for a data build's directory and files, checked
   before any work: token shards (buildDataset) and example shards (buildJsonlDataset). */
void checkDataBuildOutputs(const std::string &outDir, const DataBuildShards &shards, const std::string &tokenizer,
                           const std::vector<NamedPath> &inputs, bool overwrite, FILE *log);

/* True when document `index` belongs to the validation split. */
bool isValidationDocument(uint64_t seed, uint64_t index, double valFraction);

/* The byte tokenizer: one token per byte (vocabulary 256). */
constexpr int64_t kByteVocab = 256;

/* Builds the directory. Before anything is tokenized, its outputs are checked by
   the output rules (base/paths.h, docs/runtime.md "Paths"): none may be an input
   (an input named DIR/train.bin is refused, --overwrite or not), and an existing
   DIR/train.bin, val.bin, meta.json or tokenizer.model is replaced only when it
   is an earlier build's (an LMC shard, a data build's meta.json, a SentencePiece
   model), anything else only with `overwrite`. A validation fraction above 0
   that leaves validation with no document is an error (a run would find no
   validation data); a fraction of 0 builds an empty val.bin on purpose. */
DatasetBuildStats buildDataset(const DatasetBuildOptions &options);

}  // namespace lmrt
