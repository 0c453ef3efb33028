//===- ZeroShardParams.cpp - -lm-zero-shard-params --------------*- C++ -*-===//
//
// ZeRO stages 2 and 3 as a rewrite of the per-rank program (Passes.td). Stage 3: each
// parameter argument becomes the rank's slice of it, the slice of ZeRO's
// stages 1 and 2 (the parameter's elements in row-major order cut into D
// slices of ceil(n / D), rank 0 first; here every slice is padded to that
// size, so the slices concatenate to a tensor the ranks divide). Right before
// each op that reads the parameter the slices are all-gathered, cut to n and
// reshaped; the gathered tensor lives across that op only, so a parameter
// read in the forward and again in the backward is gathered twice, never kept
// across the step. With prefetch_mb > 0 the all-gathers then move ahead of
// earlier ops (prefetchGathers), their tensors live from there. Each gradient is reduce-scattered right after it is
// computed (flattened, padded with zeros), then divided by D: the rank-order sum divided
// by D of its own slice, the arithmetic (and so the bits) of the mean
// -lm-data-parallel's all-reduce computes for those elements. The reduce-scatters go
// in buckets of about bucket_mb MiB, as -lm-data-parallel's all-reduces do
// (GradientBuckets.h): side by side after the bucket's last gradient, which lmrt runs
// as one collective (the same bits: each element's rank-order sum).
//
// Under stage 2 only the gradients are rewritten so (the parameters stay whole
// on every rank): the train step returns the rank's slice of each gradient's
// mean, and the whole local gradient is a temporary of the arena, not a buffer
// of its own (ZeRO's 4P + (4P + 8P) / D).
//
// It runs after -lm-data-parallel (which leaves the gradients unreduced from
// stage 2 on) and after CSE: the gathers are Pure, and CSE would merge a
// parameter's gathers into one value live across the step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/GradientBuckets.h"

#include "dialect/IR/LMOps.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMZEROSHARDPARAMSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The mesh axes' order in lm.mesh and in the collectives' mesh_axis.
constexpr int64_t kDataAxis = 0;
/// The argument attribute holding a sliced parameter's logical (whole) type.
constexpr StringLiteral kLogicalAttr = "lm.zero_logical";
/// The default cap on the gathered bytes issued ahead of the op that reads them: none.
/// On the CPU ranks measured (docs/distributed.md, "Stage 3") a prefetch gained no time
/// (Open MPI moves the bytes only inside its calls, between the steps, on the cores the
/// compute uses) and cost memory.
constexpr double kDefaultPrefetchMb = 0;

/// The padded slice of `whole` each of `ranks` ranks holds: ceil(n / ranks)
/// elements, one dimension.
RankedTensorType sliceType(RankedTensorType whole, int64_t ranks) {
  int64_t n = whole.getNumElements();
  return RankedTensorType::get({(n + ranks - 1) / ranks}, whole.getElementType());
}

/// The op of `f`'s entry block that is or holds `op`.
Operation *topLevel(func::FuncOp f, Operation *op) {
  while (op->getBlock() != &f.getBody().front())
    op = op->getParentOp();
  return op;
}

struct ZeroShardParamsPass : lm::impl::LMZeroShardParamsPassBase<ZeroShardParamsPass> {
  using LMZeroShardParamsPassBase::LMZeroShardParamsPassBase;
  int64_t stage_ = 3;  // the ZeRO stage of the module being rewritten

  /// The prefetch cap in bytes: the pass option, else lm.mesh's prefetch_mb, else
  /// kDefaultPrefetchMb.
  FailureOr<int64_t> prefetchBytes(ModuleOp module) {
    double mib = prefetchMb;
    if (mib < 0) {
      mib = kDefaultPrefetchMb;
      if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
        if (auto v = dyn_cast_or_null<FloatAttr>(mesh.get("prefetch_mb")))
          mib = v.getValueAsDouble();
    }
    if (!(mib >= 0 && mib <= double(int64_t(1) << 20))) {
      module.emitError() << "-lm-zero-shard-params: prefetch_mb must be in [0, " << (int64_t(1) << 20)
                         << "] MiB, got " << mib;
      return failure();
    }
    return (int64_t)(mib * double(1 << 20));
  }

  /// Records parameter `name` of `f`, of type `type`, in `logical`, after checking that
  /// ZeRO can slice it; returns false after an error.
  bool wholeParameter(func::FuncOp f, StringRef name, Type type, llvm::StringMap<RankedTensorType> &logical) {
    auto whole = dyn_cast<RankedTensorType>(type);
    if (!whole || !whole.hasStaticShape() || !isa<FloatType>(whole.getElementType())) {
      f.emitError() << "-lm-zero-shard-params: parameter '" << name << "' has type " << type
                    << "; ZeRO slices statically shaped float tensors";
      return false;
    }
    logical[name] = whole;
    return true;
  }

