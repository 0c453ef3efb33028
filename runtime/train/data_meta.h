/* Implements: the check of a data directory's meta.json (written by `lmrt data
   build`) against its shards and the plan, before step 1: a directory whose
   meta.json and shards come from two different builds, or whose tokenizer has a
   larger vocabulary than the plan, is refused. meta.json is optional (shards made
   by other tools need none); the fields checked are optional too, and any others
   are ignored. */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

class CausalBatcher;

void checkDataMeta(const std::string &dataDir, const CausalBatcher &data, int64_t planVocab);

}  // namespace lmrt
