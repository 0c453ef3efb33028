/* Tests the --init-map renames (runtime/weights/init_map.h): prefixes removed and
   added, whole-name renames, tensors left out, the first matching rule winning, and
   every malformed spec refused with the spec in the message. */
#include <gtest/gtest.h>

#include "base/tensor.h"
#include "runtime/weights/init_map.h"

namespace lmrt {
namespace {

std::string mapped(const std::vector<std::string> &specs, const std::string &name) {
  std::vector<std::string> m = mapInitName(parseInitMap(specs), name);
  if (m.empty()) return "<dropped>";
  std::string s = m[0];
  for (size_t i = 1; i < m.size(); ++i) s += "|" + m[i];
  return s;
}

TEST(InitMap, RenamesByPatternFirstMatchWins) {
  EXPECT_EQ(mapped({"encoder.*=*"}, "encoder.blocks.0.w"), "blocks.0.w");
  EXPECT_EQ(mapped({"encoder.*=*"}, "decoder.blocks.0.w"), "decoder.blocks.0.w");  // no rule: its own name
  EXPECT_EQ(mapped({"*=backbone.*"}, "wte"), "backbone.wte");
  EXPECT_EQ(mapped({"blocks.*.w=layers.*.weight"}, "blocks.3.w"), "layers.3.weight");
  EXPECT_EQ(mapped({"wte=embed.tokens"}, "wte"), "embed.tokens");
  EXPECT_EQ(mapped({"wte=embed.tokens"}, "wte2"), "wte2");  // no '*': the whole name
  EXPECT_EQ(mapped({"mlm.*="}, "mlm.bias"), "<dropped>");
  EXPECT_EQ(mapped({"mlm.bias=", "mlm.*=head.*"}, "mlm.bias"), "<dropped>");
  EXPECT_EQ(mapped({"mlm.bias=", "mlm.*=head.*"}, "mlm.w"), "head.w");
  EXPECT_EQ(mapped({"a*b=x"}, "ab"), "x");  // '*' may match nothing
  EXPECT_EQ(mapped({"ab*ba=x"}, "aba"), "aba");  // prefix and suffix may not overlap
}

TEST(InitMap, ListLoadsOneTensorIntoSeveral) {
  EXPECT_EQ(mapped({"*=*,ref.*"}, "layer.0.w"), "layer.0.w|ref.layer.0.w");
  EXPECT_EQ(mapped({"wte=a,b,c"}, "wte"), "a|b|c");
  EXPECT_EQ(mapped({"mlm.*=", "*=*,ref.*"}, "mlm.w"), "<dropped>");
}

TEST(InitMap, MalformedSpecsAreErrorsNamingThem) {
  auto error = [](const std::string &spec) {
    try {
      parseInitMap({spec});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("encoder.*").find("'encoder.*': expected FROM=TO"), std::string::npos);
  EXPECT_NE(error("=x").find("FROM is empty"), std::string::npos);
  EXPECT_NE(error("a.*.*=*").find("at most one '*'"), std::string::npos);
  EXPECT_NE(error("a=*.x").find("TO has a '*' but FROM has none"), std::string::npos);
  EXPECT_NE(error("*=*,").find("'*=*,': an empty name in the list"), std::string::npos);
  EXPECT_NE(error("*=a,,b").find("an empty name in the list"), std::string::npos);
  EXPECT_NE(error("*=*,r.*.*").find("at most one '*'"), std::string::npos);
  EXPECT_NE(error("a=b,*.x").find("TO has a '*' but FROM has none"), std::string::npos);
}

}  // namespace
}  // namespace lmrt
