/* Implements: `lmrt data build`: text files -> byte-level token shards.
   Every document goes, whole, to train or to validation by a counter-based
   hash of (seed, document index) against the validation fraction, so the split
   is a pure function of the inputs, their order and the seed. Writes
   DIR/train.bin, DIR/val.bin and DIR/meta.json. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/corpus.h"

namespace lmrt {

struct DatasetBuildOptions {
  std::vector<std::string> inputs;  // files and/or directories
  std::string outDir;
  double valFraction = 0.05;
  uint64_t seed = 1;
  TextFormat format = TextFormat::Auto;
};

struct DatasetBuildStats {
  std::vector<std::string> files;    // read, in order
  std::vector<std::string> skipped;  // "path (reason)"
  uint64_t trainDocs = 0, trainTokens = 0;
  uint64_t valDocs = 0, valTokens = 0;
};

/* True when document `index` belongs to the validation split. */
bool isValidationDocument(uint64_t seed, uint64_t index, double valFraction);

/* The byte tokenizer: one token per byte (vocabulary 256). */
constexpr int64_t kByteVocab = 256;

DatasetBuildStats buildDataset(const DatasetBuildOptions &options);

}  // namespace lmrt
