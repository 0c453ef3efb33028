//===- Broadcasting.h - Adjoints of broadcasting ----------------*- C++ -*-===//
//
// Builders shared by the gradient rules (and -lm-autodiff) for the two
// directions of NumPy broadcasting: a gradient flowing back into a broadcast
// operand is summed (lm.sum_to), and a gradient flowing back through lm.sum_to
// is broadcast (an lm.add onto zeros).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::lm {

/// Returns a splat lm.constant of `type` (a statically shaped float tensor:
/// gradients are float, and -lm-autodiff rejects any other parameter type)
/// holding `value`.
Value buildSplat(OpBuilder &builder, Location loc, Type type, double value);

/// Returns `grad` summed down to `type` with lm.sum_to, or `grad` itself when it
/// already has that type (no op for operands that were not broadcast).
Value reduceGradTo(OpBuilder &builder, Location loc, Value grad, Type type);

/// Returns `grad` broadcast up to `type` (as `zeros(type) + grad`, the only
/// broadcast the dialect has), or `grad` itself when it already has that type.
Value broadcastGradTo(OpBuilder &builder, Location loc, Value grad, Type type);

} // namespace mlir::lm
