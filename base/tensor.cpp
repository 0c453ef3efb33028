/* Implements: the string forms of shapes and tensor types, and lmrt::fail, the
   printf-style way every runtime error is raised. */
#include "base/tensor.h"

#include <cstdarg>
#include <cstdio>

namespace lmrt {

std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string msg(n > 0 ? (size_t)n : 0, '\0');
  if (n > 0) std::vsnprintf(msg.data(), msg.size() + 1, fmt, ap2);
  va_end(ap2);
  throw Error(msg);
}

}  // namespace lmrt
