//===- Normalization.cpp - VJPs of layer_norm and softmax -------*- C++ -*-===//
//
// Both map to a dedicated backward op with its own kernel: layer_norm_grad
// recomputes mean and rstd from x (nothing is saved), softmax_grad reuses the
// forward output y.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult LayerNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<LayerNormGradOp>(getLoc(), getX(), getGamma(), resultGrads[0], getEpsilon());
  operandGrads.append({grad.getDx(), grad.getDgamma(), grad.getDbeta()});
  return success();
}

LogicalResult SoftmaxOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      b.create<SoftmaxGradOp>(getLoc(), getResult(), resultGrads[0]));
  return success();
}

LogicalResult RmsNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<RmsNormGradOp>(getLoc(), getX(), getGamma(), resultGrads[0], getEpsilon());
  operandGrads.append({grad.getDx(), grad.getDgamma()});
  return success();
}
