//===- Passes.h - lm passes -------------------------------------*- C++ -*-===//
//
// Declarations of the lm passes (generated from Passes.td) and the logic they
// export for reuse.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::lm {

/// Adds `@<name>_train_step` next to the objective `func` (see the pass
/// description). Emits an error at the offending op or function and fails when
/// the objective cannot be differentiated.
FailureOr<func::FuncOp> buildTrainStep(func::FuncOp objective);

/// The fusion rules of -lm-fuse (docs/fusion.md), shared with codegen, which
/// lowers what they admit: an elementwise op a kernel computes per element; a
/// sum_to over leading dimensions; a matmul whose product an epilogue reads.
bool isFusibleElementwise(Operation *op);
bool isFusibleReduction(Operation *op);
bool isEpilogueMatmul(Operation *op);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::lm
