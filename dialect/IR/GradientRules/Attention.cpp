//===- Attention.cpp - VJP of lm.attention ----------------------*- C++ -*-===//
//
// One attention_grad op computes dq, dk and dv, recomputing the probabilities
// from q and k (flash-attention style: nothing of size T x T is saved).
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult AttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<AttentionGradOp>(getLoc(), getQ(), getK(), getV(), resultGrads[0],
                                        getNumHeads(), getCausal(), getNumKvHeads());
  operandGrads.append({grad.getDq(), grad.getDk(), grad.getDv()});
  return success();
}
