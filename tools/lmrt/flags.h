/* Implements: strict parsing of lmrt's integer flags. CLI11 alone clamps a seed of
   10^23 to 2^64 - 1 and wraps "-1" for unsigned flags; here a value is decimal
   digits only (a leading '-' where negatives make sense), fits its type, and lies
   within the flag's bounds, or the run stops before doing anything with a message
   naming the flag. */
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/tensor.h"

namespace lmrt {

inline bool allDigits(const std::string &t, size_t from) {
  if (t.size() <= from) return false;
  for (size_t i = from; i < t.size(); ++i)
    if (t[i] < '0' || t[i] > '9') return false;
  return true;
}

inline int64_t parseIntFlag(const char *flag, const std::string &text, int64_t lo, int64_t hi) {
  bool neg = !text.empty() && text[0] == '-';
  errno = 0;
  long long v = allDigits(text, neg ? 1 : 0) ? std::strtoll(text.c_str(), nullptr, 10) : 0;
  if (!allDigits(text, neg ? 1 : 0) || errno == ERANGE || v < lo || v > hi)
    fail("%s '%s' is not an integer in [%lld, %lld]", flag, text.c_str(), (long long)lo, (long long)hi);
  return v;
}

inline uint64_t parseU64Flag(const char *flag, const std::string &text) {
  errno = 0;
  unsigned long long v = allDigits(text, 0) ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!allDigits(text, 0) || errno == ERANGE)
    fail("%s '%s' is not an integer in [0, 18446744073709551615] (64 bits)", flag, text.c_str());
  return v;
}

}  // namespace lmrt
