//===- NamePattern.cpp - Parameter path patterns of `export` rules --------===//
#include "frontend/NamePattern.h"

#include <cctype>

namespace mlir::lm {

std::optional<NamePattern> parseNamePattern(const std::string &text, std::string &error) {
  NamePattern p;
  p.literals.emplace_back();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}') {
      error = "unmatched '}' at offset " + std::to_string(i);
      return std::nullopt;
    }
    if (c != '{') {
      p.literals.back() += c;
      continue;
    }
    size_t close = text.find('}', i);
    if (close == std::string::npos) {
      error = "'{' at offset " + std::to_string(i) + " is never closed";
      return std::nullopt;
    }
    std::string hole = text.substr(i + 1, close - i - 1);
    bool ident = !hole.empty() && !std::isdigit((unsigned char)hole[0]);
    for (char h : hole)
      ident = ident && (std::isalnum((unsigned char)h) || h == '_');
    if (!ident) {
      error = "'{" + hole + "}' is not a placeholder name (e.g. {i})";
      return std::nullopt;
    }
    // Two holes with nothing between them would split digits arbitrarily.
    if (!p.holes.empty() && p.literals.back().empty()) {
      error = "placeholders '{" + p.holes.back() + "}' and '{" + hole + "}' need text between them";
      return std::nullopt;
    }
    p.holes.push_back(hole);
    p.literals.emplace_back();
    i = close;
  }
  return p;
}

namespace {
bool matchFrom(const NamePattern &p, size_t k, const std::string &name, size_t at,
               std::map<std::string, std::string> &captures) {
  const std::string &lit = p.literals[k];
  if (name.compare(at, lit.size(), lit) != 0)
    return false;
  at += lit.size();
  if (k == p.holes.size())
    return at == name.size();
  // Try every run of digits, longest first (backtracking keeps this exact).
  size_t end = at;
  while (end < name.size() && std::isdigit((unsigned char)name[end]))
    ++end;
  for (size_t e = end; e > at; --e) {
    std::string digits = name.substr(at, e - at);
    auto it = captures.find(p.holes[k]);
    if (it != captures.end() && it->second != digits)
      continue;
    std::map<std::string, std::string> saved = captures;
    captures[p.holes[k]] = digits;
    if (matchFrom(p, k + 1, name, e, captures))
      return true;
    captures = std::move(saved);
  }
  return false;
}
} // namespace

bool matchNamePattern(const NamePattern &p, const std::string &name,
                      std::map<std::string, std::string> &captures) {
  captures.clear();
  return matchFrom(p, 0, name, 0, captures);
}

std::optional<std::string> substituteNamePattern(const NamePattern &p,
                                                 const std::map<std::string, std::string> &captures,
                                                 std::string &error) {
  std::string out = p.literals[0];
  for (size_t k = 0; k < p.holes.size(); ++k) {
    auto it = captures.find(p.holes[k]);
    if (it == captures.end()) {
      error = "'{" + p.holes[k] + "}' does not appear in the parameter path";
      return std::nullopt;
    }
    out += it->second + p.literals[k + 1];
  }
  return out;
}

} // namespace mlir::lm
