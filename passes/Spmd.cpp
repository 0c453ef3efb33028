//===- Spmd.cpp - -lm-spmd and -lm-spmd-gradients ---------------*- C++ -*-===//
//
// Tensor parallelism (Megatron-LM's layout) as a rewrite of the global program
// into one rank's, over mesh axis 1 (tensor) of lm.mesh. Passes.td states what
// each pass does; docs/distributed.md the layout and why.
//
// -lm-spmd runs before autodiff, on every function with parameters. It derives
// every sharding from the ops' sharding rules (ShardingOpInterface), starting
// at two kinds of seeds, each tried as a dry run that is kept only when it
// closes:
//   - an op with a tensor-parallel loop (attention: its heads), and
//   - a loop of an op that only a parameter operand has (a matmul's N with
//     the weight as rhs: the column-parallel layer).
// A dry run propagates the split backward to the producers of the operands the
// op takes split (down to parameters) and forward to the users of every split
// value, until each path ends in a reduction loop split (a contracting matmul:
// the row-parallel layer, whose result is a partial sum). It fails, and is
// dropped, when a split reaches an op without a rule, a whole loop (softmax's
// or a norm's last dimension, a loss, the vocabulary), an input or a return,
// or conflicts with a split already made. So the q/k/v projection (through
// the bias and the slices of a packed projection) and attention split by
// heads, the output projection by rows; fc1 by columns and fc2 by rows; the
// LM head and an MLM transform (which ends in a norm) stay whole.
// Each partial sum is then lm.all_reduce'd over the tensor axis (the
// forward's one collective per row-parallel layer), and every split value
// gets its local type.
//
// The backward comes from autodiff and the collectives' VJPs: the all-reduce
// transposes to an all-reduce (JAX's convention: a rank's cotangent is its
// part of the cotangent). Seeding every rank's backward with 1 differentiates
// the sum of the T ranks' (equal) losses, so -lm-spmd-gradients, after
// autodiff, divides the gradients of split parameters by T and averages the
// parts of the gradients of replicated parameters over the tensor axis.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/SequenceParallel.h"
#include "passes/VocabParallel.h"

#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <string>

namespace mlir::lm {
#define GEN_PASS_DEF_LMSPMDPASS
#define GEN_PASS_DEF_LMSPMDGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The mesh axes' order in lm.mesh and in the collectives' mesh_axis.
constexpr int64_t kTensorAxis = 1;
constexpr llvm::StringLiteral kShardingAttr = "lm.sharding";

/// The tensor axis of the module's mesh (or the pass option when given).
int64_t tensorRanks(ModuleOp module, int64_t option) {
  return option != 0 ? option : meshEntry(module, "tensor", /*absent=*/1);
}

/// The loop an op runs split and the segments of that loop.
struct OpSplit {
  int64_t loop;
  int64_t segments;
  bool operator==(const OpSplit &o) const { return loop == o.loop && segments == o.segments; }
};

/// A sharding the mesh cannot hold: a dimension of `value` the tensor axis
/// does not divide. Heads first, then parameters (what a user chooses).
struct Violation {
  Location loc;
  std::string message;
  int priority;
};

/// The shardings of one function.
struct Assignment {
  llvm::MapVector<Value, TensorSharding> values;
  llvm::MapVector<Operation *, OpSplit> ops;
  SmallVector<Violation> violations;
};

/// What names a value in a message: a parameter or state by its name, an op
/// result by the op.
std::string describe(Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto f = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param"))
      os << "parameter '" << name.getValue() << "'";
    else if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.state"))
      os << "state '" << name.getValue() << "'";
    else
      os << "argument " << arg.getArgNumber();
  } else {
    os << "the result of " << v.getDefiningOp()->getName();
  }
  os << " " << v.getType();
  return s;
}

/// One dry run over a copy of the committed assignment: propagates splits
/// through the rules and fails at the first place the layout cannot hold.
class Propagator {
public:
  Propagator(int64_t ranks, const llvm::StringSet<> &whole, Assignment a)
      : ranks(ranks), whole(whole), a(std::move(a)) {}

  Assignment take() { return std::move(a); }

