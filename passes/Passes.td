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
    Arguments that also carry the unit attribute `lm.frozen` get no gradient
    result (frozen parameters: the optimizer never updates them).
    See docs/autodiff.md.
  }];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def LMFusePass : Pass<"lm-fuse", "mlir::ModuleOp"> {
  let summary = "Groups elementwise chains, bias reductions and GEMM epilogues into lm.fusion regions";
  let description = [{
    In every function body, forms `lm.fusion` regions (one generated kernel
    each) greedily from the end backwards: elementwise ops (add, sub, mul,
    div, neg, gelu, gelu_grad) over one iteration space with their
    broadcast operands; an `lm.sum_to` over leading dimensions with the
    elementwise producers of its operand; or the elementwise consumers of one
    `lm.matmul` (rank-2 rhs, lhs not transposed) as its epilogue. Values
    used outside a group become extra results. Layer norm, softmax,
    attention and cross-entropy are single kernels already and are left
    alone. See docs/fusion.md.
  }];
  let options = [
    Option<"maxOps", "max-ops", "unsigned", "64",
           "Largest number of ops in one fused region">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

#endif // LM_PASSES_TD
