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
  operandGrads.push_back(
      b.create<ReduceScatterOp>(getLoc(), resultGrads[0], getMeshAxis(), getGroupSize(), getDim()));
  return success();
}
