/* Implements: text files -> train/val byte shards + meta.json (see dataset_builder.h). */
#include "runtime/data/dataset_builder.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

#include "runtime/data/counter_rng.h"
#include "runtime/data/dataset_meta.h"
#include "runtime/data/shard.h"
#include "runtime/data/tokenizer.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/paths.h"
#include "base/tensor.h"

namespace lmrt {

bool isValidationDocument(uint64_t seed, uint64_t index, double valFraction) {
  return uniform01(counterRandom(seed, RngStream::Split, index)) < valFraction;
}

namespace {

struct Split {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> docStarts;
  uint64_t bytes = 0;
  void add(const std::vector<int32_t> &ids, uint64_t textBytes) {
    docStarts.push_back(tokens.size());
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    bytes += textBytes;
  }
};

void makeDir(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) return;
  if (errno != EEXIST) fail("cannot create output directory '%s': %s", dir.c_str(), std::strerror(errno));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("output '%s' exists and is not a directory", dir.c_str());
}

void writeMeta(const std::string &path, const DatasetBuildOptions &o, const DatasetBuildStats &s,
               uint32_t tokenBytes) {
  bool sp = s.tokenizer != "bytes";
  std::string j = "{\n  \"tokenizer\": " + json::quote(s.tokenizer) + ",\n";
  if (sp) j += "  \"tokenizer_model\": \"tokenizer.model\",\n";
  j += "  \"vocab\": " + std::to_string(s.vocab) + ",\n";
  if (sp) {
    j += "  \"special_tokens\": {";
    for (size_t i = 0; i < s.specialTokens.size(); ++i)
      j += (i ? ", " : "") + json::quote(s.specialTokens[i].first) + ": " +
           std::to_string(s.specialTokens[i].second);
    j += "},\n";
    bool eos = false;
    for (const auto &t : s.specialTokens) eos |= t.first == "eos";
    j += std::string("  \"document_end\": ") + (eos ? "\"eos\"" : "null") + ",\n";
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "  \"token_bytes\": %u,\n  \"seed\": %llu,\n  \"val_fraction\": %.15g,\n",
                tokenBytes, (unsigned long long)o.seed, o.valFraction);
  j += buf;
  auto split = [&](const char *name, uint64_t tokens, uint64_t docs, uint64_t bytes) {
    std::snprintf(buf, sizeof buf,
                  "  \"%s\": {\"file\": \"%s.bin\", \"tokens\": %llu, \"documents\": %llu, "
                  "\"bytes\": %llu},\n", name, name, (unsigned long long)tokens,
                  (unsigned long long)docs, (unsigned long long)bytes);
    j += buf;
  };
  split("train", s.trainTokens, s.trainDocs, s.trainBytes);
  split("val", s.valTokens, s.valDocs, s.valBytes);
  j += "  \"inputs\": [";
  for (size_t i = 0; i < s.files.size(); ++i) j += (i ? ", " : "") + json::quote(s.files[i]);
  j += "]\n}\n";
  writeFileAtomic(path, "dataset metadata", [&](std::ostream &f) { f << j; });
}


}  // namespace

void checkDataBuildOutputs(const std::string &outDir, const DataBuildShards &shards, const std::string &tokenizer,
                           const std::vector<NamedPath> &inputs, bool overwrite, FILE *log) {
  std::string dir = outDir.back() == '/' ? outDir : outDir + "/";
  const std::string magic(shards.magic, 8);
  auto isShard = [&](const std::string &path) { return fileStartsWith(path, magic); };
  auto isMeta = [&](const std::string &) {
    try {
      return readDatasetMeta(outDir).has_value();
    } catch (const Error &) {
      return false;
    }
  };
  std::vector<OutputSpec> outputs = {
      {"--out", outDir, true},
      {"--out", dir + shards.train, false, IfExists::ReplaceEarlier, isShard, shards.what},
      {"--out", dir + shards.val, false, IfExists::ReplaceEarlier, isShard, shards.what},
      {"--out", dir + "meta.json", false, IfExists::ReplaceEarlier, isMeta, "the meta.json of a data build"}};
  if (!tokenizer.empty())
    outputs.push_back({"--out", dir + "tokenizer.model", false, IfExists::ReplaceEarlier, isSentencePieceModel,
                       "a SentencePiece model"});
  std::vector<NamedPath> all = inputs;
  if (!tokenizer.empty()) all.push_back({"--tokenizer", tokenizer});
  checkOutputs(outputs, all, overwrite, log);
}

