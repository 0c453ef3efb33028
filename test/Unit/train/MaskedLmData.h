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
#include "base/tensor.h"

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

/* `words` pseudo-random words of 1 to 8 lowercase letters (about English's
   mean), one in 8 followed by punctuation, separated by one space, one in 16
   times by a newline and one in 32 by two spaces; a function of the seed. */
inline std::string wordText(uint32_t words, uint32_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&](uint32_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(x >> 33) % n;
  };
  std::string text;
  for (uint32_t w = 0; w < words; ++w) {
    if (w) text += next(16) == 0 ? "\n" : next(32) == 0 ? "  " : " ";
    for (uint32_t len = 1 + next(8), i = 0; i < len; ++i) text += (char)('a' + next(26));
    if (next(8) == 0) text += ".,;!?"[next(5)];
  }
  return text;
}

/* DIR/data with train.bin and val.bin of wordText (trainWords and valWords
   words), as byte shards. */
inline std::string makeWordData(const TempDir &d, uint32_t trainWords, uint32_t valWords = 200) {
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  auto bytes = [](const std::string &s) { return std::vector<uint32_t>((const unsigned char *)s.data(),
                                                                       (const unsigned char *)s.data() + s.size()); };
  lmrt::writeShard(dir + "/train.bin", bytes(wordText(trainWords, 1)), {0});
  lmrt::writeShard(dir + "/val.bin", bytes(wordText(valWords, 2)), {0});
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
