/* Tests that the shared shape rules (contract/shape_rules.h) accept the
   shapes docs/dialect.md allows, compute the right result shapes, and reject the
   rest with a message naming the op and the offending shapes. */
#include "contract/shape_rules.h"

#include <gtest/gtest.h>

#include "base/tensor.h"

using namespace lmrt::shapes;

namespace {

::testing::AssertionResult failsWith(const std::optional<Dims> &r, const std::string &err,
                                     const std::string &needle) {
  if (r) return ::testing::AssertionFailure() << "expected an error, got " << str(*r);
  if (err.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "error '" << err << "' lacks '" << needle << "'";
  return ::testing::AssertionSuccess();
}

TEST(ShapeRules, Str) {
  EXPECT_EQ(str({}), "[]");
  EXPECT_EQ(str({2, 3, 4}), "[2, 3, 4]");
  EXPECT_EQ(lmrt::shapeStr({7}), "[7]");
  EXPECT_EQ((lmrt::TensorType{lmrt::DType::F64, {2, 3}}.str()), "f64[2, 3]");
}

TEST(ShapeRules, Fail) {
  try {
    lmrt::fail("embedding: token id %d at flat position %lld", 300, 17LL);
    FAIL() << "fail() returned";
  } catch (const lmrt::Error &e) {
    EXPECT_STREQ(e.what(), "embedding: token id 300 at flat position 17");
  }
}

TEST(ShapeRules, Broadcast) {
  std::string err;
  EXPECT_EQ(*broadcast({2, 3}, {3}, err), (Dims{2, 3}));
  EXPECT_EQ(*broadcast({2, 1, 4}, {3, 1}, err), (Dims{2, 3, 4}));
  EXPECT_EQ(*broadcast({}, {5}, err), (Dims{5}));
  EXPECT_EQ(*broadcast({1}, {}, err), (Dims{1}));
  auto r = broadcast({2, 3}, {4}, err, "add");
  EXPECT_TRUE(failsWith(r, err, "add: shapes [2, 3] and [4] do not broadcast"));
  EXPECT_TRUE(failsWith(broadcast({-1}, {4}, err, "mul"), err, "mul: lhs [-1] has negative dimension"));
}

TEST(ShapeRules, SumTo) {
  std::string err;
  EXPECT_TRUE(sumTo({2, 3, 4}, {4}, err));
  EXPECT_TRUE(sumTo({2, 3, 4}, {3, 1}, err));
  EXPECT_TRUE(sumTo({2, 3}, {}, err));
  EXPECT_TRUE(sumTo({2, 3}, {2, 3}, err));
  EXPECT_FALSE(sumTo({2, 3}, {2}, err));
  EXPECT_NE(err.find("sum_to: result [2] does not broadcast to operand [2, 3]"), std::string::npos) << err;
  EXPECT_FALSE(sumTo({3}, {1, 3}, err));
  EXPECT_NE(err.find("higher rank"), std::string::npos) << err;
}

TEST(ShapeRules, Matmul) {
  std::string err;
  EXPECT_EQ(*matmul({2, 3}, {3, 5}, false, false, err), (Dims{2, 5}));
  EXPECT_EQ(*matmul({4, 2, 3}, {3, 5}, false, false, err), (Dims{4, 2, 5}));
  EXPECT_EQ(*matmul({4, 2, 3}, {4, 3, 5}, false, false, err), (Dims{4, 2, 5}));
  EXPECT_EQ(*matmul({4, 3, 2}, {4, 5, 3}, true, true, err), (Dims{4, 2, 5}));
  EXPECT_TRUE(failsWith(matmul({2, 3}, {4, 5}, false, false, err), err,
                        "matmul: contracted dimensions differ: lhs [2, 3] has K = 3, rhs [4, 5] has K = 4"));
  EXPECT_TRUE(failsWith(matmul({4, 2, 3}, {5, 3, 5}, false, false, err), err,
                        "matmul: batch dimensions differ: lhs [4, 2, 3] and rhs [5, 3, 5]"));
  EXPECT_TRUE(failsWith(matmul({3}, {3, 5}, false, false, err), err, "matmul: lhs [3] must have rank >= 2"));
  EXPECT_TRUE(failsWith(matmul({2, 2, 3}, {1, 2, 3, 5}, false, false, err), err, "rhs [1, 2, 3, 5] must have rank 2"));
}

TEST(ShapeRules, EmbeddingLayerNormAttention) {
  std::string err;
  EXPECT_EQ(*embedding({256, 8}, {2, 5}, err), (Dims{2, 5, 8}));
  EXPECT_TRUE(failsWith(embedding({256}, {2}, err), err, "embedding: table [256] must have rank 2"));
  EXPECT_EQ(*layerNorm({2, 3, 8}, {8}, {8}, err), (Dims{2, 3, 8}));
  EXPECT_TRUE(failsWith(layerNorm({2, 8}, {7}, {8}, err), err, "layer_norm: gamma [7] must be [8]"));
  EXPECT_TRUE(failsWith(layerNorm({2, 8}, {8}, {2, 8}, err), err, "layer_norm: beta [2, 8] must be [8]"));
  EXPECT_EQ(*attention({2, 4, 12}, {2, 4, 12}, {2, 4, 12}, 3, err), (Dims{2, 4, 12}));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 4, 12}, {2, 4, 12}, 5, err), err,
                        "attention: last dim of q [2, 4, 12] (12) is not divisible by num_heads = 5"));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {3, 5, 12}, {3, 5, 12}, 3, err), err,
                        "attention: k [3, 5, 12] must be [2, 5, 12] (3 key/value heads of q [2, 4, 12], any number "
                        "of keys)"));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 5, 12}, {2, 4, 12}, 3, err), err,
                        "attention: v [2, 4, 12] must have the shape of k [2, 5, 12]"));
  // Cross-attention: Tk != Tq, not causal; the padding mask is [B, Tk].
  EXPECT_EQ(*attention({2, 4, 12}, {2, 7, 12}, {2, 7, 12}, 3, err), (Dims{2, 4, 12}));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 7, 12}, {2, 7, 12}, 3, err, 0, true), err,
                        "attention: causal attention needs as many keys as queries, got k [2, 7, 12] for q [2, 4, 12] "
                        "(cross-attention is not causal)"));
  Dims mask{2, 7}, badMask{2, 4};
  EXPECT_EQ(*attention({2, 4, 12}, {2, 7, 12}, {2, 7, 12}, 3, err, 0, false, &mask), (Dims{2, 4, 12}));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 7, 12}, {2, 7, 12}, 3, err, 0, false, &badMask), err,
                        "attention: mask [2, 4] must be [2, 7] [B, Tk] (1 on keys to attend, 0 on padding)"));
  // Grouped-query heads: k and v carry Hkv heads of q's head size.
  EXPECT_EQ(*attention({2, 4, 12}, {2, 4, 6}, {2, 4, 6}, 4, err, 2), (Dims{2, 4, 12}));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 4, 6}, {2, 4, 6}, 4, err, 3), err,
                        "attention: num_kv_heads = 3 does not divide num_heads = 4"));
  EXPECT_TRUE(failsWith(attention({2, 4, 12}, {2, 4, 6}, {2, 4, 3}, 4, err, 2), err,
                        "attention: v [2, 4, 3] must have the shape of k [2, 4, 6]"));
  EXPECT_EQ(*rmsNorm({2, 8}, {8}, err), (Dims{2, 8}));
  EXPECT_TRUE(failsWith(rmsNorm({2, 8}, {7}, err), err, "rms_norm: gamma [7] must be [8]"));
  EXPECT_EQ(*concat({2, 3}, {2, 5}, 1, err), (Dims{2, 8}));
  EXPECT_TRUE(failsWith(concat({2, 3}, {2, 5}, 2, err), err, "concat: axis 2 is outside the rank 2"));
  EXPECT_EQ(*takeAlongAxis({2, 4, 8, 16}, {1, 1, 8, 8}, 3, err), (Dims{2, 4, 8, 8}));
  EXPECT_EQ(*takeAlongAxis({2, 5}, {2, 9}, 1, err), (Dims{2, 9}));
  EXPECT_TRUE(failsWith(takeAlongAxis({2, 5}, {3, 9}, 1, err), err,
                        "take_along_axis: indices [3, 9] do not broadcast to x [2, 5] in dimension 0"));
  EXPECT_TRUE(failsWith(takeAlongAxis({2, 5}, {9}, 0, err), err,
                        "take_along_axis: indices [9] must have the rank of x [2, 5]"));
  EXPECT_TRUE(failsWith(takeAlongAxis({2, 5}, {2, 5}, 2, err), err, "take_along_axis: axis 2 is outside the rank 2"));
  EXPECT_EQ(*reduceAxes({2, 3, 4}, {0, 2}, err), (Dims{1, 3, 1}));
  EXPECT_TRUE(failsWith(reduceAxes({2, 3, 4}, {2, 0}, err), err, "reduce_max: axes [2, 0] must be sorted and distinct"));
  EXPECT_EQ(*where({2, 1}, {3}, {}, err), (Dims{2, 3}));
  EXPECT_TRUE(failsWith(attention({4, 12}, {4, 12}, {4, 12}, 3, err), err, "attention: q [4, 12] must have rank 3"));
}