DatasetBuildStats buildDataset(const DatasetBuildOptions &o) {
  if (o.inputs.empty()) fail("data build: no --input given");
  if (o.outDir.empty()) fail("data build: no --out directory given");
  if (!(o.valFraction >= 0.0 && o.valFraction < 1.0))
    fail("data build: --val-fraction %g is outside [0, 1)", o.valFraction);
  DatasetBuildStats stats;
  stats.files = collectInputFiles(o.inputs, &stats.skipped);
  std::vector<NamedPath> inputs;
  for (const std::string &f : stats.files) inputs.push_back({"--input", f});
  checkDataBuildOutputs(o.outDir, {kShardMagic, "train.bin", "val.bin", "a token shard (LMCSHARD)"}, o.tokenizer,
                        inputs, o.overwrite, o.log);
  std::unique_ptr<Tokenizer> tok =
      o.tokenizer.empty() ? byteTokenizer() : loadSentencePiece(o.tokenizer);
  stats.tokenizer = tok->kind();
  stats.vocab = tok->vocab();
  stats.specialTokens = tok->specialTokens();
  const int32_t eos = tok->specialId("eos");
  const bool bytes = o.tokenizer.empty();
  Split train, val;
  uint64_t docIndex = 0;
  for (const std::string &file : stats.files) {
    std::string text = readTextFile(file);
    size_t bad = firstBinaryByte(text);
    if (bad != std::string::npos)
      fail("input '%s' is not UTF-8 text (byte %zu); lmrt data build takes text files only",
           file.c_str(), bad);
    for (const std::string &doc : splitDocuments(text, o.format)) {
      std::vector<int32_t> ids = tok->encode(doc);
      if (bytes || tok->decode(ids) == doc) ++stats.roundTripExact;
      if (eos >= 0) ids.push_back(eos);
      (isValidationDocument(o.seed, docIndex, o.valFraction) ? val : train).add(ids, doc.size());
      ++docIndex;
    }
  }
  if (docIndex == 0) fail("data build: the inputs contain no documents (all empty?)");
  if (train.tokens.empty())
    fail("data build: every one of the %llu documents went to validation; lower --val-fraction",
         (unsigned long long)docIndex);
  if (val.docStarts.empty() && o.valFraction > 0)
    fail("data build: none of the %llu documents went to validation at --val-fraction %g, so a run would "
         "have no validation data; give more documents or a larger --val-fraction, or pass --val-fraction 0 "
         "to build without a validation split", (unsigned long long)docIndex, o.valFraction);
  stats.trainDocs = train.docStarts.size();
  stats.trainTokens = train.tokens.size();
  stats.valDocs = val.docStarts.size();
  stats.valTokens = val.tokens.size();
  stats.trainBytes = train.bytes;
  stats.valBytes = val.bytes;
  makeDir(o.outDir);
  std::string dir = o.outDir.back() == '/' ? o.outDir : o.outDir + "/";
  const uint32_t tokenBytes = stats.vocab <= 65536 ? 2 : 4;
  writeShard(dir + "train.bin", train.tokens, train.docStarts, tokenBytes);
  writeShard(dir + "val.bin", val.tokens, val.docStarts, tokenBytes);
  if (!bytes) {
    // The data directory carries its tokenizer, so sample and eval need only DIR.
    std::string model = readWholeFile(o.tokenizer, "tokenizer model");
    writeFileAtomic(dir + "tokenizer.model", "tokenizer model", [&](std::ostream &f) { f << model; });
  }
  writeMeta(dir + "meta.json", o, stats, tokenBytes);
  return stats;
}

}  // namespace lmrt
