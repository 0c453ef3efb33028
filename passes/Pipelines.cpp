//===- Pipelines.cpp - lm pass pipelines ------------------------*- C++ -*-===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::lm::buildLMTrainPipeline(OpPassManager &pm) {
  pm.addPass(createLMAutodiffPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::lm::registerLMPasses() {
  registerLMTransformsPasses();
  PassPipelineRegistration<>("lm-train-pipeline",
                             "Autodiff every objective, then canonicalize and CSE",
                             [](OpPassManager &pm) { buildLMTrainPipeline(pm); });
}
