//===- LexerTest.cpp - Tests of the .lm lexer -----------------------------===//
#include "frontend/Lexer.h"

#include <gtest/gtest.h>

using namespace mlir::lm;

namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::vector<std::string> errors;
};

Lexed lexAll(std::string_view src) {
  Lexed r;
  r.tokens = lex(src, [&](mlir::lm::ast::Loc loc, const std::string &msg) {
    r.errors.push_back(std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": " + msg);
  });
  return r;
}

std::vector<Token::Kind> kinds(const Lexed &l) {
  std::vector<Token::Kind> k;
  for (const Token &t : l.tokens)
    k.push_back(t.kind);
  return k;
}

using K = Token::Kind;

// Tests that keywords, identifiers, numbers and every punctuator are recognised.
TEST(Lexer, TokenKinds) {
  Lexed l = lexAll("block f(x: f32[B, 4]) -> i32 { return -x @ w / 2.5e-1 * 3 + y }");
  EXPECT_TRUE(l.errors.empty());
  std::vector<K> want = {K::KwBlock, K::Ident,  K::LParen, K::Ident,   K::Colon,  K::Ident,
                         K::LBracket, K::Ident, K::Comma,  K::Int,     K::RBracket, K::RParen,
                         K::Arrow,  K::Ident,   K::LBrace, K::KwReturn, K::Minus, K::Ident,
                         K::At,     K::Ident,   K::Slash,  K::Float,   K::Star,   K::Int,
                         K::Plus,   K::Ident,   K::RBrace, K::Eof};
  EXPECT_EQ(kinds(l), want);
  EXPECT_DOUBLE_EQ(l.tokens[21].floatValue, 0.25);
  EXPECT_EQ(l.tokens[23].intValue, 3);
}

// Tests that positions are 1-based lines and columns, and comments are skipped.
TEST(Lexer, LocationsAndComments) {
  Lexed l = lexAll("# header\nconfig {  # trailing\n  d = 128\n}\n");
  ASSERT_TRUE(l.errors.empty());
  ASSERT_GE(l.tokens.size(), 2u);
  EXPECT_EQ(l.tokens[0].kind, K::Newline); // the newline ending the comment line
  EXPECT_EQ(l.tokens[1].kind, K::KwConfig);
  EXPECT_EQ(l.tokens[1].loc.line, 2);
  EXPECT_EQ(l.tokens[1].loc.col, 1);
  const Token &d = l.tokens[4];
  EXPECT_EQ(d.text, "d");
  EXPECT_EQ(d.loc.line, 3);
  EXPECT_EQ(d.loc.col, 3);
}

// Tests that newlines inside parentheses/brackets do not end a statement,
// that `;` is a separator, and that runs of separators collapse.
TEST(Lexer, NewlinesInsideBrackets) {
  Lexed l = lexAll("y = f(a,\n  b)\n\n\nz = [1,\n 2]; w = 1");
  ASSERT_TRUE(l.errors.empty());
  std::vector<K> want = {K::Ident, K::Equal,  K::Ident,   K::LParen, K::Ident, K::Comma,
                         K::Ident, K::RParen, K::Newline, K::Ident,  K::Equal, K::LBracket,
                         K::Int,   K::Comma,  K::Int,     K::RBracket, K::Newline, K::Ident,
                         K::Equal, K::Int,    K::Eof};
  EXPECT_EQ(kinds(l), want);
}

// Tests number spellings: integers, fractions, exponents.
TEST(Lexer, Numbers) {
  Lexed l = lexAll("6e-4 1.0 .5 1E3 42");
  ASSERT_TRUE(l.errors.empty());
  EXPECT_EQ(l.tokens[0].kind, K::Float);
  EXPECT_DOUBLE_EQ(l.tokens[0].floatValue, 6e-4);
  EXPECT_DOUBLE_EQ(l.tokens[2].floatValue, 0.5);
  EXPECT_DOUBLE_EQ(l.tokens[3].floatValue, 1000.0);
  EXPECT_EQ(l.tokens[4].kind, K::Int);
  EXPECT_EQ(l.tokens[4].intValue, 42);
}

