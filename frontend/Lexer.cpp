//===- Lexer.cpp - Tokens of the .lm language -----------------------------===//
//
// A hand-written single-pass lexer. It tracks the nesting of `(`/`[` only to
// decide whether a newline ends a statement; matching brackets is the
// parser's job, which can name both ends in its message.
//
//===----------------------------------------------------------------------===//
#include "frontend/Lexer.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>

namespace mlir::lm {

std::string describe(const Token &tok) {
  switch (tok.kind) {
  case Token::Kind::Eof:
    return "end of file";
  case Token::Kind::Newline:
    return tok.text == ";" ? "';'" : "end of line";
  case Token::Kind::Ident:
    return "identifier '" + tok.text + "'";
  case Token::Kind::Int:
  case Token::Kind::Float:
    return "number " + tok.text;
  case Token::Kind::String:
    return "string \"" + tok.text + "\"";
  default:
    return "'" + tok.text + "'";
  }
}

namespace {

class Lexer {
public:
  Lexer(std::string_view src, const SyntaxErrorHandler &onError, int file)
      : src(src), onError(onError), file(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      Token tok = next();
      bool stop = tok.kind == Token::Kind::Eof || tok.kind == Token::Kind::Error;
      // Collapse runs of separators; the parser only needs one.
      if (tok.kind == Token::Kind::Newline && !out.empty() &&
          out.back().kind == Token::Kind::Newline)
        continue;
      out.push_back(std::move(tok));
      if (stop)
        return out;
    }
  }

private:
  std::string_view src;
  const SyntaxErrorHandler &onError;
  int file;
  size_t pos = 0;
  int line = 1, col = 1;
  int depth = 0; ///< open `(` and `[` (newlines inside them are skipped)

