//===- EvalMode.cpp - -lm-eval-mode ----------------------------*- C++ -*-===//
//
// Dropout is a training-time regulariser: the train step keeps its lm.dropout
// ops, every other program (eval, forward, prefill, decode) computes the
// expectation, which inverted dropout makes the identity.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMEVALMODEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

struct EvalModePass : public lm::impl::LMEvalModePassBase<EvalModePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func->hasAttr("lm.train_step"))
        continue;
      func.walk([](DropoutOp op) {
        op.getResult().replaceAllUsesWith(op.getX());
        op.erase();
      });
    }
  }
};

} // namespace
