/* Implements: base/env.h. */
#include "base/env.h"

#include <cstdlib>

#include "base/tensor.h"

namespace lmrt {

bool envSwitch(const char *name, bool byDefault) {
  const std::string v = envChoice(name, {"0", "1"});
  return v.empty() ? byDefault : v == "1";
}

std::string envChoice(const char *name, std::initializer_list<const char *> allowed) {
  const char *v = std::getenv(name);
  if (!v || !*v) return "";
  std::string list;
  for (const char *a : allowed) {
    if (std::string(v) == a) return v;
    list += (list.empty() ? "'" : ", '") + std::string(a) + "'";
  }
  fail("%s='%s': it takes %s (or unset)", name, v, list.c_str());
}

}  // namespace lmrt
