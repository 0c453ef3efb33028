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

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::lm
