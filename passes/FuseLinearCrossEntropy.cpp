//===- FuseLinearCrossEntropy.cpp - -lm-fuse-linear-cross-entropy -*- C++ -*-===//
//
// The output projection and the cross-entropy as one op chunked over rows
// (Liger Kernel's FusedLinearCrossEntropy): the [rows, V] logits, and in a train
// step their gradient, are the largest tensors of a language model's step (GPT-2
// small at 8 x 1024 tokens: 1.65 GB of f32 logits), and they are needed only
// chunk by chunk. The pass matches the ops autodiff and canonicalization leave:
//
//   logits = matmul(h, w)                       (transpose_rhs for a tied table)
//   dlogits, loss = cross_entropy_with_grad(logits, t, seed)
//   dh = matmul(dlogits, w, transpose_rhs = !tr)
//   dw = matmul(reshape(dlogits), reshape(h), transpose_lhs)      (tr)
//      | matmul(reshape(h), reshape(dlogits), transpose_lhs)      (!tr)
//
// and, in a forward program, loss = cross_entropy(matmul(h, w), t). It runs
// before -lm-fuse, so that neither matmul is taken into an epilogue first.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "contract/linear_cross_entropy.h"
#include "dialect/IR/LMOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMFUSELINEARCROSSENTROPYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The logits matmul of `logits` when it qualifies: lhs not transposed (rows of
/// h), a rank-2 rhs (one weight for every row), and the loss its only reader.
MatmulOp logitsMatmul(Value logits) {
  auto mm = logits.getDefiningOp<MatmulOp>();
  if (!mm || mm.getTransposeLhs() || !logits.hasOneUse())
    return MatmulOp();
  auto w = cast<ShapedType>(mm.getRhs().getType());
  auto h = cast<ShapedType>(mm.getLhs().getType());
  if (w.getRank() != 2 || h.getRank() < 2)
    return MatmulOp();
  return mm;
}

/// `v` itself, or the input of the reshape that defines it.
Value throughReshape(Value v) {
  if (auto r = v.getDefiningOp<ReshapeOp>())
    return r.getX();
  return v;
}

int64_t chunkFor(Value h, Value w, bool tr, int64_t option) {
  auto hs = cast<ShapedType>(h.getType()).getShape();
  auto ws = cast<ShapedType>(w.getType()).getShape();
  int64_t d = hs.back(), v = tr ? ws[0] : ws[1];
  int64_t rows = cast<ShapedType>(h.getType()).getNumElements() / std::max<int64_t>(d, 1);
  if (option > 0)
    return std::min(option, std::max<int64_t>(rows, 1));
  return lmrt::kernels::linearCrossEntropyChunkRows(rows, v, d);
}

/// The train step's form. Fails (changing nothing) unless every reader of the
/// logits' gradient is one of its two matmuls.
LogicalResult fuseWithGrad(CrossEntropyWithGradOp ce, int64_t chunkOption) {
  MatmulOp mm = logitsMatmul(ce.getLogits());
  if (!mm)
    return failure();
  Value h = mm.getLhs(), w = mm.getRhs(), dl = ce.getDlogits();
  const bool tr = mm.getTransposeRhs();
  MatmulOp dhOp, dwOp;
  ReshapeOp dlFlat;
  auto isDw = [&](MatmulOp op, Value dl2) {
    if (!op.getTransposeLhs() || op.getTransposeRhs())
      return false;
    Value first = tr ? op.getLhs() : op.getRhs(), other = tr ? op.getRhs() : op.getLhs();
    return first == dl2 && throughReshape(other) == h && op.getType() == w.getType();
  };
  for (Operation *user : dl.getUsers()) {
    if (auto op = dyn_cast<MatmulOp>(user)) {
      if (!dhOp && op.getLhs() == dl && op.getRhs() == w && !op.getTransposeLhs() &&
          op.getTransposeRhs() == !tr && op.getType() == h.getType()) {
        dhOp = op;
        continue;
      }
      if (!dwOp && isDw(op, dl)) {  // rank-2 h: no flattening
        dwOp = op;
        continue;
      }
      return failure();
    }
    auto flat = dyn_cast<ReshapeOp>(user);
    if (!flat || dlFlat || !flat->hasOneUse())
      return failure();
    auto op = dyn_cast<MatmulOp>(*flat->getUsers().begin());
    if (!op || dwOp || !isDw(op, flat.getResult()))
      return failure();
    dlFlat = flat;
    dwOp = op;
  }
  if (!dhOp || !dwOp)
    return failure();

  OpBuilder b(ce);
  auto fused = b.create<LinearCrossEntropyWithGradOp>(
      FusedLoc::get(ce.getContext(), {mm.getLoc(), ce.getLoc()}), h, w, ce.getTargets(), ce.getDloss(),
      b.getBoolAttr(tr), ce.getIgnoreIndexAttr(), b.getI64IntegerAttr(chunkFor(h, w, tr, chunkOption)));
  Value hFlat = tr ? dwOp.getRhs() : dwOp.getLhs();
  dhOp.getResult().replaceAllUsesWith(fused.getDh());
  dwOp.getResult().replaceAllUsesWith(fused.getDw());
  ce.getLoss().replaceAllUsesWith(fused.getLoss());
  dwOp.erase();
  if (dlFlat)
    dlFlat.erase();
  dhOp.erase();
  ce.erase();
  mm.erase();
  if (auto r = hFlat.getDefiningOp<ReshapeOp>(); r && r->use_empty())
    r.erase();
  return success();
}

/// The forward's form (an objective, an eval program).
LogicalResult fuseForward(CrossEntropyOp ce, int64_t chunkOption) {
  MatmulOp mm = logitsMatmul(ce.getLogits());
  if (!mm)
    return failure();
  OpBuilder b(ce);
  Value h = mm.getLhs(), w = mm.getRhs();
  const bool tr = mm.getTransposeRhs();
  auto fused = b.create<LinearCrossEntropyOp>(FusedLoc::get(ce.getContext(), {mm.getLoc(), ce.getLoc()}), h, w,
                                              ce.getTargets(), b.getBoolAttr(tr), ce.getIgnoreIndexAttr(),
                                              b.getI64IntegerAttr(chunkFor(h, w, tr, chunkOption)));
  ce.getResult().replaceAllUsesWith(fused.getLoss());
  ce.erase();
  mm.erase();
  return success();
}

struct FuseLinearCrossEntropyPass
    : lm::impl::LMFuseLinearCrossEntropyPassBase<FuseLinearCrossEntropyPass> {
  using LMFuseLinearCrossEntropyPassBase::LMFuseLinearCrossEntropyPassBase;

  void runOnOperation() override {
    SmallVector<CrossEntropyWithGradOp> withGrad;
    SmallVector<CrossEntropyOp> forward;
    getOperation().walk([&](Operation *op) {
      if (auto ce = dyn_cast<CrossEntropyWithGradOp>(op))
        withGrad.push_back(ce);
      else if (auto ce = dyn_cast<CrossEntropyOp>(op))
        forward.push_back(ce);
    });
    for (CrossEntropyWithGradOp ce : withGrad)
      (void)fuseWithGrad(ce, chunkRows);
    for (CrossEntropyOp ce : forward)
      (void)fuseForward(ce, chunkRows);
  }
};

} // namespace
