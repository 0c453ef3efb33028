//===- Passes.td - codegen passes --------------------------*- tablegen -*-===//
//
// The passes of codegen, usable from lm-opt by their flag.
//
//===----------------------------------------------------------------------===//

#ifndef LM_CODEGEN_PASSES_TD
#define LM_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Plan contract
//===----------------------------------------------------------------------===//

def LMCheckPlanContractPass : Pass<"lm-check-plan-contract", "mlir::ModuleOp"> {
  let summary = "Fails, at the offending op, if the module breaks the plan contract (the plan writer's checks)";
  let description = [{
    Translates the module into a plan (`translateModuleToPlan`,
    codegen/PlanWriter.h) and throws the plan away: the checks are exactly
    those of the translation lmc writes its plans with (its own, reported at
    the offending op, argument or function, then `contract::checkPlan` on the
    whole plan), so they cannot drift from what lmc writes. Runs no compiler
    and touches no kernel cache (the generated kernels' sources are emitted,
    not compiled), and leaves the IR unchanged. The last stage of
    `lm-compile-pipeline`. See docs/compilation.md ("Contract errors").
  }];
}

#endif // LM_CODEGEN_PASSES_TD