  /// Splits `op` along `loop` (in `segments` segments).
  bool assignOp(Operation *op, int64_t loop, int64_t segments) {
    if (auto it = a.ops.find(op); it != a.ops.end())
      return it->second == OpSplit{loop, segments};
    auto sharding = dyn_cast<ShardingOpInterface>(op);
    if (!sharding)
      return false;
    ShardingRule rule = sharding.getShardingRule();
    if (loop < 0 || loop >= static_cast<int64_t>(rule.loops.size()) || rule.loops[loop].kind == LoopKind::Whole)
      return false;
    a.ops.insert({op, {loop, segments}});
    int64_t unit = rule.loops[loop].unit;
    auto side = [&](ValueRange values, ArrayRef<SmallVector<ShardingDim, 4>> dims, bool results) {
      for (auto [v, vdims] : llvm::zip(values, dims)) {
        TensorSharding want;
        int64_t dimUnit = unit;
        for (auto [d, dim] : llvm::enumerate(vdims))
          if (dim.loop == loop) {
            want = {static_cast<int64_t>(d), segments * dim.segments, false};
            dimUnit = dim.perUnit ? 1 : unit;
          }
        if (want.dim < 0 && results && rule.loops[loop].kind == LoopKind::Reduction)
          want.partial = true;
        if (want.dim < 0 && !want.partial) {
          // The op takes (or gives) this one whole: it must be replicated.
          auto it = a.values.find(v);
          if (it != a.values.end() && !it->second.isReplicated())
            return false;
          if (results) // a parallel loop no result follows: nothing to split
            return false;
          continue;
        }
        if (want.dim >= 0)
          checkDivisible(op, v, want, dimUnit);
        if (!demand(v, want))
          return false;
      }
      return true;
    };
    return side(op->getOperands(), rule.operands, false) && side(op->getResults(), rule.results, true);
  }

private:
  /// `v` is to be held as `s`: records it and propagates to its producer and
  /// its users.
  bool demand(Value v, TensorSharding s) {
    if (auto it = a.values.find(v); it != a.values.end())
      return it->second == s;
    a.values.insert({v, s});
    if (s.partial) // all-reduced before any use
      return true;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!f || !(f.getArgAttr(arg.getArgNumber(), "lm.param") || f.getArgAttr(arg.getArgNumber(), "lm.state")))
        return false; // an input: every rank reads it whole
      if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param"); name && whole.contains(name))
        return false; // another function needs it whole
    } else {
      Operation *def = v.getDefiningOp();
      auto sharding = dyn_cast<ShardingOpInterface>(def);
      if (!sharding)
        return false;
      ShardingRule rule = sharding.getShardingRule();
      ShardingDim dim = rule.results[cast<OpResult>(v).getResultNumber()][s.dim];
      if (dim.loop < 0 || s.segments % dim.segments != 0 || !assignOp(def, dim.loop, s.segments / dim.segments))
        return false;
    }
    for (OpOperand &use : v.getUses()) {
      // A state (a key/value cache) leaves its function as it came in.
      if (auto ret = dyn_cast<func::ReturnOp>(use.getOwner())) {
        auto f = cast<func::FuncOp>(ret->getParentOp());
        if (f.getResultAttr(use.getOperandNumber(), "lm.state"))
          continue;
        return false;
      }
      auto sharding = dyn_cast<ShardingOpInterface>(use.getOwner());
      if (!sharding)
        return false;
      ShardingRule rule = sharding.getShardingRule();
      ShardingDim dim = rule.operands[use.getOperandNumber()][s.dim];
      if (dim.loop < 0 || s.segments % dim.segments != 0 ||
          !assignOp(use.getOwner(), dim.loop, s.segments / dim.segments))
        return false;
    }
    return true;
  }

  /// Records a violation when the tensor axis does not divide `v`'s split
  /// dimension (an operand or result of `op`) into whole blocks of `unit`
  /// per segment.
  void checkDivisible(Operation *op, Value v, TensorSharding s, int64_t unit) {
    int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(s.dim);
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (n % (s.segments * ranks) != 0) {
      os << describe(v) << ": dimension " << s.dim << " (" << n;
      if (s.segments > 1)
        os << " = " << s.segments << " segments of " << n / s.segments;
      os << ") is not divisible by mesh axis 'tensor' (" << ranks << " ranks); choose a size that is a multiple of "
         << s.segments * ranks << " (or another mesh)";
      a.violations.push_back({v.getLoc(), msg, isa<BlockArgument>(v) ? 1 : 2});
    } else if ((n / s.segments / ranks) % unit != 0) {
      os << op->getName() << " splits " << describe(v) << " by heads: dimension " << s.dim << " holds "
         << n / s.segments / unit << " heads of " << unit << ", which mesh axis 'tensor' (" << ranks
         << " ranks) does not divide; choose a number of heads that is a multiple of " << ranks
         << " (or another mesh)";
      a.violations.push_back({op->getLoc(), msg, 0});
    }
  }

  int64_t ranks;
  const llvm::StringSet<> &whole;
  Assignment a;
};

