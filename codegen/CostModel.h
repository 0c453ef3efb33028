//===- CostModel.h - Predicted FLOPs of one plan step -----------*- C++ -*-===//
//
// The FLOP model behind Step.flops, Program.flops and Plan.flops_per_step
// (documented in docs/compilation.md). GEMMs and attention are counted exactly
// (2 per multiply-add); elementwise, normalisation and loss ops get a small
// per-element constant; data movement (reshape, transpose, slice, copy,
// embedding lookups) counts zero.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace mlir::lm {

/// Predicted floating-point operations of `op` run as the runtime kernel
/// `kernel` (the op name without "lm."). Operand and result types must be
/// statically shaped tensors (the plan writer checks that first).
int64_t estimateFlops(Operation *op, llvm::StringRef kernel);

} // namespace mlir::lm
