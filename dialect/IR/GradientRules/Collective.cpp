//===- Collective.cpp - VJPs of the collectives -----------------*- C++ -*-===//
//
// all_reduce, reduce_scatter and all_gather are linear maps over the ranks'
// tensors; each VJP is the transposed map (JAX's convention, LMOps.td): a
// sum's adjoint is the same sum (a mean's the same mean), a gather's is a
// reduce-scatter along the same dimension, a reduce-scatter's is a gather.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult AllReduceOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<AllReduceOp>(getLoc(), resultGrads[0], getMeshAxis(), getGroupSize(), getMean()));
  return success();
}

LogicalResult ReduceScatterOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<AllGatherOp>(getLoc(), resultGrads[0], getMeshAxis(), getGroupSize(), getDim()));
  return success();
}

LogicalResult AllGatherOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // A gather of bf16 or f16 (a ZeRO-3 parameter slice under mixed precision) has a
  // cotangent of that type; the ranks' sum of it runs in f32, as every reduction does
  // under the precision policy (docs/mixed-precision.md), and is rounded once.
  Value dy = resultGrads[0];
  auto type = cast<RankedTensorType>(dy.getType());
  const bool reduced = type.getElementType().isBF16() || type.getElementType().isF16();
  if (reduced)
    dy = b.create<CastOp>(getLoc(), RankedTensorType::get(type.getShape(), b.getF32Type()), dy);
  Value dx = b.create<ReduceScatterOp>(getLoc(), dy, getMeshAxis(), getGroupSize(), getDim());
  if (reduced)
    dx = b.create<CastOp>(getLoc(), getX().getType(), dx);
  operandGrads.push_back(dx);
  return success();
}
