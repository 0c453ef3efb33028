/* Fuzz target: the .lm parser (frontend/Parser.h) on any bytes: a whole module,
   and the buffer as a single expression, every expression of the tree printed
   back (what error messages quote).
   Invariants: a module or expression comes back if and only if no syntax error
   was reported, and at most one error is (the parser stops at the first); no
   expression is nested deeper than ast::kMaxExprNesting, which every recursive
   walk of the tree (MLIRGen's, printing, destruction) relies on. */
#include "frontend/Parser.h"
#include "test/Fuzz/FuzzSupport.h"

using namespace mlir::lm;

namespace {

void walk(const ast::Expr *e) {
  if (!e) return;
  LMC_FUZZ_CHECK(e->height >= 1 && e->height <= ast::kMaxExprNesting, std::to_string(e->height));
  walk(e->lhs.get());
  walk(e->rhs.get());
  for (const ast::ExprPtr &a : e->args) walk(a.get());
  for (const ast::KeywordArg &k : e->kwargs) walk(k.value.get());
  for (const ast::Subscript &s : e->subscripts) {
    walk(s.index.get());
    walk(s.start.get());
    walk(s.limit.get());
    walk(s.step.get());
  }
}

void visit(const ast::ExprPtr &e) {
  if (!e) return;
  walk(e.get());
  (void)ast::toString(*e);
}

void visit(const std::optional<ast::TypeExpr> &t) {
  if (t)
    for (const ast::ExprPtr &d : t->dims) visit(d);
}

void visit(const std::vector<ast::Setting> &settings) {
  for (const ast::Setting &s : settings) visit(s.value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view source(reinterpret_cast<const char *>(data), size);
  int errors = 0;
  auto onError = [&](ast::Loc, const std::string &) { ++errors; };

  std::optional<ast::Module> m = parseModule(source, onError);
  LMC_FUZZ_CHECK(m.has_value() == (errors == 0) && errors <= 1, std::to_string(errors) + " errors");
  if (m) {
    visit(m->config);
    visit(m->train);
    for (const ast::Preset &p : m->presets) visit(p.settings);
    for (const ast::Export &e : m->exports) visit(e.config);
    for (const ast::Function &f : m->functions) {
      for (const ast::Parameter &p : f.params) visit(p.type);
      visit(f.resultType);
      for (const ast::Stmt &s : f.body) {
        visit(s.value);
        for (const ast::ExprPtr &d : s.paramShape.dims) visit(d);
      }
      (void)m->lookup(f.name);
    }
  }

  errors = 0;
  ast::ExprPtr e = parseExpression(source, onError);
  LMC_FUZZ_CHECK((e != nullptr) == (errors == 0) && errors <= 1, std::to_string(errors) + " errors");
  visit(e);
  return 0;
}
