/* Implements: text files -> train/val byte shards + meta.json (see dataset_builder.h). */
#include "runtime/data/dataset_builder.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include "runtime/data/counter_rng.h"
#include "runtime/data/shard.h"
#include "runtime/lmrt/json.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt {

bool isValidationDocument(uint64_t seed, uint64_t index, double valFraction) {
  return uniform01(counterRandom(seed, RngStream::Split, index)) < valFraction;
}

namespace {

struct Split {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> docStarts;
  void add(const std::string &doc) {
    docStarts.push_back(tokens.size());
    for (unsigned char c : doc) tokens.push_back(c);
  }
};

void makeDir(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) return;
  if (errno != EEXIST) fail("cannot create output directory '%s': %s", dir.c_str(), std::strerror(errno));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("output '%s' exists and is not a directory", dir.c_str());
}

void writeMeta(const std::string &path, const DatasetBuildOptions &o, const DatasetBuildStats &s) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) fail("cannot create '%s': %s", path.c_str(), std::strerror(errno));
  std::fprintf(f, "{\n  \"tokenizer\": \"bytes\",\n  \"vocab\": %lld,\n", (long long)kByteVocab);
  std::fprintf(f, "  \"token_bytes\": 2,\n  \"seed\": %llu,\n  \"val_fraction\": %.15g,\n",
               (unsigned long long)o.seed, o.valFraction);
  std::fprintf(f, "  \"train\": {\"file\": \"train.bin\", \"tokens\": %llu, \"documents\": %llu},\n",
               (unsigned long long)s.trainTokens, (unsigned long long)s.trainDocs);
  std::fprintf(f, "  \"val\": {\"file\": \"val.bin\", \"tokens\": %llu, \"documents\": %llu},\n",
               (unsigned long long)s.valTokens, (unsigned long long)s.valDocs);
  std::fprintf(f, "  \"inputs\": [");
  for (size_t i = 0; i < s.files.size(); ++i)
    std::fprintf(f, "%s%s", i ? ", " : "", json::quote(s.files[i]).c_str());
  std::fprintf(f, "]\n}\n");
  if (std::fclose(f) != 0) fail("cannot write '%s'", path.c_str());
}

}  // namespace

DatasetBuildStats buildDataset(const DatasetBuildOptions &o) {
  if (o.inputs.empty()) fail("data build: no --input given");
  if (o.outDir.empty()) fail("data build: no --out directory given");
  if (!(o.valFraction >= 0.0 && o.valFraction < 1.0))
    fail("data build: --val-fraction %g is outside [0, 1)", o.valFraction);
  DatasetBuildStats stats;
  stats.files = collectInputFiles(o.inputs, &stats.skipped);
  Split train, val;
  uint64_t docIndex = 0;
  for (const std::string &file : stats.files) {
    std::string text = readTextFile(file);
    size_t bad = firstBinaryByte(text);
    if (bad != std::string::npos)
      fail("input '%s' is not UTF-8 text (byte %zu); the byte tokenizer takes text files only",
           file.c_str(), bad);
    for (const std::string &doc : splitDocuments(text, o.format)) {
      (isValidationDocument(o.seed, docIndex, o.valFraction) ? val : train).add(doc);
      ++docIndex;
    }
  }
  if (docIndex == 0) fail("data build: the inputs contain no documents (all empty?)");
  if (train.tokens.empty())
    fail("data build: every one of the %llu documents went to validation; lower --val-fraction",
         (unsigned long long)docIndex);
  stats.trainDocs = train.docStarts.size();
  stats.trainTokens = train.tokens.size();
  stats.valDocs = val.docStarts.size();
  stats.valTokens = val.tokens.size();
  makeDir(o.outDir);
  std::string dir = o.outDir.back() == '/' ? o.outDir : o.outDir + "/";
  writeShard(dir + "train.bin", train.tokens, train.docStarts, 2);
  writeShard(dir + "val.bin", val.tokens, val.docStarts, 2);
  writeMeta(dir + "meta.json", o, stats);
  return stats;
}

}  // namespace lmrt
