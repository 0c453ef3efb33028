//===- Loss.cpp - VJPs of lm.cross_entropy and lm.accuracy ------*- C++ -*-===//
//
// cross_entropy_grad folds the scalar incoming gradient into the softmax minus
// one-hot rows (and the 1/n_valid of the mean); targets get no gradient.
// accuracy is piecewise constant: neither operand gets a gradient.
//
//===----------------------------------------------------------------------===//

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
