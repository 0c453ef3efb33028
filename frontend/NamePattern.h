//===- NamePattern.h - Parameter path patterns of `export` rules -*- C++ -*-===//
//
// The left side of an export rule, "layer.{i}.attn.wq", names every parameter
// path it matches: literal text, with each `{name}` matching a decimal index
// (one or more digits). The right side uses the same `{name}`s, which take the
// captured digits. Plain C++ (part of LMCFrontendSyntax) so it is unit-tested
// on its own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::lm {

struct NamePattern {
  /// Literal text around the holes: literals.size() == holes.size() + 1.
  std::vector<std::string> literals;
  std::vector<std::string> holes;
};

/// Parses `text`; on a malformed `{...}` (unclosed, empty, not an identifier,
/// two holes side by side) returns nullopt and sets `error`.
std::optional<NamePattern> parseNamePattern(const std::string &text, std::string &error);

/// True when `name` matches `p` whole; fills `captures` (hole -> digits). A hole
/// used twice must capture the same digits both times.
bool matchNamePattern(const NamePattern &p, const std::string &name,
                      std::map<std::string, std::string> &captures);

/// `p` with every hole replaced by its capture; nullopt (and `error` naming the
/// hole) when a hole has no capture.
std::optional<std::string> substituteNamePattern(const NamePattern &p,
                                                 const std::map<std::string, std::string> &captures,
                                                 std::string &error);

} // namespace mlir::lm
