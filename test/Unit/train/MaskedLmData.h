/* Implements: the fixtures the masked-LM transforms' tests share (MlmTest,
   SpanMlmTest): data directories of byte shards and the message of an Error. */
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "TempDir.h"
#include "runtime/data/shard.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt_test {

/* DIR/data with train.bin: n pseudo-random bytes (so that "B follows A" is
   checkable), and val.bin: valN bytes of another sequence. */
inline std::string makeData(const TempDir &d, uint32_t n, uint32_t valN = 400) {
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t(n), v(valN);
  for (uint32_t i = 0; i < n; ++i) t[i] = (i * 2654435761u >> 7) % 256;
  for (uint32_t i = 0; i < valN; ++i) v[i] = (i * 7) % 256;
  lmrt::writeShard(dir + "/train.bin", t, {0});
  lmrt::writeShard(dir + "/val.bin", v, {0});
  return dir;
}

/* The message of the lmrt::Error `f` throws, or "" if it throws none. */
inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const lmrt::Error &e) {
    return e.what();
  }
  return "";
}

}  // namespace lmrt_test
