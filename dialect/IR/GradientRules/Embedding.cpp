//===- Embedding.cpp - VJPs of the gathers ----------------------*- C++ -*-===//
//
// lm.embedding: the table's gradient is a scatter-add of dy rows at the ids
// (embedding_grad). lm.take_along_axis: x's gradient is a scatter-add of dy
// along the axis (take_along_axis_grad). Ids and indices are integers and get
// no gradient.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult EmbeddingOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      b.create<EmbeddingGradOp>(getLoc(), getTable().getType(), getIds(), resultGrads[0]));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult TakeAlongAxisOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<TakeAlongAxisGradOp>(getLoc(), getX().getType(), getIndices(),
                                                       resultGrads[0], getAxisAttr()));
  operandGrads.push_back(Value());
  return success();
}
