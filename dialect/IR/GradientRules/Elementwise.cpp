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

LogicalResult GeluErfOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<GeluErfGradOp>(getLoc(), getX(), resultGrads[0]));
  return success();
}

LogicalResult SumToOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(broadcastGradTo(b, getLoc(), resultGrads[0], getX().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// The zoo's unary math. Each VJP is a composition of elementwise ops, so the
// backward fuses with its neighbours like the forward (no *_grad kernels).
//===----------------------------------------------------------------------===//

/// A rank-0 constant of `like`'s float element type.
static Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  auto type = RankedTensorType::get({}, llvm::cast<ShapedType>(like.getType()).getElementType());
  return buildSplat(b, loc, type, value);
}

LogicalResult TanhOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // dx = dy (1 - y^2) = dy - (dy y) y.
  Location loc = getLoc();
  Value dy = resultGrads[0], y = getResult();
  Value dyY = b.create<MulOp>(loc, dy, y);
  operandGrads.push_back(b.create<SubOp>(loc, dy, b.create<MulOp>(loc, dyY, y)));
  return success();
}

LogicalResult SigmoidOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // dx = dy y (1 - y) = dy y - (dy y) y.
  Location loc = getLoc();
  Value dy = resultGrads[0], y = getResult();
  Value dyY = b.create<MulOp>(loc, dy, y);
  operandGrads.push_back(b.create<SubOp>(loc, dyY, b.create<MulOp>(loc, dyY, y)));
  return success();
}

LogicalResult LogSigmoidOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  // d/dx log sigmoid(x) = 1 - sigmoid(x) = sigmoid(-x).
  Location loc = getLoc();
  Value s = b.create<SigmoidOp>(loc, b.create<NegOp>(loc, getX()));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], s));
  return success();
}

LogicalResult SoftplusOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // d/dx log(1 + exp(x)) = sigmoid(x).
  Location loc = getLoc();
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], b.create<SigmoidOp>(loc, getX())));
  return success();
}

LogicalResult ReluOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // dx = dy where x > 0 (0 at the kink, as PyTorch).
  Location loc = getLoc();
  Value mask = b.create<GtOp>(loc, getX(), scalar(b, loc, getX(), 0.0));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], mask));
  return success();
}

LogicalResult SiluOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // d/dx x s(x) = s + x s (1 - s) = s (1 + x - x s).
  Location loc = getLoc();
  Value x = getX();
  Value s = b.create<SigmoidOp>(loc, x);
  Value onePlusX = b.create<AddOp>(loc, x, scalar(b, loc, x, 1.0));
  Value inner = b.create<SubOp>(loc, onePlusX, b.create<MulOp>(loc, x, s));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], b.create<MulOp>(loc, s, inner)));
  return success();
}

LogicalResult ExpOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<MulOp>(getLoc(), resultGrads[0], getResult()));
  return success();
}

LogicalResult LogOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<DivOp>(getLoc(), resultGrads[0], getX()));
  return success();
}

LogicalResult SqrtOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // dx = dy / (2 y).
  Location loc = getLoc();
  Value half = b.create<MulOp>(loc, resultGrads[0], scalar(b, loc, getX(), 0.5));
  operandGrads.push_back(b.create<DivOp>(loc, half, getResult()));
  return success();
}

LogicalResult RsqrtOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // y = x^(-1/2): dx = -dy y^3 / 2.
  Location loc = getLoc();
  Value y = getResult();
  Value y3 = b.create<MulOp>(loc, b.create<MulOp>(loc, y, y), y);
  Value scaled = b.create<MulOp>(loc, resultGrads[0], scalar(b, loc, y, -0.5));
  operandGrads.push_back(b.create<MulOp>(loc, scaled, y3));
  return success();
}

LogicalResult SinOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], b.create<CosOp>(loc, getX())));
  return success();
}

LogicalResult CosOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value sin = b.create<SinOp>(loc, getX());
  operandGrads.push_back(b.create<NegOp>(loc, b.create<MulOp>(loc, resultGrads[0], sin)));
  return success();
}

LogicalResult StopGradientOp::buildAdjoint(OpBuilder &, ArrayRef<Value>,
                                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Comparisons are piecewise constant: no gradient. where routes dy by the mask.
//===----------------------------------------------------------------------===//

#define LM_NO_GRADIENT(OP)                                                                         \
  LogicalResult OP::buildAdjoint(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &grads) {   \
    grads.append({Value(), Value()});                                                              \
    return success();                                                                              \
  }
LM_NO_GRADIENT(GtOp)
LM_NO_GRADIENT(GeOp)
LM_NO_GRADIENT(LtOp)
LM_NO_GRADIENT(LeOp)
LM_NO_GRADIENT(EqOp)
LM_NO_GRADIENT(NeOp)
#undef LM_NO_GRADIENT

LogicalResult WhereOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], c = getCond();
  Value zero = scalar(b, loc, dy, 0.0);
  Value dl = b.create<WhereOp>(loc, c, dy, zero);
  Value dr = b.create<WhereOp>(loc, c, zero, dy);
  operandGrads.push_back(Value()); // the mask
  operandGrads.push_back(reduceGradTo(b, loc, dl, getLhs().getType()));
  operandGrads.push_back(reduceGradTo(b, loc, dr, getRhs().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// reduce_max: the gradient goes to the maxima, split evenly between ties.
//===----------------------------------------------------------------------===//

LogicalResult ReduceMaxOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value x = getX(), y = getResult();
  Value mask = b.create<EqOp>(loc, x, y);                         // x's shape
  Value count = b.create<SumToOp>(loc, y.getType(), mask);        // >= 1 per slot
  Value share = b.create<DivOp>(loc, resultGrads[0], count);      // y's shape
  operandGrads.push_back(b.create<MulOp>(loc, mask, share));      // broadcasts back to x
  return success();
}
