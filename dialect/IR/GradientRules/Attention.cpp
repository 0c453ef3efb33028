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

// The mask is data (1 on tokens, 0 on padding): it gets no gradient, and
// masked_attention_grad computes none.
LogicalResult MaskedAttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                              SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<MaskedAttentionGradOp>(getLoc(), getQ(), getK(), getV(), getMask(), resultGrads[0],
                                              getNumHeads(), getCausal(), getNumKvHeads());
  operandGrads.append({grad.getDq(), grad.getDk(), grad.getDv(), Value()});
  return success();
}
