//===- ParserTest.cpp - Tests of the .lm parser ---------------------------===//
#include "frontend/Parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace mlir::lm;
using namespace mlir::lm::ast;

namespace {

struct Errors {
  std::vector<std::string> list;
  SyntaxErrorHandler handler() {
    return [this](Loc loc, const std::string &msg) {
      list.push_back(std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": " + msg);
    };
  }
};

std::string expr(const std::string &src) {
  Errors errs;
  ExprPtr e = parseExpression(src, errs.handler());
  if (!e)
    return "error: " + (errs.list.empty() ? std::string("?") : errs.list[0]);
  return toString(*e);
}

std::string firstError(const std::string &src) {
  Errors errs;
  std::optional<Module> m = parseModule(src, errs.handler());
  EXPECT_FALSE(m.has_value());
  return errs.list.empty() ? "" : errs.list[0];
}

// Tests Python precedence: @ binds like *, tighter than +; unary minus tighter still.
TEST(Parser, Precedence) {
  EXPECT_EQ(expr("gelu(x @ w1 + b1) @ w2 + b2"), "((gelu(((x @ w1) + b1)) @ w2) + b2)");
  EXPECT_EQ(expr("a + b * c - d"), "((a + (b * c)) - d)");
  EXPECT_EQ(expr("-x @ y"), "(-x @ y)");
  EXPECT_EQ(expr("0.02 / sqrt(2 * layers)"), "(0.02 / sqrt((2 * layers)))");
  EXPECT_EQ(expr("(a + b) * c"), "((a + b) * c)");
}

// Tests calls with keyword arguments, lists and tuples.
TEST(Parser, CallsListsTuples) {
  EXPECT_EQ(expr("attention(q, k, v, heads = heads, causal = true)"),
            "attention(q, k, v, heads = heads, causal = true)");
  EXPECT_EQ(expr("adamw(lr = 6e-4, betas = (0.9, 0.95))"), "adamw(lr = 0.0006, betas = (0.9, 0.95))");
  EXPECT_EQ(expr("reshape(x, [B, T, heads, d / heads])"), "reshape(x, [B, T, heads, (d / heads)])");
  EXPECT_EQ(expr("f(a = 1, b)"), "error: 1:10: positional argument after keyword argument 'a'");
}

// Tests subscripts: omitted, negative and expression bounds, steps, integer indices.
TEST(Parser, Subscripts) {
  EXPECT_EQ(expr("tokens[:, :-1]"), "tokens[:, :-1]");
  EXPECT_EQ(expr("qkv[:, :, d:2*d]"), "qkv[:, :, d:(2 * d)]");
  EXPECT_EQ(expr("wpe[0:T]"), "wpe[0:T]");
  EXPECT_EQ(expr("x[::2, 1:]"), "x[::2, 1:]");
  EXPECT_EQ(expr("x[0][1]"), "x[0][1]");
  EXPECT_EQ(expr("x[]"), "error: 1:2: empty subscript '[]'");
}

// Tests the structure built for a small complete file.
TEST(Parser, Module) {
  Errors errs;
  std::optional<Module> m = parseModule(R"(
config { d = 8; layers = 2 }
block mlp(x: f32[B, T, d], scale) -> f32[B, T, d] {
  param w: [d, 4 * d] = normal(0.02)
  return x @ w
}
objective lm(tokens: i32[2, 9]) {
  loss = 1.0
}
train { optimizer = adamw(lr = 1e-3); clip_grad_norm = 1.0 }
)",
                                        errs.handler());
  ASSERT_TRUE(m.has_value()) << (errs.list.empty() ? "" : errs.list[0]);
  ASSERT_EQ(m->config.size(), 2u);
  EXPECT_EQ(m->config[1].name, "layers");
  ASSERT_EQ(m->functions.size(), 2u);
  const Function &mlp = m->functions[0];
  EXPECT_EQ(mlp.kind, Function::Kind::Block);
  EXPECT_EQ(mlp.name, "mlp");
  ASSERT_EQ(mlp.params.size(), 2u);
  ASSERT_TRUE(mlp.params[0].type.has_value());
  EXPECT_EQ(mlp.params[0].type->elementType, "f32");
  EXPECT_EQ(mlp.params[0].type->dims.size(), 3u);
  EXPECT_FALSE(mlp.params[1].type.has_value());
  ASSERT_TRUE(mlp.resultType.has_value());
  ASSERT_EQ(mlp.body.size(), 2u);
  EXPECT_EQ(mlp.body[0].kind, Stmt::Kind::Param);
  EXPECT_EQ(mlp.body[0].name, "w");
  EXPECT_EQ(toString(*mlp.body[0].paramShape.dims[1]), "(4 * d)");
  EXPECT_EQ(toString(*mlp.body[0].value), "normal(0.02)");
  EXPECT_EQ(mlp.body[1].kind, Stmt::Kind::Return);
  EXPECT_EQ(mlp.closeLoc.line, 6);
  EXPECT_EQ(m->functions[1].kind, Function::Kind::Objective);
  ASSERT_EQ(m->train.size(), 2u);
  EXPECT_EQ(m->train[0].name, "optimizer");
}

