/* Implements: word boundaries in token ids (see words.h). */
#include "runtime/data/words.h"

#include "runtime/data/tokenizer.h"
#include "base/tensor.h"

namespace lmrt {

namespace {

const std::string kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

/* The length of the whitespace (or U+2581) character at `at`, or 0. */
size_t spaceAt(const std::string &s, size_t at) {
  if (s.compare(at, kSpaceMark.size(), kSpaceMark) == 0) return kSpaceMark.size();
  char c = s[at];
  return c == ' ' || (c >= '\t' && c <= '\r') ? 1 : 0;
}

}  // namespace

TokenClass classOfPiece(const std::string &piece) {
  size_t at = 0;
  while (at < piece.size()) {
    size_t n = spaceAt(piece, at);
    if (n == 0) break;
    at += n;
  }
  if (at == piece.size()) return TokenClass::Space;  // empty or all whitespace
  return at > 0 ? TokenClass::WordStart : TokenClass::Inner;
}

std::vector<TokenClass> tokenClasses(const Tokenizer &tok) {
  std::vector<TokenClass> classes((size_t)tok.vocab());
  bool boundaries = false;
  for (int64_t id = 0; id < tok.vocab(); ++id) {
    classes[id] = classOfPiece(tok.piece((int32_t)id));
    boundaries |= classes[id] != TokenClass::Inner;
  }
  if (!boundaries)
    fail("the %s tokenizer gives no word boundaries (none of its %lld pieces is whitespace or begins "
         "with whitespace or U+2581); compile with span_mlm(unit = \"token\")",
         tok.kind(), (long long)tok.vocab());
  return classes;
}

std::vector<Word> findWords(const int32_t *text, int64_t n, int64_t before, int64_t after,
                            const std::vector<TokenClass> &classes) {
  auto classOf = [&](int64_t id) {
    return id < 0 || id >= (int64_t)classes.size() ? TokenClass::Space : classes[id];
  };
  std::vector<Word> words;
  TokenClass prev = classOf(before);
  for (int64_t i = 0; i < n;) {
    TokenClass c = classOf(text[i]);
    bool starts = c == TokenClass::WordStart || (c == TokenClass::Inner && prev == TokenClass::Space);
    if (!starts) {  // a separator, or the rest of a word begun before the row
      prev = c;
      ++i;
      continue;
    }
    int64_t end = i + 1;
    while (end < n && classOf(text[end]) == TokenClass::Inner) ++end;
    if (end < n || classOf(after) != TokenClass::Inner) words.push_back({i, end});
    prev = TokenClass::Inner;
    i = end;
  }
  return words;
}

}  // namespace lmrt
