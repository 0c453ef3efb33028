//===- DataParallel.cpp - -lm-data-parallel ---------------------*- C++ -*-===//
//
// Data parallelism as a rewrite of the train step (Passes.td): the values a
// step returns for the optimizer and the log (the loss, scalar metrics, the
// parameter gradients) become their mean over the ranks of mesh axis 0, by
// lm.all_reduce. The runtime's all-reduce sums in rank order and divides by
// the rank count (runtime/comm/communicator.h), the arithmetic of gradient
// accumulation, so D ranks reproduce the 1-process run with accumulate = D.
// The gradients are all-reduced in buckets, as PyTorch DDP does: in the order
// the backward computes them, about bucket_mb MiB each, a bucket's all-reduces
// together right after the op that computes its last gradient. lmrt runs such
// a run of all-reduces as one collective, started where the executor reaches
// it and finished while the backward goes on (MPI's non-blocking calls); the
// sums are the same bits whatever the buckets (each element's rank-order sum),
// so the bucket size is a speed setting only.
// Under ZeRO stages 2 and 3 the gradients stay the rank's own here:
// -lm-zero-shard-params reduce-scatters them in the train step, into the slices
// each rank's optimizer shard updates.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/GradientBuckets.h"

#include "dialect/IR/LMOps.h"


namespace mlir::lm {
#define GEN_PASS_DEF_LMDATAPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The mesh axes' order in lm.mesh and in the collectives' mesh_axis.
constexpr int64_t kDataAxis = 0;

/// Whether result `i` of the train step is averaged over the ranks: the loss,
/// a gradient, or another float scalar (a metric).
bool isReduced(func::FuncOp f, unsigned i) {
  if (i == 0 || f.getResultAttr(i, "lm.grad_of"))
    return true;
  auto type = dyn_cast<RankedTensorType>(f.getResultTypes()[i]);
  return type && type.getRank() == 0 && isa<FloatType>(type.getElementType());
}

struct DataParallelPass : lm::impl::LMDataParallelPassBase<DataParallelPass> {
  using LMDataParallelPassBase::LMDataParallelPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t ranks = data != 0 ? data : meshEntry(module, "data");
    const int64_t stage = zero >= 0 ? zero : meshEntry(module, "zero");
    if (ranks < 0) {
      module.emitError() << "-lm-data-parallel: data must be at least 1, got " << ranks;
      return signalPassFailure();
    }
    FailureOr<int64_t> cap = bucketBytes(module, bucketMb, "lm-data-parallel");
    if (failed(cap))
      return signalPassFailure();
    if (ranks <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("lm.train_step") || f.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      // The gradients (not under ZeRO-2 and -3: -lm-zero-shard-params reduce-scatters them
      // in the train step), bucket by bucket.
      if (stage < 2)
        for (const std::vector<Gradient> &bucket : gradientBuckets(gradientsInBackwardOrder(f, ret), *cap)) {
          OpBuilder b(ret);
          if (Operation *last = bucketEnd(bucket))
            b.setInsertionPointAfter(last);
          for (const Gradient &g : bucket) {
            Value v = ret.getOperand(g.result);
            ret.setOperand(g.result, b.create<AllReduceOp>(v.getLoc(), v, kDataAxis, ranks, /*mean=*/true));
          }
        }
      // The loss and the metrics, right after the op that computes each (in the
      // forward: they overlap the backward, and do not join the last bucket, whose
      // all-reduces would otherwise be adjacent to theirs before the return).
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        if (!isReduced(f, i) || f.getResultAttr(i, "lm.grad_of"))
          continue;
        Value v = ret.getOperand(i);
        OpBuilder b(ret);
        if (Operation *def = v.getDefiningOp(); def && def->getBlock() == ret->getBlock())
          b.setInsertionPointAfter(def);
        ret.setOperand(i, b.create<AllReduceOp>(v.getLoc(), v, kDataAxis, ranks, /*mean=*/true));
      }
    }
  }
};

} // namespace
