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
// a run of all-reduces as one collective on its communication thread while the
// backward goes on; the sums are the same bits whatever the buckets (each
// element's rank-order sum), so the bucket size is a speed setting only.
// Under ZeRO stages 2 and 3 the gradients stay the rank's own here:
// -lm-zero-shard-params reduce-scatters them in the train step, into the slices
// each rank's optimizer shard updates.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMDATAPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The mesh axes' order in lm.mesh and in the collectives' mesh_axis.
constexpr int64_t kDataAxis = 0;
/// PyTorch DDP's bucket_cap_mb.
constexpr double kDefaultBucketMb = 25;

/// Whether result `i` of the train step is averaged over the ranks: the loss,
/// a gradient, or another float scalar (a metric).
bool isReduced(func::FuncOp f, unsigned i) {
  if (i == 0 || f.getResultAttr(i, "lm.grad_of"))
    return true;
  auto type = dyn_cast<RankedTensorType>(f.getResultTypes()[i]);
  return type && type.getRank() == 0 && isa<FloatType>(type.getElementType());
}

/// A gradient result of the train step and where it is computed.
struct Gradient {
  unsigned result;     // its index among the return's operands
  Operation *def;      // the op of the step's body that computes it, or null (placed before the return)
  int64_t bytes;
};

/// Bytes of a ranked tensor (0 for anything else: it never closes a bucket alone).
int64_t tensorBytes(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * (int64_t)((type.getElementTypeBitWidth() + 7) / 8);
}

/// The gradients in the order the backward computes them: by their op's place in
/// the body, those of one op by result number (stable: then by result index).
std::vector<Gradient> gradientsInBackwardOrder(func::FuncOp f, func::ReturnOp ret) {
  std::vector<Gradient> grads;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    if (!f.getResultAttr(i, "lm.grad_of"))
      continue;
    Value v = ret.getOperand(i);
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() != ret->getBlock())
      def = nullptr;
    grads.push_back({i, def, tensorBytes(v.getType())});
  }
  auto position = [&](const Gradient &g) {
    return g.def ? std::make_pair(g.def, (unsigned)cast<OpResult>(ret.getOperand(g.result)).getResultNumber())
                 : std::make_pair(ret.getOperation(), 0u);
  };
  llvm::stable_sort(grads, [&](const Gradient &a, const Gradient &b) {
    auto pa = position(a), pb = position(b);
    if (pa.first != pb.first)
      return pa.first->isBeforeInBlock(pb.first);
    return pa.second < pb.second;
  });
  return grads;
}

/// Cuts the gradients (in backward order) into buckets of at most `capBytes`
/// (every gradient alone with 0): a gradient that would take the bucket past the
/// size starts a new one, so one larger than the size is a bucket of its own (lmrt
/// copies a bucket of several gradients into one buffer; a large one alone is not
/// copied). Buckets are cut only between two ops, so that two buckets' all-reduces
/// are never adjacent (lmrt takes a run of adjacent all-reduces for one bucket).
std::vector<std::vector<Gradient>> buckets(const std::vector<Gradient> &grads, int64_t capBytes) {
  const int64_t cap = std::max<int64_t>(capBytes, 1);
  std::vector<std::vector<Gradient>> out;
  int64_t bytes = 0;
  for (const Gradient &g : grads) {
    if (out.empty() || ((bytes >= cap || bytes + g.bytes > cap) && out.back().back().def != g.def)) {
      out.emplace_back();
      bytes = 0;
    }
    out.back().push_back(g);
    bytes += g.bytes;
  }
  return out;
}

struct DataParallelPass : lm::impl::LMDataParallelPassBase<DataParallelPass> {
  using LMDataParallelPassBase::LMDataParallelPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t ranks = data != 0 ? data : meshEntry(module, "data");
    const int64_t stage = zero >= 0 ? zero : meshEntry(module, "zero");
    double mib = bucketMb;
    if (mib < 0) {
      mib = kDefaultBucketMb;
      if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
        if (auto v = dyn_cast_or_null<FloatAttr>(mesh.get("bucket_mb")))
          mib = v.getValueAsDouble();
    }
    if (ranks < 0) {
      module.emitError() << "-lm-data-parallel: data must be at least 1, got " << ranks;
      return signalPassFailure();
    }
    if (!(mib >= 0 && mib <= double(int64_t(1) << 20))) {
      module.emitError() << "-lm-data-parallel: bucket_mb must be in [0, " << (int64_t(1) << 20) << "] MiB, got "
                         << mib;
      return signalPassFailure();
    }
    if (ranks <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("lm.train_step") || f.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      // The gradients (not under ZeRO-2 and -3: -lm-zero-shard-params reduce-scatters them
      // in the train step), bucket by bucket.
      if (stage < 2)
        for (const std::vector<Gradient> &bucket : buckets(gradientsInBackwardOrder(f, ret), (int64_t)(mib * double(1 << 20)))) {
          Operation *last = nullptr;
          for (const Gradient &g : bucket)
            if (g.def && (!last || last->isBeforeInBlock(g.def)))
              last = g.def;
          OpBuilder b(ret);
          if (last && bucket.back().def)
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
