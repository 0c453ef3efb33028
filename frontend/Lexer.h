//===- Lexer.h - Tokens of the .lm language ---------------------*- C++ -*-===//
//
// Turns a `.lm` buffer into tokens. Newlines separate statements, except
// inside `( )` and `[ ]`, where they are skipped (as in Python), so long calls
// may wrap. `#` starts a comment that runs to the end of the line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/AST.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::lm {

/// Receives a syntax error: where and what. The parser stops after the first.
using SyntaxErrorHandler = std::function<void(ast::Loc, const std::string &)>;

struct Token {
  enum class Kind {
    Eof,
    Newline,   ///< also produced for `;`
    Ident,
    Int,
    Float,
    String,    ///< "text"; `text` holds the value with escapes resolved
    // Keywords.
    KwConfig, KwBlock, KwModel, KwObjective, KwTrain, KwParam, KwReturn, KwTrue, KwFalse,
    KwImport, KwPreset,
    // Punctuation.
    LParen, RParen, LBracket, RBracket, LBrace, RBrace,
    Comma, Colon, Equal, Arrow, Plus, Minus, Star, Slash, At,
    Less, Greater, LessEqual, GreaterEqual, EqualEqual, NotEqual, ///< comparisons
    Error, ///< an unexpected character; the lexer has reported it
  };
  Kind kind = Kind::Eof;
  ast::Loc loc;
  std::string text; ///< the spelling (identifiers, numbers, punctuation)
  int64_t intValue = 0;
  double floatValue = 0.0;
};

/// A human-readable name of a token kind for "expected X, found Y" messages.
std::string describe(const Token &tok);

/// Lexes the whole buffer. On an unexpected character or malformed number,
/// reports through `onError` and ends the token list with an Error token.
/// Every location carries `file` (the index of the source among the imported
/// files, 0 for the main one).
std::vector<Token> lex(std::string_view source, const SyntaxErrorHandler &onError, int file = 0);

} // namespace mlir::lm
