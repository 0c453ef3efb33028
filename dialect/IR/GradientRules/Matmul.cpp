//===- Matmul.cpp - VJP of lm.matmul ----------------------------*- C++ -*-===//
//
// With A' = op(A) [..., M, K] and B' = op(B) [..., K, N] (op transposes the
// last two dims when the flag is set), y = A' B' gives dA' = dy B'^T and
// dB' = A'^T dy. Each is written as a single matmul whose transpose flags
// absorb both the forward flags and the transposes of the rule, so no
// lm.transpose is needed except in one shared-rhs case:
//
//   dA = !tl ? dy  x B^(!tr)        dB = !tr ? A^(!tl) x dy
//        :     B^(tr) x dy^T               :   dy^T  x A^(tl)
//
// A rank-2 rhs shared by a batched lhs gets one gradient summed over the
// batch: when the lhs is not transposed, lhs and dy are reshaped to 2-D
// ([P*M, K], [P*M, N]) so that one matmul contracts over the batch too;
// otherwise the batched product is reduced with lm.sum_to. With bf16 or f16
// operands (f32 result), dy is cast to the operands' type and the gradients
// back to it.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// lm.matmul, its result type inferred (the gradient shapes follow from a
/// verified forward matmul).
Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool tl, bool tr) {
  return b.create<MatmulOp>(loc, lhs, rhs, tl, tr);
}

/// Reshapes [..., R, C] to [prod(...) * R, C]. The rows are the product of
/// the leading dims, not elements / C, which C = 0 would divide by zero.
Value flattenTo2D(OpBuilder &b, Location loc, Value v) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  auto flat = RankedTensorType::get({rows, shape.back()}, type.getElementType());
  return b.create<ReshapeOp>(loc, flat, v);
}

/// Swaps the last two dims.
Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  int64_t rank = llvm::cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return b.create<TransposeOp>(loc, v, perm);
}

} // namespace

LogicalResult MatmulOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value a = getLhs(), w = getRhs(), dy = resultGrads[0];
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  // bf16 or f16 operands (mixed precision): the backward GEMMs read dy in the
  // operands' type too, and each gradient (an f32 product) is stored in its
  // operand's type.
  Type operandType = getLhs().getType().getElementType();
  bool reduced = operandType.isBF16() || operandType.isF16();
  auto castTo = [&](Value v, Type elt) -> Value {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    return b.create<CastOp>(loc, RankedTensorType::get(type.getShape(), elt), v);
  };
  if (reduced)
    dy = castTo(dy, operandType);
  bool sharedRhs = getRhs().getType().getRank() == 2 && getLhs().getType().getRank() > 2;

  Value da;
  if (!tl)
    da = matmul(b, loc, dy, w, false, !tr);
  else if (!sharedRhs)
    da = matmul(b, loc, w, dy, tr, true);
  else // A rank-2 lhs cannot multiply a batched rhs: form dA' and transpose it.
    da = transposeLast2(b, loc, matmul(b, loc, dy, w, false, !tr));

  Value dw;
  if (!sharedRhs) {
    dw = !tr ? matmul(b, loc, a, dy, !tl, false) : matmul(b, loc, dy, a, true, tl);
  } else if (!tl) {
    Value a2 = flattenTo2D(b, loc, a), dy2 = flattenTo2D(b, loc, dy);
    dw = !tr ? matmul(b, loc, a2, dy2, true, false) : matmul(b, loc, dy2, a2, true, false);
  } else {
    Value batched = !tr ? matmul(b, loc, a, dy, false, false) : matmul(b, loc, dy, a, true, true);
    dw = reduceGradTo(b, loc, batched, w.getType());
  }
  if (reduced) {
    da = castTo(da, operandType);
    dw = castTo(dw, operandType);
  }
  operandGrads.push_back(da);
  operandGrads.push_back(dw);
  return success();
}