// Tests that `frozen` modifies a `param` right after it and is an ordinary name
// anywhere else.
TEST(Parser, FrozenParam) {
  Errors errs;
  std::optional<Module> m = parseModule(R"(
block b(x) {
  frozen param w: [4] = zeros
  param v: [4] = ones
  frozen = x * w
  return frozen + v
}
)",
                                        errs.handler());
  ASSERT_TRUE(m.has_value()) << (errs.list.empty() ? "" : errs.list[0]);
  const Function &b = m->functions[0];
  ASSERT_EQ(b.body.size(), 4u);
  EXPECT_EQ(b.body[0].kind, Stmt::Kind::Param);
  EXPECT_EQ(b.body[0].name, "w");
  EXPECT_TRUE(b.body[0].frozen);
  EXPECT_EQ(b.body[0].loc.col, 3);  // the statement starts at `frozen`
  EXPECT_FALSE(b.body[1].frozen);
  EXPECT_EQ(b.body[2].kind, Stmt::Kind::Assign);
  EXPECT_EQ(b.body[2].name, "frozen");
}

// Tests that the model files of the zoo parse.
TEST(Parser, ZooModelsParse) {
  struct Zoo {
    const char *file, *model;
    size_t functions;
  };
  for (const Zoo &z : {Zoo{"gpt2.lm", "gpt", 5}, Zoo{"llama.lm", "llama", 6}}) {
    std::ifstream in(std::string(LMC_MODELS_DIR) + "/" + z.file);
    ASSERT_TRUE(in.good()) << z.file;
    std::stringstream ss;
    ss << in.rdbuf();
    Errors errs;
    std::optional<Module> m = parseModule(ss.str(), errs.handler());
    ASSERT_TRUE(m.has_value()) << z.file << ": " << (errs.list.empty() ? "" : errs.list[0]);
    EXPECT_EQ(m->functions.size(), z.functions) << z.file;
    ASSERT_NE(m->lookup(z.model), nullptr);
    EXPECT_EQ(m->lookup(z.model)->kind, Function::Kind::Model);
    ASSERT_FALSE(m->presets.empty()) << z.file;
    EXPECT_EQ(m->presets[0].name, "tiny") << z.file;
  }
}

// Tests the nesting limit: 256 levels parse, one more is an error at the
// level that exceeds it, for parentheses, unary signs, chains of operators
// (built by a loop, but walked recursively later) and chains of subscripts.
TEST(Parser, NestingLimit) {
  auto repeat = [](const std::string &s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
      out += s;
    return out;
  };
  const std::string tooDeep = "expression nested too deeply (more than 256 levels)";
  EXPECT_EQ(expr(repeat("(", 255) + "x" + repeat(")", 255)), "x");
  EXPECT_EQ(expr(repeat("(", 256) + "x" + repeat(")", 256)), "error: 1:257: " + tooDeep);
  EXPECT_EQ(expr(repeat("(", 200000) + "x" + repeat(")", 200000)), "error: 1:257: " + tooDeep);
  EXPECT_EQ(expr(repeat("-", 200000) + "x"), "error: 1:256: " + tooDeep);
  // A chain of n operators is n + 1 levels deep.
  EXPECT_NE(expr("x" + repeat(" + x", 255)).rfind("error", 0), 0u);
  EXPECT_EQ(expr("x" + repeat("+x", 300000)), "error: 1:512: " + tooDeep);
  EXPECT_EQ(expr("x" + repeat("*x", 300000)), "error: 1:512: " + tooDeep);
  EXPECT_EQ(expr("x" + repeat("[0]", 300000)), "error: 1:767: " + tooDeep);
  // The height counts the deepest operand, not only the chain: `-...-x` is
  // 201 levels, so the 56th '+' (column 200 + 1 + 2 * 55 + 1) is one too many.
  // Parentheses add no level to the tree, only to the parser's recursion.
  EXPECT_EQ(expr(repeat("-", 200) + "x" + repeat("+x", 100)), "error: 1:312: " + tooDeep);
  EXPECT_NE(expr(repeat("(", 200) + "x" + repeat(")", 200) + repeat("+x", 255)).rfind("error", 0),
            0u);
}