  char peek(size_t ahead = 0) const {
    return pos + ahead < src.size() ? src[pos + ahead] : '\0';
  }
  void advance() {
    if (src[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  }

  Token make(Token::Kind kind, ast::Loc loc, std::string text) {
    Token t;
    t.kind = kind;
    t.loc = loc;
    t.text = std::move(text);
    return t;
  }

  Token error(ast::Loc loc, const std::string &msg) {
    onError(loc, msg);
    return make(Token::Kind::Error, loc, "");
  }

  Token next() {
    // Skip blanks, comments and (inside brackets) newlines.
    while (pos < src.size()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos < src.size() && peek() != '\n')
          advance();
      } else if (c == '\n' && depth > 0) {
        advance();
      } else {
        break;
      }
    }
    ast::Loc loc{line, col, file};
    if (pos >= src.size())
      return make(Token::Kind::Eof, loc, "");

    char c = peek();
    if (c == '\n' || c == ';') {
      advance();
      return make(Token::Kind::Newline, loc, c == ';' ? ";" : "\\n");
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_')
      return identifier(loc);
    if (c == '"')
      return string(loc);
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1)))))
      return number(loc);

    advance();
    switch (c) {
    case '(':
      ++depth;
      return make(Token::Kind::LParen, loc, "(");
    case '[':
      ++depth;
      return make(Token::Kind::LBracket, loc, "[");
    case ')':
      depth = depth > 0 ? depth - 1 : 0;
      return make(Token::Kind::RParen, loc, ")");
    case ']':
      depth = depth > 0 ? depth - 1 : 0;
      return make(Token::Kind::RBracket, loc, "]");
    case '{':
      return make(Token::Kind::LBrace, loc, "{");
    case '}':
      return make(Token::Kind::RBrace, loc, "}");
    case ',':
      return make(Token::Kind::Comma, loc, ",");
    case ':':
      return make(Token::Kind::Colon, loc, ":");
    case '=':
      if (peek() == '=') {
        advance();
        return make(Token::Kind::EqualEqual, loc, "==");
      }
      return make(Token::Kind::Equal, loc, "=");
    case '<':
      if (peek() == '=') {
        advance();
        return make(Token::Kind::LessEqual, loc, "<=");
      }
      return make(Token::Kind::Less, loc, "<");
    case '>':
      if (peek() == '=') {
        advance();
        return make(Token::Kind::GreaterEqual, loc, ">=");
      }
      return make(Token::Kind::Greater, loc, ">");
    case '!':
      if (peek() == '=') {
        advance();
        return make(Token::Kind::NotEqual, loc, "!=");
      }
      break;
    case '+':
      return make(Token::Kind::Plus, loc, "+");
    case '*':
      return make(Token::Kind::Star, loc, "*");
    case '/':
      return make(Token::Kind::Slash, loc, "/");
    case '@':
      return make(Token::Kind::At, loc, "@");
    case '-':
      if (peek() == '>') {
        advance();
        return make(Token::Kind::Arrow, loc, "->");
      }
      return make(Token::Kind::Minus, loc, "-");
    default:
      break;
    }
    std::string shown = std::isprint(static_cast<unsigned char>(c))
                            ? std::string(1, c)
                            : "\\x" + std::string(1, "0123456789abcdef"[(c >> 4) & 15]) +
                                  std::string(1, "0123456789abcdef"[c & 15]);
    return error(loc, "unexpected character '" + shown + "'");
  }

  Token identifier(ast::Loc loc) {
    size_t begin = pos;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')
      advance();
    std::string text(src.substr(begin, pos - begin));
    static const std::unordered_map<std::string, Token::Kind> keywords = {
        {"config", Token::Kind::KwConfig},       {"block", Token::Kind::KwBlock},
        {"model", Token::Kind::KwModel},         {"objective", Token::Kind::KwObjective},
        {"train", Token::Kind::KwTrain},         {"param", Token::Kind::KwParam},
        {"return", Token::Kind::KwReturn},       {"true", Token::Kind::KwTrue},
        {"false", Token::Kind::KwFalse},         {"import", Token::Kind::KwImport},
        {"preset", Token::Kind::KwPreset},
    };
    auto it = keywords.find(text);
    return make(it == keywords.end() ? Token::Kind::Ident : it->second, loc, text);
  }

  /// `"..."` on one line; `\"` and `\\` are the only escapes.
  /// The length of the UTF-8 sequence that starts at `pos` (1 to 4), or 0 when
  /// it is not valid UTF-8 (a stray continuation byte, a truncated sequence, an
  /// overlong form, a surrogate, or a code point above U+10FFFF).
  size_t utf8Length() const {
    const unsigned char b0 = static_cast<unsigned char>(peek());
    if (b0 < 0x80)
      return 1;
    size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
    if (n == 0 || b0 > 0xF4 || b0 == 0xC0 || b0 == 0xC1)
      return 0;
    uint32_t cp = b0 & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
      const unsigned char b = static_cast<unsigned char>(peek(i));
      if (pos + i >= src.size() || (b & 0xC0) != 0x80)
        return 0;
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    return n;
  }

  Token string(ast::Loc loc) {
    advance(); // the opening quote
    std::string value;
    while (true) {
      char c = peek();
      if (pos >= src.size() || c == '\n')
        return error(loc, "unterminated string: '\"' is never closed on its line");
      // Strings become protobuf string fields of the plan, which must be UTF-8:
      // a plan lmrt cannot read must not be written.
      if (static_cast<unsigned char>(c) >= 0x80) {
        size_t n = utf8Length();
        if (n == 0) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(c));
          return error(ast::Loc{line, col, file},
                       std::string("invalid UTF-8 in a string: byte ") + hex +
                           " does not start a valid UTF-8 character (strings must be UTF-8 text)");
        }
        for (size_t i = 0; i < n; ++i) {
          value += peek();
          advance();
        }
        continue;
      }
      advance();
      if (c == '"')
        break;
      if (c == '\\') {
        char e = peek();
        if (e != '"' && e != '\\')
          return error(ast::Loc{line, col - 1, file},
                       "unknown escape in a string (only \\\" and \\\\ are escapes)");
        advance();
        c = e;
      }
      value += c;
    }
    Token t = make(Token::Kind::String, loc, value);
    return t;
  }

  Token number(ast::Loc loc) {
    size_t begin = pos;
    bool isFloat = false;
    while (std::isdigit(static_cast<unsigned char>(peek())))
      advance();
    if (peek() == '.') {
      isFloat = true;
      advance();
      while (std::isdigit(static_cast<unsigned char>(peek())))
        advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t digit = (peek(1) == '+' || peek(1) == '-') ? 2 : 1;
      if (!std::isdigit(static_cast<unsigned char>(peek(digit))))
        return error(loc, "malformed number: exponent has no digits");
      isFloat = true;
      for (size_t i = 0; i < digit; ++i)
        advance();
      while (std::isdigit(static_cast<unsigned char>(peek())))
        advance();
    }
    if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_')
      return error(loc, "malformed number: '" + std::string(1, peek()) +
                            "' directly after a number");
    std::string text(src.substr(begin, pos - begin));
    Token t = make(isFloat ? Token::Kind::Float : Token::Kind::Int, loc, text);
    errno = 0;
    if (isFloat) {
      t.floatValue = std::strtod(text.c_str(), nullptr);
    } else {
      t.intValue = std::strtoll(text.c_str(), nullptr, 10);
    }
    if (errno == ERANGE)
      return error(loc, "number " + text + " is out of range");
    return t;
  }
};

} // namespace

std::vector<Token> lex(std::string_view source, const SyntaxErrorHandler &onError, int file) {
  return Lexer(source, onError, file).run();
}

} // namespace mlir::lm