TEST(ShapeRules, ShapeOps) {
  std::string err;
  EXPECT_EQ(*transpose({2, 3, 4}, {2, 0, 1}, err), (Dims{4, 2, 3}));
  EXPECT_TRUE(failsWith(transpose({2, 3}, {0, 0}, err), err, "transpose: [0, 0] is not a permutation"));
  EXPECT_TRUE(failsWith(transpose({2, 3}, {0}, err), err, "transpose: permutation [0] has 1 entries"));
  EXPECT_EQ(*reshape({2, 6}, {3, 4}, err), (Dims{3, 4}));
  EXPECT_TRUE(failsWith(reshape({2, 6}, {5}, err), err, "reshape: cannot reshape [2, 6] (12 elements) to [5]"));
  EXPECT_EQ(*slice({4, 10}, {0, 1}, {4, 10}, {1, 3}, err), (Dims{4, 3}));
  EXPECT_EQ(*slice({4, 10}, {2, 5}, {2, 5}, {1, 1}, err), (Dims{0, 0}));
  EXPECT_TRUE(failsWith(slice({4, 10}, {0, 0}, {4, 11}, {1, 1}, err), err,
                        "slice: dimension 1 of x [4, 10] needs 0 <= start <= limit <= 10"));
  EXPECT_TRUE(failsWith(slice({4}, {0}, {4}, {0}, err), err, "slice: stride [0] must be >= 1"));
  EXPECT_TRUE(failsWith(slice({4}, {0, 0}, {4}, {1}, err), err, "must each have one entry per dim"));
  EXPECT_EQ(*crossEntropy({2, 3, 256}, {2, 3}, err), (Dims{}));
  EXPECT_TRUE(failsWith(crossEntropy({2, 3, 256}, {2, 4}, err), err,
                        "cross_entropy: targets [2, 4] must be [2, 3]"));
  EXPECT_EQ(*linearCrossEntropy({2, 3, 8}, {256, 8}, {2, 3}, true, err), (Dims{}));
  EXPECT_EQ(*linearCrossEntropy({2, 3, 8}, {8, 256}, {2, 3}, false, err), (Dims{}));
  EXPECT_TRUE(failsWith(linearCrossEntropy({2, 3, 8}, {256, 8}, {2, 3}, false, err), err,
                        "linear_cross_entropy: contracted dimensions differ"));
  EXPECT_TRUE(failsWith(linearCrossEntropy({2, 3, 8}, {256, 8}, {3}, true, err), err,
                        "linear_cross_entropy: targets [3] must be [2, 3]"));
  EXPECT_TRUE(failsWith(linearCrossEntropy({8}, {256, 8}, {}, true, err), err,
                        "linear_cross_entropy: h [8] must have rank >= 2"));
}

}  // namespace
