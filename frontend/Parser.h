//===- Parser.h - Recursive-descent parser of the .lm language --*- C++ -*-===//
//
// Builds an ast::Module from tokens. The grammar (docs/language.md):
//
//   file       := (import | config | preset | train | function | export)*
//   import     := 'import' string
//   config     := 'config' '{' setting* '}'       setting := name '=' expr
//   preset     := 'preset' name '{' (setting | 'train' '{' setting* '}')* '}'
//   train      := 'train' '{' setting* '}'
//   export     := 'export' name string '{' ('config' '{' setting* '}' | rule)* '}'
//   rule       := string '->' string (',' string)* ['transpose'] ['tied' string (',' string)*]
//   function   := ('block' | 'model' | 'objective') name '(' params ')'
//                 ['->' type] '{' stmt* '}'
//   param      := name [':' type]                  type := name '[' exprs ']'
//   stmt       := 'param' name ':' [name] '[' exprs ']' '=' expr
//               | 'return' expr (',' expr)* | name (',' name)* '=' expr
//   expr       := arith [('<' | '>' | '<=' | '>=' | '==' | '!=') arith]
//   arith      := term (('+' | '-') term)*
//   term       := unary (('*' | '/' | '@') unary)*      (Python: @ binds like *)
//   unary      := ('-' | '+') unary | postfix
//   postfix    := primary ('(' args ')' | '[' subscripts ']')*
//   primary    := int | float | string | 'true' | 'false' | name | '(' expr ')'
//               | '(' expr ',' ... ')' | '[' exprs ']'
//
// Statements end at a newline or `;`. The parser stops at the first error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/AST.h"
#include "frontend/Lexer.h"

#include <optional>
#include <string_view>

namespace mlir::lm {

/// Parses a whole file. Reports the first syntax error through `onError` and
/// returns std::nullopt after it.
std::optional<ast::Module> parseModule(std::string_view source, const SyntaxErrorHandler &onError,
                                       int file = 0);

/// Parses a single expression (the whole buffer). For tests.
ast::ExprPtr parseExpression(std::string_view source, const SyntaxErrorHandler &onError);

} // namespace mlir::lm
