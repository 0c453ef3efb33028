/* Implements: reading meta.json (see dataset_meta.h). */
#include "runtime/data/dataset_meta.h"

#include <sys/stat.h>

#include "runtime/data/tokenizer.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

const json::Value &member(const json::Value &obj, const std::string &key, json::Value::Kind kind,
                          const std::string &where, const std::string &path) {
  const json::Value *v = obj.find(key);
  if (!v) fail("%s: %s has no \"%s\"", path.c_str(), where.c_str(), key.c_str());
  if (v->kind != kind)
    fail("%s: \"%s\" in %s is %s, expected %s", path.c_str(), key.c_str(), where.c_str(),
         json::kindName(v->kind), json::kindName(kind));
  return *v;
}

uint64_t count(const json::Value &obj, const std::string &key, const std::string &where,
               const std::string &path) {
  int64_t v;
  if (!member(obj, key, json::Value::Number, where, path).asInt(v) || v < 0)
    fail("%s: \"%s\" in %s is not a count", path.c_str(), key.c_str(), where.c_str());
  return (uint64_t)v;
}

DatasetSplitMeta split(const json::Value &root, const char *name, const std::string &path) {
  const json::Value &s = member(root, name, json::Value::Object, "the top level", path);
  std::string where = std::string("\"") + name + "\"";
  DatasetSplitMeta m;
  m.file = member(s, "file", json::Value::String, where, path).text;
  m.tokens = count(s, "tokens", where, path);
  m.documents = count(s, "documents", where, path);
  if (s.find("bytes")) m.bytes = count(s, "bytes", where, path);
  return m;
}

}  // namespace

std::optional<DatasetMeta> readDatasetMeta(const std::string &dirIn) {
  std::string dir = dirIn.empty() || dirIn.back() == '/' ? dirIn : dirIn + "/";
  DatasetMeta m;
  m.path = dir + "meta.json";
  struct stat st;
  if (::stat(m.path.c_str(), &st) != 0) return std::nullopt;
  json::Value root;
  try {
    root = json::parse(readWholeFile(m.path, "dataset metadata"));
  } catch (const Error &e) {
    fail("%s: %s", m.path.c_str(), e.what());
  }
  if (root.kind != json::Value::Object) fail("%s is not a JSON object", m.path.c_str());
  m.tokenizer = member(root, "tokenizer", json::Value::String, "the top level", m.path).text;
  int64_t vocab;
  if (!member(root, "vocab", json::Value::Number, "the top level", m.path).asInt(vocab) || vocab < 1)
    fail("%s: \"vocab\" is not a positive integer", m.path.c_str());
  m.vocab = vocab;
  if (root.find("token_bytes")) {
    int64_t tb;
    if (!root.find("token_bytes")->asInt(tb) || (tb != 2 && tb != 4))
      fail("%s: \"token_bytes\" is not 2 or 4", m.path.c_str());
    m.tokenBytes = tb;
  }
  if (m.tokenizer == "sentencepiece") {
    std::string model =
        member(root, "tokenizer_model", json::Value::String, "the top level", m.path).text;
    if (model.empty() || model.find('/') != std::string::npos)
      fail("%s: \"tokenizer_model\" must name a file in the data directory (got '%s')",
           m.path.c_str(), model.c_str());
    m.tokenizerModel = dir + model;
    if (const json::Value *sp = root.find("special_tokens")) {
      if (sp->kind != json::Value::Object)
        fail("%s: \"special_tokens\" is not an object", m.path.c_str());
      for (const auto &[name, v] : sp->members) {
        int64_t id;
        if (v.kind != json::Value::Number || !v.asInt(id) || id < 0 || id >= m.vocab)
          fail("%s: special token \"%s\" is not an id below the vocabulary (%lld)",
               m.path.c_str(), name.c_str(), (long long)m.vocab);
        m.specialTokens.push_back({name, id});
      }
    }
  } else if (m.tokenizer != "bytes") {
    fail("%s: unknown tokenizer \"%s\" (expected \"bytes\" or \"sentencepiece\")", m.path.c_str(),
         m.tokenizer.c_str());
  }
  m.train = split(root, "train", m.path);
  m.val = split(root, "val", m.path);
  return m;
}

std::unique_ptr<Tokenizer> DatasetMeta::loadTokenizer() const {
  if (tokenizer == "bytes") return byteTokenizer();
  std::unique_ptr<Tokenizer> t = loadSentencePiece(tokenizerModel);
  if (t->vocab() != vocab)
    fail("%s has a vocabulary of %lld, but %s records %lld", tokenizerModel.c_str(),
         (long long)t->vocab(), path.c_str(), (long long)vocab);
  return t;
}

std::optional<double> DatasetMeta::bytesPerToken(const DatasetSplitMeta &s) const {
  if (tokenizer == "bytes") return 1.0;
  if (s.bytes == 0 || s.tokens == 0) return std::nullopt;
  return double(s.bytes) / double(s.tokens);
}

}  // namespace lmrt