/// Tries every seed of `f` in program order, attention first, and keeps the
/// dry runs that close without splitting a parameter of `whole`.
Assignment partition(func::FuncOp f, int64_t ranks, const llvm::StringSet<> &whole) {
  Assignment committed;
  auto tryRun = [&](Operation *op, int64_t loop) {
    Propagator p(ranks, whole, committed);
    if (p.assignOp(op, loop, 1))
      committed = p.take();
  };
  f.walk([&](ShardingOpInterface op) {
    ShardingRule rule = op.getShardingRule();
    if (rule.tensorParallelLoop >= 0 && !committed.ops.count(op))
      tryRun(op, rule.tensorParallelLoop);
  });
  f.walk([&](ShardingOpInterface op) {
    // A lookup's table splits only where another seed reaches it (T5's
    // position bias, from the attention's heads). Its columns would close as
    // a layout of their own when the lookup reaches a contracting matmul (a
    // tied head with no norm between), but a vocabulary table splits by rows
    // (vocabularyTables, below), as Megatron's does.
    if (committed.ops.count(op) || isa<EmbeddingOp>(op))
      return;
    ShardingRule rule = op.getShardingRule();
    // A loop only a parameter operand follows: splitting it splits that
    // weight and no activation (the column-parallel layer).
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || !f.getArgAttr(arg.getArgNumber(), "lm.param"))
        continue;
      for (ShardingDim dim : rule.operands[i]) {
        if (dim.loop < 0 || rule.loops[dim.loop].kind != LoopKind::Parallel)
          continue;
        bool alone = true;
        for (auto [j, other] : llvm::enumerate(rule.operands))
          if (j != i)
            alone &= llvm::none_of(other, [&](ShardingDim d) { return d.loop == dim.loop; });
        if (alone && !committed.ops.count(op))
          tryRun(op, dim.loop);
      }
    }
  });
  return committed;
}

/// The arg attribute recording a parameter's sharding, in upstream mesh's
/// terms: the mesh axes splitting each dimension (and LMC's segments).
DictionaryAttr shardingAttr(MLIRContext *ctx, int64_t rank, TensorSharding s) {
  Builder b(ctx);
  SmallVector<Attribute> axes;
  for (int64_t d = 0; d < rank; ++d)
    axes.push_back(d == s.dim ? b.getI64ArrayAttr({kTensorAxis}) : b.getArrayAttr({}));
  SmallVector<NamedAttribute> attrs{b.getNamedAttr("split_axes", b.getArrayAttr(axes))};
  if (s.segments > 1)
    attrs.push_back(b.getNamedAttr("segments", b.getI64IntegerAttr(s.segments)));
  return b.getDictionaryAttr(attrs);
}

/// Rewrites `f` into one rank's program under `a`; returns the all-reduces of
/// the partial sums (the row-parallel layers').
SmallVector<AllReduceOp> localize(func::FuncOp f, const Assignment &a, int64_t ranks) {
  SmallVector<AllReduceOp> sums;
  for (auto [v, s] : a.values) {
    if (s.dim < 0)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[s.dim] /= ranks;
    v.setType(type.clone(shape));
    if (auto arg = dyn_cast<BlockArgument>(v); arg && f.getArgAttr(arg.getArgNumber(), "lm.param"))
      f.setArgAttr(arg.getArgNumber(), kShardingAttr, shardingAttr(f.getContext(), shape.size(), s));
  }
  for (auto [op, split] : a.ops)
    cast<ShardingOpInterface>(op).shardAttributes(split.loop, ranks);
  for (auto [v, s] : a.values) {
    if (!s.partial)
      continue;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    auto sum = b.create<AllReduceOp>(v.getLoc(), v, kTensorAxis, ranks, /*mean=*/false);
    v.replaceAllUsesExcept(sum, sum);
    sums.push_back(sum);
  }
  return sums;
}

/// A head-split lm.biased_attention with dropout keys its mask by the global
/// head: it gets the key of its part, so the ranks drop what one process does.
void keyHeadSplitDropout(const Assignment &a, int64_t ranks) {
  for (auto [op, split] : a.ops) {
    auto attn = dyn_cast<BiasedAttentionOp>(op);
    if (!attn || split.loop != 3 || attn.getDropout().convertToDouble() == 0 ||
        cast<RankedTensorType>(attn.getKey().getType()).getRank() != 2)
      continue;
    OpBuilder b(attn);
    attn.getKeyMutable().assign(partDropoutKey(b, attn.getLoc(), attn.getKey(), kTensorAxis, ranks));
  }
}

/// Whether the module asks for sequence parallelism (lm.mesh's
/// sequence_parallel, or the pass option).
bool sequenceParallelOf(ModuleOp module, bool option) {
  if (option)
    return true;
  auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh");
  auto sp = mesh ? dyn_cast_or_null<BoolAttr>(mesh.get("sequence_parallel")) : BoolAttr();
  return sp && sp.getValue();
}

