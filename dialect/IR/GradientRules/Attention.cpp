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

// The bias gets the sum of the score gradients over the dimensions it broadcasts
// along (T5's bias is an embedding of bucket ids: its gradient trains them); the
// mask, the segment ids and the dropout key are data; the grad regenerates the
// forward's dropout mask from the key and the site.
LogicalResult BiasedAttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                              SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<BiasedAttentionGradOp>(getLoc(), getQ(), getK(), getV(), getMask(), getBias(), getSegments(),
                                              getKey(), resultGrads[0], getNumHeads(), getCausal(), getNumKvHeads(),
                                              getScale(), getDropout(), getSite());
  operandGrads.append({grad.getDq(), grad.getDk(), grad.getDv(), Value(), grad.getDbias(), Value(), Value()});
  return success();
}