// Tests that an unexpected character is reported at its position and ends lexing.
TEST(Lexer, UnexpectedCharacter) {
  Lexed l = lexAll("x = 1\ny = $z");
  ASSERT_EQ(l.errors.size(), 1u);
  EXPECT_EQ(l.errors[0], "2:5: unexpected character '$'");
  EXPECT_EQ(l.tokens.back().kind, K::Error);
}

// Tests malformed numbers.
TEST(Lexer, MalformedNumbers) {
  EXPECT_EQ(lexAll("1e+").errors.at(0), "1:1: malformed number: exponent has no digits");
  EXPECT_EQ(lexAll("x = 2d").errors.at(0), "1:5: malformed number: 'd' directly after a number");
  EXPECT_EQ(lexAll("99999999999999999999").errors.at(0),
            "1:1: number 99999999999999999999 is out of range");
}

// Tests strings (with their two escapes), the import/preset keywords, the
// comparison operators next to '=' and '->', and the string errors.
TEST(Lexer, StringsKeywordsAndComparisons) {
  Lexed l = lexAll("import \"a \\\"b\\\\.lm\" preset p a < b <= c > d >= e == f != g = h -> i");
  EXPECT_TRUE(l.errors.empty());
  std::vector<K> want = {K::KwImport, K::String,     K::KwPreset, K::Ident,      K::Ident, K::Less,
                         K::Ident,    K::LessEqual,  K::Ident,    K::Greater,    K::Ident, K::GreaterEqual,
                         K::Ident,    K::EqualEqual, K::Ident,    K::NotEqual,   K::Ident, K::Equal,
                         K::Ident,    K::Arrow,      K::Ident,    K::Eof};
  EXPECT_EQ(kinds(l), want);
  EXPECT_EQ(l.tokens[1].text, "a \"b\\.lm");
  EXPECT_EQ(lexAll("x = \"ab\ny\"").errors.at(0), "1:5: unterminated string: '\"' is never closed on its line");
  EXPECT_EQ(lexAll("x = \"a\\nb\"").errors.at(0),
            "1:7: unknown escape in a string (only \\\" and \\\\ are escapes)");
  EXPECT_EQ(lexAll("x = !y").errors.at(0), "1:5: unexpected character '!'");
}

// Tests that strings hold UTF-8 text and nothing else (they become protobuf string
// fields of the plan, which lmrt could not read otherwise): every valid form passes
// unchanged, and each kind of invalid byte is reported at its column.
TEST(Lexer, StringsMustBeUtf8) {
  Lexed ok = lexAll("s = \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF\"");
  EXPECT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.tokens[2].text, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF");
  const std::pair<const char *, const char *> bad[] = {
      {"s = \"ab\xFF\"", "1:8: invalid UTF-8 in a string: byte 0xFF"},        // never in UTF-8
      {"s = \"\x80\"", "1:6: invalid UTF-8 in a string: byte 0x80"},          // a stray continuation byte
      {"s = \"a\xC3\"", "1:7: invalid UTF-8 in a string: byte 0xC3"},         // truncated by the quote
      {"s = \"\xC0\xAF\"", "1:6: invalid UTF-8 in a string: byte 0xC0"},     // overlong '/'
      {"s = \"\xE0\x80\xAF\"", "1:6: invalid UTF-8 in a string: byte 0xE0"}, // overlong
      {"s = \"\xED\xA0\x80\"", "1:6: invalid UTF-8 in a string: byte 0xED"}, // a surrogate
      {"s = \"\xF4\x90\x80\x80\"", "1:6: invalid UTF-8 in a string: byte 0xF4"}, // above U+10FFFF
  };
  for (const auto &[src, want] : bad) {
    Lexed l = lexAll(src);
    ASSERT_FALSE(l.errors.empty()) << src;
    EXPECT_EQ(l.errors.at(0).rfind(want, 0), 0u) << l.errors.at(0);
  }
}

} // namespace
