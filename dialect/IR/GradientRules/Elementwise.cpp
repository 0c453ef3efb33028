//===- Elementwise.cpp - VJPs of elementwise ops ----------------*- C++ -*-===//
//
// add, sub, mul, div (NumPy broadcasting: a broadcast operand's gradient is
// summed back with lm.sum_to), neg, gelu, and sum_to (whose adjoint is the
// broadcast it undoes).
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult AddOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(reduceGradTo(b, getLoc(), dy, getLhs().getType()));
  operandGrads.push_back(reduceGradTo(b, getLoc(), dy, getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(reduceGradTo(b, getLoc(), dy, getLhs().getType()));
  // Negate after reducing: the sum is over fewer elements then.
  operandGrads.push_back(b.create<NegOp>(getLoc(), reduceGradTo(b, getLoc(), dy, getRhs().getType())));
  return success();
}

LogicalResult MulOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  // dy has the broadcast shape, so dy * operand keeps it.
  Value dl = b.create<MulOp>(loc, dy, getRhs());
  Value dr = b.create<MulOp>(loc, dy, getLhs());
  operandGrads.push_back(reduceGradTo(b, loc, dl, getLhs().getType()));
  operandGrads.push_back(reduceGradTo(b, loc, dr, getRhs().getType()));
  return success();
}

LogicalResult DivOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  // y = l / r:  dl = dy / r,  dr = -dy * l / r^2 = -(dy * (y / r)).
  Value dl = b.create<DivOp>(loc, dy, getRhs());
  Value yOverR = b.create<DivOp>(loc, getResult(), getRhs());
  Value dr = b.create<NegOp>(loc, b.create<MulOp>(loc, dy, yOverR));
  operandGrads.push_back(reduceGradTo(b, loc, dl, getLhs().getType()));
  operandGrads.push_back(reduceGradTo(b, loc, dr, getRhs().getType()));
  return success();
}

LogicalResult NegOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<NegOp>(getLoc(), resultGrads[0]));
  return success();
}

LogicalResult GeluOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      b.create<GeluGradOp>(getLoc(), getX(), resultGrads[0]));
  return success();
}

LogicalResult SumToOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(broadcastGradTo(b, getLoc(), resultGrads[0], getX().getType()));
  return success();
}
