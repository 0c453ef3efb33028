/* Implements: init_map.h. */
#include "runtime/weights/init_map.h"

#include <algorithm>

#include "base/tensor.h"

namespace lmrt {

std::vector<InitRename> parseInitMap(const std::vector<std::string> &specs) {
  std::vector<InitRename> rules;
  for (const std::string &spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos)
      fail("--init-map '%s': expected FROM=TO (e.g. 'encoder.*=*', or 'mlm.*=' to leave tensors out)",
           spec.c_str());
    InitRename r{spec.substr(0, eq), {}};
    const std::string to = spec.substr(eq + 1);
    for (size_t start = 0; !to.empty() && start <= to.size();) {  // TO, or TO1,TO2,...
      const size_t comma = std::min(to.find(',', start), to.size());
      r.to.push_back(to.substr(start, comma - start));
      start = comma + 1;
    }
    const auto stars = [](const std::string &s) { return std::count(s.begin(), s.end(), '*'); };
    if (r.from.empty()) fail("--init-map '%s': FROM is empty; it names the tensors of the --init file", spec.c_str());
    if (stars(r.from) > 1) fail("--init-map '%s': at most one '*' on each side of '='", spec.c_str());
    for (const std::string &t : r.to) {
      if (t.empty()) fail("--init-map '%s': an empty name in the list TO1,TO2,...", spec.c_str());
      if (stars(t) > 1) fail("--init-map '%s': at most one '*' on each side of '='", spec.c_str());
      if (stars(t) == 1 && stars(r.from) == 0)
        fail("--init-map '%s': TO has a '*' but FROM has none to fill it", spec.c_str());
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

namespace {

/* The run of `name` that FROM's '*' matches (all of it without a '*'), or nullopt. */
std::optional<std::string> matchPattern(const std::string &pattern, const std::string &name) {
  const size_t star = pattern.find('*');
  if (star == std::string::npos) return pattern == name ? std::optional<std::string>("") : std::nullopt;
  const std::string prefix = pattern.substr(0, star), suffix = pattern.substr(star + 1);
  if (name.size() < prefix.size() + suffix.size()) return std::nullopt;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
  return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}

}  // namespace

std::vector<std::string> mapInitName(const std::vector<InitRename> &rules, const std::string &name) {
  for (const InitRename &r : rules) {
    std::optional<std::string> run = matchPattern(r.from, name);
    if (!run) continue;
    std::vector<std::string> names;
    for (const std::string &to : r.to) {
      const size_t star = to.find('*');
      names.push_back(star == std::string::npos ? to : to.substr(0, star) + *run + to.substr(star + 1));
    }
    return names;
  }
  return {name};
}

}  // namespace lmrt
