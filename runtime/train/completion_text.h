/* Implements: the text of one `lmrt sample` completion as it grows, cut at the first
   stop string (--stop; the stop string itself is not part of the completion), and
   shown as it grows without ever showing bytes a later stop string would take back:
   the last (longest stop string - 1) bytes wait until the next token or the end. */
#pragma once
#include <string>
#include <vector>

namespace lmrt {

class CompletionText {
public:
  explicit CompletionText(std::vector<std::string> stops);

  /* The completion's whole text so far (it may change before its end: a tokenizer can
     decode the last bytes differently once more arrive). Returns false once the text
     holds a stop string; the text then ends before the first one. */
  bool update(const std::string &text);

  /* The bytes that may be shown now and were not yet: all of them when `final` (or
     once stopped). Nothing while the text no longer extends what was shown. */
  std::string take(bool final);

  const std::string &text() const { return text_; }
  bool stopped() const { return stopped_; }

private:
  std::vector<std::string> stops_;
  size_t holdBack_ = 0;
  std::string text_, shown_;
  bool stopped_ = false;
};

/* `s` with every byte sequence that is not UTF-8 replaced by U+FFFD, for JSON output. */
std::string validUtf8(const std::string &s);

}  // namespace lmrt
