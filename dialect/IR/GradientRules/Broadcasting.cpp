//===- Broadcasting.cpp - Adjoints of broadcasting --------------*- C++ -*-===//

#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::lm;

Value mlir::lm::buildSplat(OpBuilder &builder, Location loc, Type type, double value) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  Attribute scalar = builder.getFloatAttr(tensor.getElementType(), value);
  return builder.create<ConstantOp>(loc, type, DenseElementsAttr::get(tensor, scalar));
}

Value mlir::lm::reduceGradTo(OpBuilder &builder, Location loc, Value grad, Type type) {
  if (grad.getType() == type)
    return grad;
  return builder.create<SumToOp>(loc, type, grad);
}

Value mlir::lm::broadcastGradTo(OpBuilder &builder, Location loc, Value grad, Type type) {
  if (grad.getType() == type)
    return grad;
  // zeros(type) + grad: grad broadcasts to `type`, so that is the inferred type.
  return builder.create<AddOp>(loc, buildSplat(builder, loc, type, 0.0), grad);
}
