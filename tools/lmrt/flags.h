/* Implements: strict parsing of lmrt's numeric flags. CLI11 alone clamps a seed of
   10^23 to 2^64 - 1 and wraps "-1" for unsigned flags; here a value is decimal
   digits only (a leading '-' where negatives make sense), fits its type, and lies
   within the flag's bounds, or the run stops before doing anything with a message
   naming the flag and its range. Real flags are decimal numbers, finite, within
   bounds. Every numeric flag of every command is read by one of these (through
   the add*Option helpers, or from a string in the command's callback). */
#pragma once
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
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

inline double parseRealFlag(const char *flag, const std::string &text, double lo, double hi) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  // strtod also reads "nan", "inf" and hex floats: a value must be finite and in range.
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi)
    fail("%s '%s' is not a number in [%g, %g]", flag, text.c_str(), lo, hi);
  return v;
}

/* An integer option read by parseIntFlag into `target` when given. */
template <typename T>
CLI::Option *addIntOption(CLI::App *cmd, const std::string &flag, T &target, int64_t lo, int64_t hi,
                          const std::string &description) {
  return cmd
      ->add_option(
          flag,
          [&target, flag, lo, hi](const CLI::results_t &r) {
            target = (T)parseIntFlag(flag.c_str(), r.back(), lo, hi);
            return true;
          },
          description)
      ->type_name("INT");
}

/* A 64-bit unsigned option (seeds) read by parseU64Flag. */
inline CLI::Option *addU64Option(CLI::App *cmd, const std::string &flag, uint64_t &target,
                                 const std::string &description) {
  return cmd
      ->add_option(
          flag,
          [&target, flag](const CLI::results_t &r) {
            target = parseU64Flag(flag.c_str(), r.back());
            return true;
          },
          description)
      ->type_name("UINT64");
}

/* A real option read by parseRealFlag. */
inline CLI::Option *addRealOption(CLI::App *cmd, const std::string &flag, double &target, double lo, double hi,
                                  const std::string &description) {
  return cmd
      ->add_option(
          flag,
          [&target, flag, lo, hi](const CLI::results_t &r) {
            target = parseRealFlag(flag.c_str(), r.back(), lo, hi);
            return true;
          },
          description)
      ->type_name("FLOAT");
}

}  // namespace lmrt
