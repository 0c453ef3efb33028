//===- Shape.cpp - VJPs of reshape, transpose and slice ---------*- C++ -*-===//
//
// Data-movement ops: the adjoint moves the gradient back. cast -> cast back,
// reshape -> reshape
// to the input type, transpose -> the inverse permutation, slice -> slice_grad
// (scatter into zeros). A slice of i32 ids has no gradient.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult ReshapeOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<ReshapeOp>(getLoc(), getX().getType(), resultGrads[0]));
  return success();
}

LogicalResult CastOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // d/dx of a rounding is taken as 1: the gradient, in the operand's type.
  operandGrads.push_back(b.create<CastOp>(getLoc(), getX().getType(), resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // out[i] = x[perm[i]], so x[perm[i]] = out[i]: inverse[perm[i]] = i.
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  operandGrads.push_back(
      b.create<TransposeOp>(getLoc(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!llvm::isa<FloatType>(getX().getType().getElementType())) {
    operandGrads.push_back(Value());
    return success();
  }
  operandGrads.push_back(b.create<SliceGradOp>(getLoc(), getX().getType(), resultGrads[0],
                                               getStart(), getLimit(), getStride()));
  return success();
}

LogicalResult ConcatOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // Each operand's gradient is its slice of dy along the axis.
  Value dy = resultGrads[0];
  ArrayRef<int64_t> shape = getType().getShape();
  int64_t axis = getAxis(), split = getLhs().getType().getShape()[axis];
  SmallVector<int64_t> start(shape.size(), 0), limit(shape), stride(shape.size(), 1);
  limit[axis] = split;
  operandGrads.push_back(b.create<SliceOp>(getLoc(), dy, start, limit, stride));
  start[axis] = split;
  limit[axis] = shape[axis];
  operandGrads.push_back(b.create<SliceOp>(getLoc(), dy, start, limit, stride));
  return success();
}
