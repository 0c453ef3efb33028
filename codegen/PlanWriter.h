//===- PlanWriter.h - lm module to runtime plan -----------------*- C++ -*-===//
//
// Plan translation: turns a module that went through the compile pipeline (it
// holds the objective, its `_train_step` and optionally the model functions)
// into the plan protobuf: parameters, inputs, one program per function with a
// liveness-based memory plan, predicted FLOPs and peak memory, the training
// config, and the generated kernels' sources.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "contract/plan.pb.h"
#include <string>

namespace mlir::lm {

struct PlanTranslationOptions {
  std::string sourcePath; ///< recorded in Plan.source
  /// Targets the generated kernels (lm.fusion regions) are to be compiled for;
  /// each becomes one Plan.kernel_libraries entry holding the kernels' source
  /// for it.
  bool targetCpu = true, targetCuda = false;
};

/// Translates the module into the plan (a translation in MLIR's sense: it
/// runs after the pass pipeline and leaves the IR alone). Reports a diagnostic
/// (at the offending op) and fails when the module breaks the plan contract
/// (missing objective or train step, an op the runtime has no kernel for, a
/// dynamic shape, ...); the plan it returns keeps the contract
/// (contract::checkPlan). These are all the checks of -lm-check-plan-contract.
/// Every lm.fusion region becomes a "fused" step running a generated kernel
/// (identical bodies share one), whose source is emitted for each requested
/// target. No compiler runs here: each kernel library's image is empty (with
/// its checksum) until kernel compilation (compilePlanKernels,
/// codegen/KernelCompiler.h) fills it in.
FailureOr<lmrt::plan::Plan> translateModuleToPlan(ModuleOp module, const PlanTranslationOptions &options);

} // namespace mlir::lm
