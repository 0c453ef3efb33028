/* Fuzz target: the .lm lexer (frontend/Lexer.h) on any bytes.
   Invariants: the token list ends with Eof or, after exactly one reported error,
   with Error; every token's position is 1-based and no earlier than the one
   before it; the lexer never reads past the buffer (ASan sees the input's own
   heap copy, which libFuzzer sizes exactly). */
#include "frontend/Lexer.h"
#include "test/Fuzz/FuzzSupport.h"

using namespace mlir::lm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view source(reinterpret_cast<const char *>(data), size);
  int errors = 0;
  std::string lastError;
  std::vector<Token> tokens = lex(source, [&](ast::Loc, const std::string &msg) {
    ++errors;
    lastError = msg;
  });
  LMC_FUZZ_CHECK(!tokens.empty(), "");
  const Token &last = tokens.back();
  if (last.kind == Token::Kind::Error) LMC_FUZZ_CHECK(errors == 1, std::to_string(errors) + " errors");
  else LMC_FUZZ_CHECK(last.kind == Token::Kind::Eof && errors == 0, lastError);
  ast::Loc prev{1, 1, 0};
  for (const Token &t : tokens) {
    LMC_FUZZ_CHECK(t.loc.line >= 1 && t.loc.col >= 1, ast::at(t.loc));
    LMC_FUZZ_CHECK(t.loc.line > prev.line || (t.loc.line == prev.line && t.loc.col >= prev.col),
                   ast::at(prev) + " then " + ast::at(t.loc));
    prev = t.loc;
    (void)describe(t);  // what messages print for it
  }
  return 0;
}
