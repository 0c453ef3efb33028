//===- NamePatternTest.cpp - Tests of export rule path patterns -----------===//
#include "frontend/NamePattern.h"
#include "frontend/Parser.h"

#include <gtest/gtest.h>

using namespace mlir::lm;

namespace {

NamePattern parse(const std::string &text) {
  std::string why;
  std::optional<NamePattern> p = parseNamePattern(text, why);
  EXPECT_TRUE(p) << text << ": " << why;
  return p ? *p : NamePattern{};
}

std::string parseError(const std::string &text) {
  std::string why;
  EXPECT_FALSE(parseNamePattern(text, why)) << text;
  return why;
}

// Tests that a literal path matches only itself.
TEST(NamePattern, Literal) {
  NamePattern p = parse("ln_f.gamma");
  std::map<std::string, std::string> c;
  EXPECT_TRUE(matchNamePattern(p, "ln_f.gamma", c));
  EXPECT_TRUE(c.empty());
  EXPECT_FALSE(matchNamePattern(p, "ln_f.gamma2", c));
  EXPECT_FALSE(matchNamePattern(p, "xln_f.gamma", c));
}

// Tests that a hole matches one or more digits and nothing else.
TEST(NamePattern, HoleMatchesDigits) {
  NamePattern p = parse("layer.{i}.attn.wq");
  std::map<std::string, std::string> c;
  ASSERT_TRUE(matchNamePattern(p, "layer.12.attn.wq", c));
  EXPECT_EQ(c.at("i"), "12");
  EXPECT_FALSE(matchNamePattern(p, "layer..attn.wq", c));
  EXPECT_FALSE(matchNamePattern(p, "layer.a.attn.wq", c));
  EXPECT_FALSE(matchNamePattern(p, "layer.1.2.attn.wq", c));
  std::string why;
  EXPECT_EQ(substituteNamePattern(parse("model.layers.{i}.q_proj.weight"), {{"i", "12"}}, why),
            "model.layers.12.q_proj.weight");
}

// Tests that holes followed by digits in the literal backtrack to a match,
// and that a hole used twice must capture the same digits.
TEST(NamePattern, BacktrackingAndRepeats) {
  std::map<std::string, std::string> c;
  ASSERT_TRUE(matchNamePattern(parse("w{i}0"), "w120", c));
  EXPECT_EQ(c.at("i"), "12");
  ASSERT_TRUE(matchNamePattern(parse("a.{i}.b.{j}"), "a.3.b.7", c));
  EXPECT_EQ(c.at("i"), "3");
  EXPECT_EQ(c.at("j"), "7");
  EXPECT_TRUE(matchNamePattern(parse("a.{i}.b.{i}"), "a.3.b.3", c));
  EXPECT_FALSE(matchNamePattern(parse("a.{i}.b.{i}"), "a.3.b.4", c));
}

// Tests the messages of malformed patterns and unknown holes on the right side.
TEST(NamePattern, Errors) {
  EXPECT_EQ(parseError("layer.{i"), "'{' at offset 6 is never closed");
  EXPECT_EQ(parseError("layer.i}"), "unmatched '}' at offset 7");
  EXPECT_EQ(parseError("layer.{}"), "'{}' is not a placeholder name (e.g. {i})");
  EXPECT_EQ(parseError("layer.{1}"), "'{1}' is not a placeholder name (e.g. {i})");
  EXPECT_EQ(parseError("{i}{j}"), "placeholders '{i}' and '{j}' need text between them");
  std::string why;
  EXPECT_FALSE(substituteNamePattern(parse("h.{j}.w"), {{"i", "0"}}, why));
  EXPECT_EQ(why, "'{j}' does not appear in the parameter path");
}

// Tests that the parser reads an export section: config, rules with several
// names, transpose and tied names.
TEST(NamePattern, ParsesExportSection) {
  std::vector<std::string> errors;
  std::optional<ast::Module> m = parseModule(
      "export hf \"GPT2LMHeadModel\" {\n"
      "  config { n_embd = d; model_type = \"gpt2\" }\n"
      "  \"wte\" -> \"transformer.wte.weight\" tied \"lm_head.weight\"\n"
      "  \"layer.{i}.w\" -> \"a.{i}\", \"b.{i}\" transpose\n"
      "}\n",
      [&](ast::Loc l, const std::string &msg) { errors.push_back(msg); });
  ASSERT_TRUE(m) << (errors.empty() ? "" : errors[0]);
  ASSERT_EQ(m->exports.size(), 1u);
  const ast::Export &e = m->exports[0];
  EXPECT_EQ(e.format, "hf");
  EXPECT_EQ(e.architecture, "GPT2LMHeadModel");
  ASSERT_EQ(e.config.size(), 2u);
  EXPECT_EQ(e.config[0].name, "n_embd");
  ASSERT_EQ(e.rules.size(), 2u);
  EXPECT_EQ(e.rules[0].pattern, "wte");
  EXPECT_EQ(e.rules[0].tied, std::vector<std::string>{"lm_head.weight"});
  EXPECT_FALSE(e.rules[0].transpose);
  EXPECT_EQ(e.rules[1].targets, (std::vector<std::string>{"a.{i}", "b.{i}"}));
  EXPECT_TRUE(e.rules[1].transpose);
  EXPECT_EQ(e.rules[1].loc.line, 4);
}

} // namespace
