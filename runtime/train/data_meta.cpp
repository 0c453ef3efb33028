/* Implements: checkDataMeta (see data_meta.h). */
#include "runtime/train/data_meta.h"

#include <sys/stat.h>

#include "runtime/data/batches.h"
#include "runtime/lmrt/file_io.h"
#include "runtime/lmrt/json.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt {

void checkDataMeta(const std::string &dataDir, const CausalBatcher &data, int64_t planVocab) {
  std::string path = (dataDir.empty() || dataDir.back() == '/' ? dataDir : dataDir + "/") + "meta.json";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  json::Value root;
  try {
    root = json::parse(readWholeFile(path, "data metadata"));
  } catch (const Error &e) {
    fail("data '%s': %s", path.c_str(), e.what());
  }
  if (root.kind != json::Value::Object) fail("data '%s' is not a JSON object", path.c_str());
  auto integer = [&](const json::Value &obj, const char *key, const std::string &where, int64_t &out) {
    const json::Value *v = obj.find(key);
    if (!v) return false;
    if (!v->asInt(out) || out < 0)
      fail("data '%s': %s%s is not a non-negative integer", path.c_str(), where.c_str(), key);
    return true;
  };
  int64_t v;
  if (integer(root, "vocab", "", v) && v > planVocab)
    fail("data '%s': the data was tokenized with a vocabulary of %lld, larger than the plan's %lld", path.c_str(),
         (long long)v, (long long)planVocab);
  if (integer(root, "token_bytes", "", v) && v != (int64_t)data.train().tokenBytes())
    fail("data '%s' says token_bytes %lld, train.bin has %u-byte tokens: meta.json and the shards come from "
         "different builds", path.c_str(), (long long)v, data.train().tokenBytes());
  const std::pair<const char *, const Shard *> shards[] = {{"train", &data.train()}, {"val", &data.val()}};
  for (const auto &[name, shard] : shards) {
    const json::Value *e = root.find(name);
    if (!e) continue;
    if (e->kind != json::Value::Object) fail("data '%s': '%s' is not an object", path.c_str(), name);
    std::string where = std::string(name) + ".";
    if (integer(*e, "tokens", where, v) && (uint64_t)v != shard->size())
      fail("data '%s' says %s has %lld tokens, %s has %llu: meta.json and the shards come from different builds",
           path.c_str(), name, (long long)v, shard->path().c_str(), (unsigned long long)shard->size());
    if (integer(*e, "documents", where, v) && (uint64_t)v != shard->documentCount())
      fail("data '%s' says %s has %lld documents, %s has %llu: meta.json and the shards come from different "
           "builds", path.c_str(), name, (long long)v, shard->path().c_str(),
           (unsigned long long)shard->documentCount());
  }
}

}  // namespace lmrt
