//===- ShardingRulesTest.cpp - Tests of the ops' sharding rules -----------===//
//
// Pins ShardingOpInterface (dialect/IR/LMSharding.h) op by op: the loops each
// op runs (parallel, reduction, whole), the loop every operand and result
// dimension follows, the unit of attention's head loop, a packed projection's
// segments, and the attributes the per-rank form rewrites. -lm-spmd derives
// Megatron's layout from exactly these facts (test/Transforms/spmd*.mlir).
//
//===----------------------------------------------------------------------===//
#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::lm;

namespace {

class ShardingRulesTest : public ::testing::Test {
protected:
  ShardingRulesTest() : builder(&context), loc(builder.getUnknownLoc()) {
    context.loadDialect<LMDialect, func::FuncDialect>();
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<func::FuncOp>(loc, "f", builder.getFunctionType({}, {}));
    builder.setInsertionPointToEnd(func.addEntryBlock());
  }

  Value arg(ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, builder.getF32Type());
    return builder.create<ConstantOp>(loc, DenseElementsAttr::get(type, builder.getF32FloatAttr(0)));
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc;
  OwningOpRef<ModuleOp> module;
};

ShardingRule ruleOf(Operation *op) { return cast<ShardingOpInterface>(op).getShardingRule(); }

/// The loop of each dimension, -1 where none.
std::vector<int64_t> loops(ArrayRef<ShardingDim> dims) {
  std::vector<int64_t> out;
  for (ShardingDim d : dims)
    out.push_back(d.loop);
  return out;
}

std::vector<LoopKind> kinds(const ShardingRule &rule) {
  std::vector<LoopKind> out;
  for (ShardingLoop l : rule.loops)
    out.push_back(l.kind);
  return out;
}

using V = std::vector<int64_t>;
constexpr LoopKind P = LoopKind::Parallel, R = LoopKind::Reduction, W = LoopKind::Whole;

TEST_F(ShardingRulesTest, MatmulContractsItsLastLoop) {
  auto mm = builder.create<MatmulOp>(loc, arg({4, 16, 64}), arg({64, 256}), false, false);
  ShardingRule rule = ruleOf(mm);
  EXPECT_EQ(kinds(rule), (std::vector<LoopKind>{P, P, P, R})); // batch, M, N, K
  EXPECT_EQ(loops(rule.operands[0]), (V{0, 1, 3}));
  EXPECT_EQ(loops(rule.operands[1]), (V{3, 2}));
  EXPECT_EQ(loops(rule.results[0]), (V{0, 1, 2}));
  EXPECT_EQ(rule.tensorParallelLoop, -1);

  // The tied LM head stores its weight [N, K].
  auto head = builder.create<MatmulOp>(loc, arg({4, 16, 64}), arg({256, 64}), false, true);
  EXPECT_EQ(loops(ruleOf(head).operands[1]), (V{2, 3}));
  // A batched rhs follows the batch loop too.
  auto bmm = builder.create<MatmulOp>(loc, arg({4, 8, 16}), arg({4, 16, 8}), false, false);
  EXPECT_EQ(loops(ruleOf(bmm).operands[1]), (V{0, 3, 2}));
}

TEST_F(ShardingRulesTest, PointwiseOpsBroadcastIntoTheirResult) {
  auto add = builder.create<AddOp>(loc, arg({4, 16, 64}), arg({64}));
  ShardingRule rule = ruleOf(add);
  EXPECT_EQ(kinds(rule), (std::vector<LoopKind>{P, P, P}));
  EXPECT_EQ(loops(rule.operands[0]), (V{0, 1, 2}));
  EXPECT_EQ(loops(rule.operands[1]), (V{2}));
  auto mul = builder.create<MulOp>(loc, arg({4, 16, 64}), arg({1, 16, 1}));
  EXPECT_EQ(loops(ruleOf(mul).operands[1]), (V{-1, 1, -1}));
  auto gelu = builder.create<GeluOp>(loc, arg({4, 16, 64}));
  EXPECT_EQ(kinds(ruleOf(gelu)), (std::vector<LoopKind>{P, P, P}));
}

TEST_F(ShardingRulesTest, NormalisedDimensionsAreWhole) {
  auto softmax = builder.create<SoftmaxOp>(loc, arg({4, 16, 16}));
  EXPECT_EQ(kinds(ruleOf(softmax)), (std::vector<LoopKind>{P, P, W}));
  auto norm = builder.create<LayerNormOp>(loc, arg({4, 16, 64}), arg({64}), arg({64}), builder.getF64FloatAttr(1e-5));
  ShardingRule rule = ruleOf(norm);
  EXPECT_EQ(kinds(rule), (std::vector<LoopKind>{P, P, W}));
  EXPECT_EQ(loops(rule.operands[1]), (V{2}));
  EXPECT_EQ(loops(rule.operands[2]), (V{2}));
}

TEST_F(ShardingRulesTest, AttentionSplitsWholeHeads) {
  Value q = arg({2, 8, 64}), kv = arg({2, 8, 32});
  auto attn = builder.create<AttentionOp>(loc, q, kv, kv, 4, true, 2);
  ShardingRule rule = ruleOf(attn);
  // batch, query positions, key positions (whole: the causal mask, the
  // softmax over keys), heads of 16 elements.
  EXPECT_EQ(kinds(rule), (std::vector<LoopKind>{P, W, W, P}));
  EXPECT_EQ(rule.loops[3].unit, 16);
  EXPECT_EQ(rule.tensorParallelLoop, 3);
  EXPECT_EQ(loops(rule.operands[0]), (V{0, 1, 3}));
  EXPECT_EQ(loops(rule.operands[1]), (V{0, 2, 3}));
  EXPECT_EQ(loops(rule.results[0]), (V{0, 1, 3}));
  attn.shardAttributes(3, 2);
  EXPECT_EQ(attn.getNumHeads(), 2);
  EXPECT_EQ(attn.getNumKvHeads(), 1);
}

TEST_F(ShardingRulesTest, PackedProjectionSlicesAreSegments) {
  Value qkv = arg({4, 16, 192});
  auto k = builder.create<SliceOp>(loc, qkv, ArrayRef<int64_t>{0, 0, 64}, ArrayRef<int64_t>{4, 16, 128},
                                   ArrayRef<int64_t>{1, 1, 1});
  ShardingRule rule = ruleOf(k);
  EXPECT_EQ(loops(rule.operands[0]), (V{0, 1, 2}));
  EXPECT_EQ(rule.operands[0][2].segments, 3);
  EXPECT_EQ(rule.operands[0][0].segments, 1);
  // The rank's k is its block of the middle segment.
  k.shardAttributes(2, 2);
  EXPECT_EQ(k.getStart()[2], 32);
  EXPECT_EQ(k.getLimit()[2], 64);
  // A slice that is not one of equal segments cannot be split.
  auto odd = builder.create<SliceOp>(loc, qkv, ArrayRef<int64_t>{0, 0, 10}, ArrayRef<int64_t>{4, 16, 60},
                                     ArrayRef<int64_t>{1, 1, 1});
  EXPECT_EQ(ruleOf(odd).operands[0][2].loop, -1);
}

TEST_F(ShardingRulesTest, ShapeOpsMapTheirDimensions) {
  auto heads = builder.create<ReshapeOp>(loc, RankedTensorType::get({4, 16, 4, 16}, builder.getF32Type()),
                                         arg({4, 16, 64}));
  ShardingRule rule = ruleOf(heads);
  EXPECT_EQ(loops(rule.operands[0]), (V{0, 1, 2})); // 64 splits as its outer dimension, the heads
  EXPECT_EQ(loops(rule.results[0]), (V{0, 1, 2, -1}));
  auto squeeze = builder.create<ReshapeOp>(loc, RankedTensorType::get({4, 64}, builder.getF32Type()),
                                           arg({4, 1, 64}));
  EXPECT_EQ(loops(ruleOf(squeeze).operands[0]), (V{0, -1, 1}));
  EXPECT_EQ(loops(ruleOf(squeeze).results[0]), (V{0, 1}));

  auto t = builder.create<TransposeOp>(loc, arg({4, 16, 64}), ArrayRef<int64_t>{0, 2, 1});
  EXPECT_EQ(loops(ruleOf(t).operands[0]), (V{0, 2, 1}));

  auto cat = builder.create<ConcatOp>(loc, arg({4, 8, 16}), arg({4, 8, 16}), 2);
  EXPECT_EQ(kinds(ruleOf(cat)), (std::vector<LoopKind>{P, P, W}));
  EXPECT_EQ(loops(ruleOf(cat).operands[1]), (V{0, 1, -1}));
}

/// A lookup reads the rows its ids name, so the table's rows follow no loop;
/// its columns are the result's last dimension (T5's [buckets, heads] position
/// bias table splits by heads this way).
TEST_F(ShardingRulesTest, EmbeddingSplitsTheTableColumnsOnly) {
  auto idsType = RankedTensorType::get({16, 16}, builder.getI32Type());
  Value ids = builder.create<ConstantOp>(loc, DenseElementsAttr::get(idsType, builder.getI32IntegerAttr(0)));
  auto emb = builder.create<EmbeddingOp>(loc, arg({32, 4}), ids);
  ShardingRule rule = ruleOf(emb);
  EXPECT_EQ(kinds(rule), (std::vector<LoopKind>{P, P, P}));
  EXPECT_EQ(loops(rule.operands[0]), (V{-1, 2}));
  EXPECT_EQ(loops(rule.operands[1]), (V{0, 1}));
  EXPECT_EQ(loops(rule.results[0]), (V{0, 1, 2}));
  EXPECT_EQ(rule.tensorParallelLoop, -1);
}

} // namespace
