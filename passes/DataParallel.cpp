//===- DataParallel.cpp - -lm-data-parallel ---------------------*- C++ -*-===//
//
// Data parallelism as a rewrite of the train step (Passes.td): the values a
// step returns for the optimizer and the log (the loss, scalar metrics, the
// parameter gradients) become their mean over the ranks of mesh axis 0, by
// lm.all_reduce. The runtime's all-reduce sums in rank order and divides by
// the rank count (runtime/comm/communicator.h), the arithmetic of gradient
// accumulation, so D ranks reproduce the 1-process run with accumulate = D.
// Under ZeRO stage 2 the gradients stay the rank's own: lmrt reduce-scatters
// them into the slices each rank's optimizer shard updates; under stage 3
// -lm-zero-shard-params reduce-scatters them in the train step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

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
    if (ranks <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("lm.train_step") || f.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      OpBuilder b(ret);
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        // ZeRO-2: lmrt reduce-scatters the gradients (runtime/cpu/zero_shards.h);
        // ZeRO-3: -lm-zero-shard-params, in the train step.
        if (!isReduced(f, i) || (stage >= 2 && f.getResultAttr(i, "lm.grad_of")))
          continue;
        Value v = ret.getOperand(i);
        ret.setOperand(i, b.create<AllReduceOp>(v.getLoc(), v, kDataAxis, ranks, /*mean=*/true));
      }
    }
  }
};

} // namespace
