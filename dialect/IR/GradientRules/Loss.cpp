//===- Loss.cpp - VJPs of lm.cross_entropy and lm.accuracy ------*- C++ -*-===//
//
// cross_entropy_grad folds the scalar incoming gradient into the softmax minus
// one-hot rows (and the 1/n_valid of the mean); targets get no gradient.
// accuracy is piecewise constant: neither operand gets a gradient.
// linear_cross_entropy_stats (the vocabulary-parallel loss's rank part) has
// its own grad op, which recomputes the logits chunk by chunk.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult CrossEntropyOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<CrossEntropyGradOp>(getLoc(), getLogits(), getTargets(),
                                                      resultGrads[0], getIgnoreIndex()));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult AccuracyOp::buildAdjoint(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append({Value(), Value()});
  return success();
}

/// The rank's logit gradient is dlse * softmax + dtarget * onehot; the grad op
/// recomputes it chunk by chunk. A result without a cotangent contributes a
/// zero one (in the vocabulary-parallel loss both have one). max and argmax
/// feed only metrics (an accuracy, piecewise constant as lm.accuracy is): their
/// cotangents are ignored. first, targets: none.
LogicalResult LinearCrossEntropyStatsOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                                      SmallVectorImpl<Value> &operandGrads) {
  auto cotangent = [&](unsigned i) {
    return resultGrads[i] ? resultGrads[i] : buildSplat(b, getLoc(), getResult(i).getType(), 0.0);
  };
  auto grad = b.create<LinearCrossEntropyStatsGradOp>(getLoc(), getH(), getW(), getTargets(), getFirst(), getBias(),
                                                      getLse(), cotangent(0), cotangent(1), getVocab(),
                                                      getTransposeRhs(), getIgnoreIndex(), getChunkRows());
  operandGrads.append({grad.getDh(), grad.getDw(), Value(), Value(), grad.getDbias()});
  return success();
}
