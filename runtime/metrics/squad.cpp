#include "runtime/metrics/squad.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/tensor.h"

namespace lmrt::metrics {
namespace {

bool isAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Python's string.punctuation. */
bool isPunctuation(char c) { return c != 0 && std::strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != nullptr; }

/* A \w character for the article rule: ASCII letters, digits, '_' (already
   removed as punctuation) and every byte of a non-ASCII character. */
bool isWordByte(char c) {
  unsigned char u = c;
  return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || c == '_';
}

/* Appends the lowercase of the UTF-8 character at text[i] and advances i. The
   two-byte capitals with a one-to-one lowercase a fixed distance away: Latin-1
   (U+00C0–U+00DE but ×), Greek (U+0391–U+03AB but U+03A2), Cyrillic (U+0400–U+042F). */
void appendLower(const std::string &text, size_t &i, std::string &out) {
  unsigned char c = text[i];
  if (c < 0x80) {
    out += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
    ++i;
    return;
  }
  if ((c & 0xE0) == 0xC0 && i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
    unsigned cp = ((c & 0x1F) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F);
    unsigned lower = cp;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) lower = cp + 0x20;
    else if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) lower = cp + 0x20;
    else if (cp >= 0x410 && cp <= 0x42F) lower = cp + 0x20;
    else if (cp >= 0x400 && cp <= 0x40F) lower = cp + 0x50;
    out += char(0xC0 | (lower >> 6));
    out += char(0x80 | (lower & 0x3F));
    i += 2;
    return;
  }
  out += char(c);  // a byte of a longer (or malformed) sequence, kept as it is
  ++i;
}

std::vector<std::string> tokens(const std::string &normalized) {
  std::vector<std::string> out;
  for (size_t i = 0; i < normalized.size();) {
    size_t j = normalized.find(' ', i);
    if (j == std::string::npos) j = normalized.size();
    if (j > i) out.push_back(normalized.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

template <typename Metric>
double best(const std::string &prediction, const std::vector<std::string> &answers, Metric metric) {
  if (answers.empty()) fail("a SQuAD prediction scored against no gold answers");
  double top = 0;
  for (const std::string &gold : answers) top = std::max(top, metric(prediction, gold));
  return top;
}

}  // namespace

std::string normalizeAnswer(const std::string &text) {
  // The official order: lower, remove punctuation, remove articles, fix whitespace.
  std::string lowered;
  for (size_t i = 0; i < text.size();) appendLower(text, i, lowered);
  std::string unpunctuated;
  for (char c : lowered)
    if (!isPunctuation(c)) unpunctuated += c;
  std::string noArticles;
  for (size_t i = 0; i < unpunctuated.size();) {
    if (!isWordByte(unpunctuated[i])) {
      noArticles += unpunctuated[i++];
      continue;
    }
    size_t j = i;
    while (j < unpunctuated.size() && isWordByte(unpunctuated[j])) ++j;
    std::string word = unpunctuated.substr(i, j - i);
    noArticles += word == "a" || word == "an" || word == "the" ? std::string(" ") : word;
    i = j;
  }
  std::string out;
  for (size_t i = 0; i < noArticles.size();) {
    if (isAsciiSpace(noArticles[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < noArticles.size() && !isAsciiSpace(noArticles[j])) ++j;
    if (!out.empty()) out += ' ';
    out += noArticles.substr(i, j - i);
    i = j;
  }
  return out;
}

double exactMatch(const std::string &prediction, const std::string &gold) {
  return normalizeAnswer(prediction) == normalizeAnswer(gold) ? 1.0 : 0.0;
}

double tokenF1(const std::string &prediction, const std::string &gold) {
  std::vector<std::string> pred = tokens(normalizeAnswer(prediction)), truth = tokens(normalizeAnswer(gold));
  std::map<std::string, long> goldCounts;
  for (const std::string &t : truth) ++goldCounts[t];
  long common = 0;
  for (const std::string &t : pred) {
    auto it = goldCounts.find(t);
    if (it != goldCounts.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  double precision = double(common) / pred.size(), recall = double(common) / truth.size();
  return 2 * precision * recall / (precision + recall);
}

double tokenF1V2(const std::string &prediction, const std::string &gold) {
  const bool predEmpty = tokens(normalizeAnswer(prediction)).empty(), goldEmpty = tokens(normalizeAnswer(gold)).empty();
  if (predEmpty || goldEmpty) return predEmpty == goldEmpty ? 1.0 : 0.0;
  return tokenF1(prediction, gold);
}

std::vector<std::string> goldAnswersV2(const std::vector<std::string> &answers) {
  std::vector<std::string> kept;
  for (const std::string &a : answers)
    if (!normalizeAnswer(a).empty()) kept.push_back(a);
  if (kept.empty()) kept.push_back("");
  return kept;
}

double bestExactMatch(const std::string &prediction, const std::vector<std::string> &answers) {
  return best(prediction, answers, exactMatch);
}

double bestTokenF1(const std::string &prediction, const std::vector<std::string> &answers) {
  return best(prediction, answers, tokenF1);
}

}  // namespace lmrt::metrics