  /// Each `lm.param` argument of `f` becomes its slice; returns false after an error.
  /// `gathers` gets each all-gather with the top-level op it is for.
  bool shardArguments(func::FuncOp f, int64_t ranks, llvm::StringMap<RankedTensorType> &logical,
                      std::vector<std::pair<AllGatherOp, Operation *>> &gathers) {
    for (BlockArgument arg : f.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param");
      if (!name)
        continue;
      // A tensor-parallel parameter (lm.sharding, -lm-spmd's) is the rank's block: that
      // local tensor is what ZeRO slices over the data axis, and lm.zero_logical keeps it.
      if (f.getArgAttr(i, kLogicalAttr)) {
        f.emitError() << "-lm-zero-shard-params: parameter '" << name.getValue() << "' is already sliced (ZeRO stage 3)";
        return false;
      }
      if (!wholeParameter(f, name.getValue(), arg.getType(), logical))
        return false;
      auto whole = cast<RankedTensorType>(arg.getType());
      if (whole.getNumElements() == 0)
        continue;
      RankedTensorType slice = sliceType(whole, ranks);
      // The ops that read it, each gathering its own copy right before it.
      llvm::SetVector<Operation *> users;
      for (Operation *user : arg.getUsers())
        users.insert(topLevel(f, user));
      arg.setType(slice);
      f.setArgAttr(i, kLogicalAttr, TypeAttr::get(whole));
      for (Operation *user : users) {
        OpBuilder b(user);
        Location loc = user->getLoc();
        auto gather = b.create<AllGatherOp>(loc, arg, kDataAxis, ranks, /*dim=*/0);
        gathers.push_back({gather, user});
        Value v = gather;
        int64_t n = whole.getNumElements();
        if (slice.getNumElements() * ranks != n)
          v = b.create<SliceOp>(loc, v, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
        if (v.getType() != whole)
          v = b.create<ReshapeOp>(loc, whole, v);
        arg.replaceUsesWithIf(v, [&](OpOperand &use) { return user->isAncestor(use.getOwner()); });
      }
    }
    return true;
  }

  /// Prefetch: each op's all-gathers move ahead to right before an earlier op that reads
  /// gathered parameters, as far back as the gathers issued ahead at any op stay within
  /// `capBytes` (DeepSpeed's stage3_prefetch_bucket_size), so that lmrt, which runs a
  /// collective while the next steps run (docs/distributed.md, "Buckets and overlap"),
  /// moves the next ops' parameters while this one computes. Only the all-gathers move
  /// (their cut and reshape stay at the op), in their order: each gathered tensor is the
  /// same bytes, and the memory planner sees it live from its earlier gather on.
  static void prefetchGathers(std::vector<std::pair<AllGatherOp, Operation *>> &gathers, int64_t capBytes) {
    if (capBytes <= 0 || gathers.empty())
      return;
    // The ops that read gathered parameters, in program order, with their gathers' bytes.
    std::vector<Operation *> users;
    for (auto &[gather, user] : gathers)
      if (!llvm::is_contained(users, user))
        users.push_back(user);
    llvm::sort(users, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::DenseMap<Operation *, size_t> index;
    for (size_t k = 0; k < users.size(); ++k)
      index[users[k]] = k;
    std::vector<int64_t> bytes(users.size(), 0);
    std::vector<std::vector<AllGatherOp>> of(users.size());
    for (auto &[gather, user] : gathers) {
      auto type = cast<RankedTensorType>(gather.getType());
      bytes[index[user]] += type.getNumElements() * (type.getElementTypeBitWidth() / 8);
      of[index[user]].push_back(gather);
    }
    // Op k's gathers go before op j, the earliest with ops j+1 .. k's gathers within the
    // cap (j never decreases with k, so the gathers keep their order).
    size_t j = 0;
    int64_t ahead = 0;  // the bytes of ops j+1 .. k's gathers
    for (size_t k = 1; k < users.size(); ++k) {
      ahead += bytes[k];
      while (j < k && ahead > capBytes)
        ahead -= bytes[++j];
      if (j == k)
        continue;
      for (AllGatherOp gather : of[k])
        gather->moveBefore(users[j]);
    }
  }

  /// Each gradient result of a train step becomes the rank's slice of its mean, the
  /// reduce-scatters in buckets of about `capBytes` of whole gradients (GradientBuckets.h).
  bool scatterGradients(func::FuncOp f, int64_t ranks, const llvm::StringMap<RankedTensorType> &logical,
                        int64_t capBytes) {
    auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      auto of = f.getResultAttrOfType<StringAttr>(i, "lm.grad_of");
      if (!of)
        continue;
      Value g = ret.getOperand(i);
      auto it = logical.find(of.getValue());
      if (it == logical.end() || g.getType() != it->second) {
        f.emitError() << "-lm-zero-shard-params: result #" << i << " is the gradient of '" << of.getValue()
                      << "', which is not a parameter of this function of type " << g.getType();
        return false;
      }
      // (An all-reduce over the tensor axis, sequence parallelism's of a replicated
      // parameter's partial gradients, is the rank's local gradient: scattered as any.)
      if (auto reduce = g.getDefiningOp<AllReduceOp>(); reduce && reduce.getMeshAxis() == kDataAxis) {
        f.emitError() << "-lm-zero-shard-params: the gradient of '" << of.getValue()
                      << "' is already all-reduced; run -lm-data-parallel with zero = " << stage_ << " first";
        return false;
      }
    }
    for (const std::vector<Gradient> &bucket : gradientBuckets(gradientsInBackwardOrder(f, ret), capBytes)) {
      // Right after the bucket's last gradient is computed, so that the whole local
      // gradients are temporaries the arena reuses, not live until the end of the step:
      // each flattened and padded, then the bucket's reduce-scatters side by side (lmrt
      // runs them as one collective), then the divisions.
      OpBuilder b(ret);
      if (Operation *last = bucketEnd(bucket))
        b.setInsertionPointAfter(last);
      std::vector<std::pair<unsigned, Value>> flat;
      for (const Gradient &grad : bucket) {
        Value g = ret.getOperand(grad.result);
        RankedTensorType whole = logical.find(f.getResultAttrOfType<StringAttr>(grad.result, "lm.grad_of").getValue())->second;
        int64_t n = whole.getNumElements();
        if (n == 0)
          continue;
        int64_t padded = sliceType(whole, ranks).getNumElements() * ranks;
        auto flatType = RankedTensorType::get({n}, whole.getElementType());
        if (g.getType() != flatType)
          g = b.create<ReshapeOp>(g.getLoc(), flatType, g);
        if (padded != n)  // zeros after the n elements: the adjoint of the gather's cut
          g = b.create<SliceGradOp>(g.getLoc(), RankedTensorType::get({padded}, whole.getElementType()), g,
                                    ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
        flat.push_back({grad.result, g});
      }
      std::vector<Value> sums;
      for (auto &[result, g] : flat)
        sums.push_back(b.create<ReduceScatterOp>(g.getLoc(), g, kDataAxis, ranks, /*dim=*/0));
      for (size_t k = 0; k < flat.size(); ++k) {
        auto element = cast<RankedTensorType>(sums[k].getType()).getElementType();
        auto scalar = RankedTensorType::get({}, element);
        Location loc = sums[k].getLoc();
        Value count = b.create<ConstantOp>(loc, scalar, DenseElementsAttr::get(scalar, b.getFloatAttr(element, (double)ranks)));
        ret.setOperand(flat[k].first, b.create<DivOp>(loc, sums[k], count));
      }
    }
    return true;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t ranks = data != 0 ? data : meshEntry(module, "data");
    const int64_t stage = zero >= 0 ? zero : meshEntry(module, "zero");
    stage_ = stage;
    if (ranks < 0) {
      module.emitError() << "-lm-zero-shard-params: data must be at least 1, got " << ranks;
      return signalPassFailure();
    }
    FailureOr<int64_t> cap = bucketBytes(module, bucketMb, "lm-zero-shard-params");
    if (failed(cap))
      return signalPassFailure();
    FailureOr<int64_t> prefetch = prefetchBytes(module);
    if (failed(prefetch))
      return signalPassFailure();
    if (ranks <= 1 || stage < 2)
      return;
    // On a data x tensor mesh the rank's parameters and gradients are its local
    // (tensor-parallel) blocks: ZeRO slices, gathers and scatters those over the data axis
    // alone, as it does whole ones; the tensor axis's collectives stay as -lm-spmd made them.
    for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (f.isExternal())
        continue;
      llvm::StringMap<RankedTensorType> logical;
      if (stage >= 3) {
        std::vector<std::pair<AllGatherOp, Operation *>> gathers;
        if (!shardArguments(f, ranks, logical, gathers))
          return signalPassFailure();
        prefetchGathers(gathers, *prefetch);
      } else {  // stage 2: the parameters stay whole; their types are the gradients'
        if (!f->hasAttr("lm.train_step"))
          continue;
        for (BlockArgument arg : f.getArguments())
          if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param"))
            if (!wholeParameter(f, name.getValue(), arg.getType(), logical))
              return signalPassFailure();
      }
      if (f->hasAttr("lm.train_step") && !scatterGradients(f, ranks, logical, *cap))
        return signalPassFailure();
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      f.setType(FunctionType::get(f.getContext(), f.getBody().getArgumentTypes(), ret.getOperandTypes()));
    }
  }
};

} // namespace
