//===- CheckPlanContract.cpp - The plan contract as a pass ----------------===//
//
// -lm-check-plan-contract: plan translation with the plan thrown away, so the
// pass checks what the plan writer checks and nothing else.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "codegen/PlanWriter.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMCHECKPLANCONTRACTPASS
#include "codegen/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

struct LMCheckPlanContractPass : public lm::impl::LMCheckPlanContractPassBase<LMCheckPlanContractPass> {
  void runOnOperation() override {
    // Plan.source and the kernel targets are lmc's to choose; the checks ask
    // only for at least one target, which the default (cpu) is.
    if (failed(translateModuleToPlan(getOperation(), PlanTranslationOptions())))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