// Tests syntax errors: each names what was expected and where.
TEST(Parser, Errors) {
  EXPECT_EQ(firstError("block f(x) {\n  return x\n"),
            "1:12: unterminated body of block 'f': '{' is never closed");
  EXPECT_EQ(firstError("block f(x) {\n  y = g(x\n  return y\n}"),
            "3:3: expected ',' or ')' to close '(' at 2:8, found 'return'");
  EXPECT_EQ(firstError("block f(x) {\n  y = x +\n}"), "2:10: expected an expression, found end of line");
  EXPECT_EQ(firstError("block f(x) {\n  y = x\nblock g(x) { return x }"),
            "3:1: expected a statement ('name = expr', 'param', 'return' or 'metric name = expr'), found 'block' (is a "
            "'}' missing to close the body of 'f' opened at 1:12?)");
  EXPECT_EQ(firstError("block f(x) { y = x z }"),
            "1:20: expected end of line or ';' after the statement, found identifier 'z'");
  EXPECT_EQ(firstError("model m(x) { param w = zeros }"),
            "1:22: expected ':' and a shape after 'param w', found '='");
  EXPECT_EQ(firstError("x = 1"),
            "1:1: expected 'config', 'preset', 'import', 'block', 'model', 'objective', 'train' or "
            "'export', found identifier 'x'");
  EXPECT_EQ(firstError("export hf GPT2 { }"),
            "1:11: expected the hf model class in quotes (e.g. \"GPT2LMHeadModel\"), found identifier 'GPT2'");
  EXPECT_EQ(firstError("export hf \"M\" { \"a\" -> b }"),
            "1:24: expected a name in quotes after '->', found identifier 'b'");
  EXPECT_EQ(firstError("export hf \"M\" { \"a\" -> \"b\" tied c }"),
            "1:33: expected a name in quotes after 'tied', found identifier 'c'");
  EXPECT_EQ(firstError("export hf \"M\" { x = 1 }"),
            "1:17: expected 'config', 'omit' or a parameter path in quotes (\"layer.{i}.w\" -> \"...\"), "
            "found identifier 'x'");
  EXPECT_EQ(firstError("export hf \"M\" { omit \"a\", b }"),
            "1:27: expected a parameter path in quotes after 'omit', found identifier 'b'");
  EXPECT_EQ(firstError("export hf \"M\" { config { }; config { } }"),
            "1:29: a second 'config' in the export section (the first is at 1:17)");
  EXPECT_EQ(firstError("config { a = 1 }\nconfig { b = 2 }"),
            "2:1: a second 'config' section (the first is at 1:1)");
  EXPECT_EQ(firstError("config { a = 1 $ }"), "1:16: unexpected character '$'");
  EXPECT_EQ(firstError("block f(x { }"), "1:11: expected ',' or ')' to close '(' at 1:8, found '{'");
}

} // namespace

namespace {

// Tests the zoo's syntax: imports, presets, several returned values, unpacking,
// named calls (a keyword with a string) and comparisons, which bind loosest.
TEST(Parser, ZooSyntax) {
  Errors errs;
  std::optional<Module> m = parseModule(R"(import "blocks.lm"
config { d = 4 }
preset tiny { d = 2 }
preset big { d = 8; }
block two(x) {
  return x, x * 2
}
objective o(x: f32[2, d]) {
  a, b = two(x, name = "t")
  loss = a + 1 < b * 2
}
)",
                                        errs.handler());
  ASSERT_TRUE(m.has_value()) << (errs.list.empty() ? "" : errs.list[0]);
  ASSERT_EQ(m->imports.size(), 1u);
  EXPECT_EQ(m->imports[0].path, "blocks.lm");
  ASSERT_EQ(m->presets.size(), 2u);
  EXPECT_EQ(m->presets[1].name, "big");
  EXPECT_EQ(m->presets[1].settings[0].name, "d");
  const Stmt &ret = m->functions[0].body[0];
  ASSERT_EQ(ret.kind, Stmt::Kind::Return);
  EXPECT_EQ(ret.value->kind, Expr::Kind::Tuple);
  EXPECT_EQ(ret.value->args.size(), 2u);
  const Stmt &unpack = m->functions[1].body[0];
  EXPECT_EQ(unpack.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(toString(*unpack.value), "two(x, name = \"t\")");
  EXPECT_EQ(toString(*m->functions[1].body[1].value), "((a + 1) < (b * 2))");
  EXPECT_EQ(firstError("preset p { d = 1 }\npreset p { d = 2 }"), "2:1: a second preset 'p' (the first is at 1:1)");
  EXPECT_EQ(firstError("import blocks"), "1:8: expected a file name in quotes after 'import', found identifier 'blocks'");
}

} // namespace
