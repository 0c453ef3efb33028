//===- Embedding.cpp - VJP of lm.embedding ----------------------*- C++ -*-===//
//
// The table's gradient is a scatter-add of dy rows at the ids (embedding_grad);
// the ids are integers and get no gradient.
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
