//===- Pipelines.h - lm pass pipelines --------------------------*- C++ -*-===//
//
// Pipelines as C++ functions, shared by lmc and lm-opt so both run exactly the
// same passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Pass/PassManager.h"

namespace mlir::lm {

/// The training pipeline: -lm-autodiff, then -canonicalize and -cse to fold
/// the backward graph (dead adjoints, chained reshapes and transposes,
/// duplicate constants).
void buildLMTrainPipeline(OpPassManager &pm);

/// Registers every lm pass and the "lm-train-pipeline" pipeline with the
/// global registry (for lm-opt and lmc's pass options).
void registerLMPasses();

} // namespace mlir::lm
