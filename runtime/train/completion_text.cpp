/* Implements: completion_text.h. */
#include "runtime/train/completion_text.h"

#include <algorithm>

#include "base/tensor.h"

namespace lmrt {

CompletionText::CompletionText(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string &s : stops_) {
    if (s.empty()) fail("--stop needs a non-empty string");
    holdBack_ = std::max(holdBack_, s.size() - 1);
  }
}

bool CompletionText::update(const std::string &text) {
  if (stopped_) return false;
  text_ = text;
  size_t first = std::string::npos;
  for (const std::string &s : stops_) first = std::min(first, text_.find(s));
  if (first == std::string::npos) return true;
  text_.resize(first);
  stopped_ = true;
  return false;
}

std::string CompletionText::take(bool final) {
  const size_t limit = final || stopped_ ? text_.size() : text_.size() - std::min(text_.size(), holdBack_);
  if (limit <= shown_.size() || text_.compare(0, shown_.size(), shown_) != 0) return "";
  std::string out = text_.substr(shown_.size(), limit - shown_.size());
  shown_ = text_.substr(0, limit);
  return out;
}

std::string validUtf8(const std::string &s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = (unsigned char)s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = ((unsigned char)s[i + k] >> 6) == 0x2;
    if (ok && n == 2) ok = c >= 0xC2;  // no overlong 2-byte forms
    if (ok && n == 3) {
      const unsigned char c1 = (unsigned char)s[i + 1];
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && n == 4) {
      const unsigned char c1 = (unsigned char)s[i + 1];
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90) && c <= 0xF4;
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace lmrt