/// Generation's programs (a key/value cache in and out) run a few positions
/// at a time: they keep the tensor-parallel layout without the sequence split.
bool hasState(func::FuncOp f) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (f.getArgAttr(i, "lm.state"))
      return true;
  return false;
}

struct SpmdPass : lm::impl::LMSpmdPassBase<SpmdPass> {
  using LMSpmdPassBase::LMSpmdPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t ranks = tensorRanks(module, tensor);
    if (ranks < 1) {
      module.emitError() << "-lm-spmd: tensor must be at least 1, got " << ranks;
      return signalPassFailure();
    }
    if (ranks == 1)
      return;
    // Every function is partitioned on its own, and a parameter must come out
    // split the same way in each (the train step, evaluation and generation
    // read the same weights): one that the functions split differently (an
    // attention one function splits by heads and another cannot) is kept whole everywhere, and the functions are partitioned again
    // until they agree. The set only grows, so this ends.
    llvm::StringSet<> whole;
    SmallVector<std::pair<func::FuncOp, Assignment>> plans;
    for (bool agreed = false; !agreed;) {
      agreed = true;
      plans.clear();
      std::map<std::string, TensorSharding> params;
      for (auto f : module.getOps<func::FuncOp>()) {
        if (f.isExternal())
          continue;
        Assignment a = partition(f, ranks, whole);
        for (unsigned i = 0; i < f.getNumArguments(); ++i) {
          auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param");
          if (!name)
            continue;
          TensorSharding s = a.values.lookup(f.getArgument(i));
          auto [it, fresh] = params.insert({name.str(), s});
          if (!fresh && it->second != s && whole.insert(name.getValue()).second)
            agreed = false;
        }
        plans.push_back({f, std::move(a)});
      }
    }
    for (auto &[f, a] : plans) {
      if (a.violations.empty())
        continue;
      const Violation *first = &a.violations.front();
      for (const Violation &v : a.violations)
        if (v.priority < first->priority)
          first = &v;
      emitError(first->loc) << "tensor parallelism: " << first->message;
      return signalPassFailure();
    }
    // The vocabulary table: no op's rule splits it (a lookup reads arbitrary
    // rows), so it is decided on its own once the layout above is settled.
    VocabularySplit vocabulary = vocabularyParameters(module, ranks, [&](func::FuncOp f, BlockArgument arg) {
      for (auto &[g, a] : plans)
        if (g == f)
          return !a.values.lookup(arg).isReplicated();
      return false;
    });
    auto vocabularySharding = [&](int64_t rank, int64_t dim) {
      return shardingAttr(module.getContext(), rank, TensorSharding{dim, 1, false});
    };
    bool sp = sequenceParallelOf(module, sequenceParallel);
    for (auto &[f, a] : plans) {
      SmallVector<AllReduceOp> sums = localize(f, a, ranks);
      keyHeadSplitDropout(a, ranks);
      splitVocabulary(f, vocabulary, kTensorAxis, ranks, vocabularySharding);
      auto tensorSplit = [&](Value v) {
        auto it = a.values.find(v);
        return it != a.values.end() && !it->second.isReplicated();
      };
      if (sp && !hasState(f) && failed(lm::sequenceParallel(f, sums, tensorSplit, kTensorAxis, ranks)))
        return signalPassFailure();
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      f.setType(FunctionType::get(f.getContext(), f.getBody().getArgumentTypes(), ret.getOperandTypes()));
    }
  }
};

struct SpmdGradientsPass : lm::impl::LMSpmdGradientsPassBase<SpmdGradientsPass> {
  using LMSpmdGradientsPassBase::LMSpmdGradientsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t ranks = tensorRanks(module, tensor);
    if (ranks <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("lm.train_step") || f.isExternal())
        continue;
      llvm::StringSet<> split;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param"); name && f.getArgAttr(i, kShardingAttr))
          split.insert(name.getValue());
      auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
      OpBuilder b(ret);
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        auto of = f.getResultAttrOfType<StringAttr>(i, "lm.grad_of");
        if (!of)
          continue;
        Value g = ret.getOperand(i);
        Location loc = g.getLoc();
        if (split.contains(of.getValue())) {
          auto type = cast<RankedTensorType>(g.getType());
          auto scalar = RankedTensorType::get({}, type.getElementType());
          Value inv = b.create<ConstantOp>(
              loc, scalar, DenseElementsAttr::get(scalar, b.getFloatAttr(type.getElementType(), 1.0 / ranks)));
          ret.setOperand(i, b.create<MulOp>(loc, g, inv));
        } else {
          ret.setOperand(i, b.create<AllReduceOp>(loc, g, kTensorAxis, ranks, /*mean=*/true));
        }
      }
    }
  }
};

} // namespace
