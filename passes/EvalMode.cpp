//===- EvalMode.cpp - -lm-eval-mode ----------------------------*- C++ -*-===//
//
// Dropout is a training-time regulariser: the train step keeps its lm.dropout
// ops and its attention dropout, every other program (eval, forward, prefill,
// decode) computes the expectation, which inverted dropout makes the identity.
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

bool rankZero(Value v) { return cast<RankedTensorType>(v.getType()).getRank() == 0; }

/// A biased_attention with attention dropout, made the op the frontend emits for
/// the same call without dropout: lm.attention (no mask) or lm.masked_attention
/// when it has no bias, segments or scale of its own (the frontend routed it to
/// biased_attention for the dropout alone: a rank-0 bias shifts every score
/// alike and changes nothing), else biased_attention with rate 0 and no key.
/// So an eval program is the one the model has without attention dropout.
void dropAttentionDropout(BiasedAttentionOp op) {
  OpBuilder b(op);
  Value r;
  if (rankZero(op.getBias()) && rankZero(op.getSegments()) && op.getScale().isZero()) {
    if (rankZero(op.getMask()))
      r = b.create<AttentionOp>(op.getLoc(), op.getQ(), op.getK(), op.getV(), op.getNumHeads(), op.getCausal(),
                                op.getNumKvHeads());
    else
      r = b.create<MaskedAttentionOp>(op.getLoc(), op.getQ(), op.getK(), op.getV(), op.getMask(), op.getNumHeads(),
                                      op.getCausal(), op.getNumKvHeads());
  } else {
    auto i32 = RankedTensorType::get({}, b.getI32Type());
    Value none = b.create<ConstantOp>(op.getLoc(), TypeRange{i32}, ValueRange{},
                                      ArrayRef<NamedAttribute>{b.getNamedAttr(
                                          "value", DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)))});
    r = b.create<BiasedAttentionOp>(op.getLoc(), op.getQ(), op.getK(), op.getV(), op.getMask(), op.getBias(),
                                    op.getSegments(), none, op.getNumHeads(), op.getCausal(), op.getNumKvHeads(),
                                    op.getScale(), llvm::APFloat(0.0), 0);
  }
  // The operands the frontend made for "none" die with the op.
  SmallVector<Operation *> defs;
  for (Value v : {op.getMask(), op.getBias(), op.getSegments()})
    if (Operation *d = v.getDefiningOp(); d && isa<ConstantOp>(d))
      defs.push_back(d);
  op.getResult().replaceAllUsesWith(r);
  op.erase();
  for (Operation *d : defs)
    if (d->use_empty())
      d->erase();
}

struct EvalModePass : public lm::impl::LMEvalModePassBase<EvalModePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func->hasAttr("lm.train_step"))
        continue;
      func.walk([](DropoutOp op) {
        op.getResult().replaceAllUsesWith(op.getX());
        op.erase();
      });
      SmallVector<BiasedAttentionOp> dropping;
      func.walk([&](BiasedAttentionOp op) {
        if (!op.getDropout().isZero())
          dropping.push_back(op);
      });
      for (BiasedAttentionOp op : dropping)
        dropAttentionDropout(op);
    }
  }
};

} // namespace
