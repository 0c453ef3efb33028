//===- AST.cpp - Abstract syntax tree of the .lm language -----------------===//
//
// Printing of expressions (used by tests and by messages that quote source)
// and module lookups.
//
//===----------------------------------------------------------------------===//
#include "frontend/AST.h"

#include <sstream>

namespace mlir::lm::ast {

static void print(std::ostringstream &os, const Expr &e);

static void printList(std::ostringstream &os, const std::vector<ExprPtr> &items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      os << ", ";
    print(os, *items[i]);
  }
}

static void print(std::ostringstream &os, const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Int:
    os << e.intValue;
    return;
  case Expr::Kind::Float:
    os << e.floatValue;
    return;
  case Expr::Kind::Bool:
    os << (e.boolValue ? "true" : "false");
    return;
  case Expr::Kind::Name:
    os << e.name;
    return;
  case Expr::Kind::String:
    os << '"' << e.name << '"';
    return;
  case Expr::Kind::Unary:
    os << e.op;
    print(os, *e.lhs);
    return;
  case Expr::Kind::Binary:
    // Fully parenthesised, so tests can see how the parser grouped operands.
    os << '(';
    print(os, *e.lhs);
    os << ' ' << opSpelling(e.op) << ' ';
    print(os, *e.rhs);
    os << ')';
    return;
  case Expr::Kind::Call:
    os << e.name << '(';
    printList(os, e.args);
    for (size_t i = 0; i < e.kwargs.size(); ++i) {
      if (i || !e.args.empty())
        os << ", ";
      os << e.kwargs[i].name << " = ";
      print(os, *e.kwargs[i].value);
    }
    os << ')';
    return;
  case Expr::Kind::Index:
    print(os, *e.lhs);
    os << '[';
    for (size_t i = 0; i < e.subscripts.size(); ++i) {
      const Subscript &s = e.subscripts[i];
      if (i)
        os << ", ";
      if (!s.isSlice) {
        print(os, *s.index);
        continue;
      }
      if (s.start)
        print(os, *s.start);
      os << ':';
      if (s.limit)
        print(os, *s.limit);
      if (s.step) {
        os << ':';
        print(os, *s.step);
      }
    }
    os << ']';
    return;
  case Expr::Kind::List:
    os << '[';
    printList(os, e.args);
    os << ']';
    return;
  case Expr::Kind::Tuple:
    os << '(';
    printList(os, e.args);
    os << ')';
    return;
  }
}

std::string at(Loc loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.col); }

std::string toString(const Expr &expr) {
  std::ostringstream os;
  print(os, expr);
  return os.str();
}

const Function *Module::lookup(const std::string &name) const {
  for (const Function &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const char *kindName(Function::Kind kind) {
  switch (kind) {
  case Function::Kind::Block:
    return "block";
  case Function::Kind::Model:
    return "model";
  case Function::Kind::Objective:
    return "objective";
  }
  return "function";
}

std::string opSpelling(char op) {
  switch (op) {
  case 'l': return "<=";
  case 'g': return ">=";
  case 'e': return "==";
  case 'n': return "!=";
  default: return std::string(1, op);
  }
}

bool isComparison(char op) { return std::string_view("<>lgen").find(op) != std::string_view::npos; }

} // namespace mlir::lm::ast
