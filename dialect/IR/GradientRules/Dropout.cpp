//===- Dropout.cpp - VJP of dropout ------------------------------*- C++ -*-===//
//
// y = x * m / (1 - p) with a mask m that is a pure function of (key, site,
// element), so dx = dy * m / (1 - p) is the same op on dy: the backward
// regenerates the mask and nothing but the key is kept for it. The key is i32
// and has no gradient.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

LogicalResult DropoutOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<DropoutOp>(getLoc(), resultGrads[0], getKey(), getPAttr(), getSiteAttr()));
  operandGrads.push_back(Value());
  return success();
}
