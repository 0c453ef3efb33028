//===- PlanWriter.h - lm module to runtime plan -----------------*- C++ -*-===//
//
// Turns a module that went through the train pipeline (it holds the objective,
// its `_train_step` and optionally the model function) into the plan protobuf:
// parameters, inputs, one program per function with a liveness-based memory
// plan, predicted FLOPs and peak memory, and the training config.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/KernelCompiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "contract/plan.pb.h"
#include <string>

namespace mlir::lm {

struct PlanOptions {
  std::string sourcePath; ///< recorded in Plan.source
  /// Targets the generated kernels (lm.fusion regions) are compiled for; each
  /// becomes one Plan.kernel_libraries entry.
  bool targetCpu = true, targetCuda = false;
  KernelCompileOptions compile;
};

/// What codegen did besides the plan, for lmc's summary line.
struct PlanReport {
  unsigned kernels = 0;          ///< generated kernels in the plan
  unsigned cachedLibraries = 0;  ///< libraries taken from the kernel cache
  unsigned compiledLibraries = 0;
};

/// Builds the plan. Reports a diagnostic (at the offending op) and fails when the
/// module breaks the plan contract (missing objective or train step, an op the
/// runtime has no kernel for, a dynamic shape, ...). Every lm.fusion region
/// becomes a "fused" step running a generated kernel (identical bodies share
/// one), compiled for the requested targets and embedded in the plan.
FailureOr<lmrt::plan::Plan> buildPlan(ModuleOp module, const PlanOptions &options,
                                      PlanReport *report = nullptr);

} // namespace mlir::lm
