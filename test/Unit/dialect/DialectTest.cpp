//===- DialectTest.cpp - Tests of lm op type inference and costs ---------===//
//
// Builds lm ops through the builders without result types (InferTypeOpInterface
// over the shared shape rules), checks that inference reports a bad shape as an
// error instead of building a broken op, and pins the CostOpInterface numbers
// the plan writer copies into Step.flops; every op of the generated plan op
// table must state its cost, and the generated elementwise table must list
// exactly the dialect's ElementwiseOpInterface ops, with their scalar forms.
//
//===----------------------------------------------------------------------===//
#include "dialect/IR/LMOps.h"
#include "contract/elementwise.h"
#include "contract/op_table.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::lm;

namespace {

class DialectTest : public ::testing::Test {
protected:
  DialectTest() : builder(&context) {
    context.loadDialect<LMDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<func::FuncOp>(builder.getUnknownLoc(), "f", builder.getFunctionType({}, {}));
    builder.setInsertionPointToEnd(func.addEntryBlock());
  }

  /// A value of type `shape` x f32 (or `elem`): a splat lm.constant.
  Value arg(ArrayRef<int64_t> shape, Type elem = {}) {
    auto type = RankedTensorType::get(shape, elem ? elem : builder.getF32Type());
    Attribute zero = llvm::isa<FloatType>(type.getElementType()) ? Attribute(builder.getF32FloatAttr(0))
                                                                  : Attribute(builder.getI32IntegerAttr(0));
    return builder.create<ConstantOp>(builder.getUnknownLoc(), DenseElementsAttr::get(type, zero));
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

std::vector<int64_t> shapeOf(Value v) {
  auto s = llvm::cast<ShapedType>(v.getType()).getShape();
  return {s.begin(), s.end()};
}

TEST_F(DialectTest, BuildersInferResultTypes) {
  Location loc = builder.getUnknownLoc();
  Value x = arg({4, 16, 64});
  Value w = arg({256, 64});
  auto logits = builder.create<MatmulOp>(loc, x, w, false, true);
  EXPECT_EQ(shapeOf(logits), (std::vector<int64_t>{4, 16, 256}));
  auto sum = builder.create<AddOp>(loc, logits, arg({256}));
  EXPECT_EQ(shapeOf(sum), (std::vector<int64_t>{4, 16, 256}));
  auto grads = builder.create<LayerNormGradOp>(loc, x, arg({64}), x, builder.getF64FloatAttr(1e-5));
  EXPECT_EQ(shapeOf(grads.getDgamma()), (std::vector<int64_t>{64}));
  Value ids = arg({4, 17}, builder.getI32Type());
  auto sliced = builder.create<SliceOp>(loc, ids, ArrayRef<int64_t>{0, 1}, ArrayRef<int64_t>{4, 17},
                                        ArrayRef<int64_t>{1, 2});
  EXPECT_EQ(shapeOf(sliced), (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(sliced.getType().getElementType().isInteger(32));
  builder.create<func::ReturnOp>(loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(DialectTest, InferenceReportsTheRule) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  Value lhs = arg({4, 8}), rhs = arg({4, 8});
  SmallVector<Type> types;
  MatmulOp::Adaptor adaptor(ValueRange{lhs, rhs}, builder.getDictionaryAttr({}));
  EXPECT_TRUE(failed(MatmulOp::inferReturnTypes(&context, builder.getUnknownLoc(), adaptor, types)));
  EXPECT_EQ(message, "'lm.matmul' op contracted dimensions differ: lhs [4, 8] has K = 8, rhs [4, 8] has K = 4");
  EXPECT_TRUE(types.empty());

  // A generic builder may leave out a required attribute: an error, not a crash.
  AttentionOp::Adaptor attention(ValueRange{arg({2, 8, 32}), arg({2, 8, 32}), arg({2, 8, 32})},
                                 builder.getDictionaryAttr({}));
  EXPECT_TRUE(failed(AttentionOp::inferReturnTypes(&context, builder.getUnknownLoc(), attention, types)));
  EXPECT_EQ(message, "'lm.attention' op requires attribute 'num_heads'");
}

TEST_F(DialectTest, Costs) {
  Location loc = builder.getUnknownLoc();
  Value x = arg({4, 16, 64});
  auto mm = builder.create<MatmulOp>(loc, x, arg({64, 32}), false, false);
  auto cost = llvm::cast<CostOpInterface>(mm.getOperation());
  EXPECT_EQ(cost.getFlops(), 2 * 4 * 16 * 32 * 64);
  // Default traffic: operands read once, the result written once (f32).
  EXPECT_EQ(cost.getBytesAccessed(), 4 * (4 * 16 * 64 + 64 * 32 + 4 * 16 * 32));
  auto attn = builder.create<AttentionOp>(loc, x, x, x, 4, true);
  EXPECT_EQ(llvm::cast<CostOpInterface>(attn.getOperation()).getFlops(), 4 * 4 * 16 * 16 * 64 / 2);
  // Cross-attention counts Tq x Tk; a padding mask is data (no key assumed masked).
  Value kv = arg({4, 24, 64});
  auto cross = builder.create<MaskedAttentionOp>(loc, x, kv, kv, arg({4, 24}), 4, false, 0);
  EXPECT_EQ(llvm::cast<CostOpInterface>(cross.getOperation()).getFlops(), 4 * 4 * 16 * 24 * 64);
  auto crossGrad = builder.create<MaskedAttentionGradOp>(loc, x, kv, kv, arg({4, 24}), x, 4, false, 0);
  EXPECT_EQ(llvm::cast<CostOpInterface>(crossGrad.getOperation()).getFlops(), 4 * 4 * 16 * 24 * 64 * 5 / 2);
  EXPECT_EQ(crossGrad.getDk().getType(), kv.getType());
  auto gelu = builder.create<GeluOp>(loc, x);
  EXPECT_EQ(llvm::cast<CostOpInterface>(gelu.getOperation()).getFlops(), 8 * 4 * 16 * 64);
  // A lookup touches the rows it gathers, not the whole table.
  auto emb = builder.create<EmbeddingOp>(loc, arg({50000, 64}), arg({4, 16}, builder.getI32Type()));
  EXPECT_EQ(llvm::cast<CostOpInterface>(emb.getOperation()).getFlops(), 0);
  EXPECT_EQ(llvm::cast<CostOpInterface>(emb.getOperation()).getBytesAccessed(), 4 * 4 * 16 + 2 * 4 * (4 * 16 * 64));
}

// Every lm op a plan step may run states its cost, so Step.flops is never
// silently left at 0 for a new op.
TEST_F(DialectTest, EveryStepOpHasACost) {
  for (const lmrt::ops::OpInfo &op : lmrt::ops::allOps()) {
    if (std::string(op.name) == lmrt::ops::kCopyOpName)
      continue;
    std::optional<RegisteredOperationName> name =
        RegisteredOperationName::lookup("lm." + std::string(op.name), &context);
    ASSERT_TRUE(name.has_value()) << op.name;
    EXPECT_TRUE(name->hasInterface<CostOpInterface>()) << op.name;
  }
}

// The elementwise table, from which the kernels and builtins are instantiated,
// holds exactly the ops with a scalar form, each with the form the kernel
// emitter writes into fused kernels and the op's operand names.
TEST_F(DialectTest, ElementwiseTableMatchesTheInterface) {
  size_t withForm = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "lm" || !name.hasInterface<ElementwiseOpInterface>())
      continue;
    ++withForm;
    std::string opName = name.getStringRef().drop_front(strlen("lm.")).str();
    EXPECT_NE(lmrt::elementwise::findOp(opName), nullptr) << opName << " is missing from the elementwise table";
  }
  EXPECT_EQ(lmrt::elementwise::allOps().size(), withForm);
  for (const lmrt::elementwise::ElementwiseOp &row : lmrt::elementwise::allOps()) {
    OperationState state(builder.getUnknownLoc(), "lm." + std::string(row.name));
    std::vector<int64_t> shape = {2, 3};
    for (int k = 0; k < row.arity; ++k)
      state.addOperands(arg(shape));
    state.addTypes(RankedTensorType::get(shape, builder.getF32Type()));
    Operation *op = builder.create(state);
    auto elementwise = llvm::dyn_cast<ElementwiseOpInterface>(op);
    ASSERT_TRUE(elementwise) << row.name;
    EXPECT_EQ(elementwise.getScalarForm().str(), row.scalarForm) << row.name;
    EXPECT_EQ(op->getNumOperands(), static_cast<unsigned>(row.arity)) << row.name;
    EXPECT_TRUE(succeeded(verify(op))) << row.name;
    // A unary builtin's argument is named as the ODS operand (x), by default.
    if (row.builtin && row.arity == 1) {
      EXPECT_STREQ(row.builtinParams[0], row.operands[0]) << row.name;
    }
  }
  const lmrt::elementwise::ElementwiseOp *where = lmrt::elementwise::findBuiltin("where");
  ASSERT_NE(where, nullptr);
  EXPECT_STREQ(where->name, "where");
  EXPECT_TRUE(where->broadcasts);
  EXPECT_STREQ(where->operands[0], "cond");
  EXPECT_STREQ(where->builtinParams[1], "a");
  EXPECT_EQ(lmrt::elementwise::findBuiltin("gelu"), nullptr); // the frontend's own (approximate = ...)
  EXPECT_FALSE(lmrt::elementwise::findOp("gelu_grad")->broadcasts);
}

} // namespace
