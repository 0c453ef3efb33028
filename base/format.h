/* Implements: number formatting shared by messages and reports: `%g`, the
   shortest readable form of a setting, a norm or a loss scale in an error. */
#pragma once
#include <cstdio>
#include <string>

namespace lmrt {

inline std::string formatG(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace lmrt
