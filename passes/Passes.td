//===- Passes.td - lm passes -------------------------------*- tablegen -*-===//
//
// Every pass of the lm compiler, usable from lm-opt by its flag.
//
//===----------------------------------------------------------------------===//

#ifndef LM_PASSES_TD
#define LM_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Autodiff
//===----------------------------------------------------------------------===//

def LMAutodiffPass : Pass<"lm-autodiff", "mlir::ModuleOp"> {
  let summary = "Adds a train step (loss and parameter gradients) for every objective";
  let description = [{
    For every `func.func` with the unit attribute `lm.objective`, which must
    return one scalar float loss and whose `lm.param` arguments (each named by
    a string) must be statically shaped float tensors, adds
    `@<name>_train_step`: same arguments and
    argument attributes, unit attribute `lm.train_step`, results `(loss,
    dloss/dp for every lm.param argument in order)`, each gradient result with
    `{lm.grad_of = "<param name>"}`. The body recomputes the forward (a clone
    of the objective's body) and then runs a reverse sweep built from the ops'
    GradientOpInterface rules, accumulating with lm.add where a value is used
    more than once. Parameters that do not influence the loss get zeros.
    See docs/autodiff.md.
  }];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

#endif // LM_PASSES_TD
