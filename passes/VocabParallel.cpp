//===- VocabParallel.cpp - -lm-spmd's vocabulary-parallel step --*- C++ -*-===//
//
// VocabParallel.h says what; docs/distributed.md the layout. Each rank holds
// rows [r·V/T, (r+1)·V/T) of the [V, D] table, r its coordinate along the
// tensor axis (lm.axis_index). A lookup becomes
//
//   local = ids - r·V/T                        (as floats: exact below 2^24)
//   in    = (local >= 0) · (local < V/T)
//   part  = embedding(table_r, to_int(local · in)) · in
//   out   = all_reduce(part)                   (sum over the tensor axis)
//
// Exactly one rank contributes a nonzero row for each id, so `out` equals the
// one-process lookup bit for bit (x + 0 = x). The ids of the other ranks look
// up row 0 and are zeroed, so their gradient (through the mask) is 0 too, and
// each rank's table gradient holds its own rows' sums. The backward needs no
// rule of its own: autodiff differentiates the lookup, the mask and the
// all-reduce (whose adjoint is an all-reduce).
//
// A tied table is also an output projection, logits = h·tableᵀ. Its logits
// feed either the loss or a return (generation's programs); isSplittableUse
// says which forms have a split. The loss becomes Megatron-LM's
// vocabulary-parallel cross-entropy (vocab_parallel_cross_entropy), fused and
// chunked: lm.linear_cross_entropy_stats gives each row's logsumexp over the
// rank's V/T classes and its target's logit when the target is one of them
// (else 0), without storing the rank's logits; then
//
//   G    = all_gather(lse_r)                   [T, rows]: every rank's lse
//   m    = stop_gradient(max over ranks of G)
//   lse  = m + log(sum over ranks of exp(G - m))   (exact: no class is dropped)
//   tl   = all_reduce(target_logit_r)          (one rank holds it, the others add 0)
//   loss = sum((lse - tl) · valid) / max(sum(valid), 1)   (valid: not ignore_index)
//
// Autodiff differentiates it: the stats op's VJP (its grad op) recomputes the
// rank's logits chunk by chunk for dlogits = dlse·exp(z - lse_r) + dtl·onehot
// (dlse·exp(z - lse_r) = exp(z - lse) times the seed: all_gather's adjoint, a
// reduce-scatter, hands each rank its column of exp(G - lse)), and gives the
// rank's part of dh (the parts sum to it, as a column-parallel layer's do)
// and the gradient of its rows. Returned logits are the rank's columns
// all-gathered along the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "passes/VocabParallel.h"

#include "passes/Passes.h"

#include "contract/linear_cross_entropy.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// What a tied output projection's logits feed, when that has a split form.
enum class HeadForm { None, Loss, Returned };

/// The form of `mm`, a matmul reading a table as its transposed rhs (h·tableᵀ):
/// Loss when its logits feed only lm.cross_entropy (as the logits), Returned
/// when they are only returned (generation's programs). Anything else (a bias,
/// a metric such as BERT's MLM head's) has none yet, so the table stays whole.
HeadForm headForm(MatmulOp mm) {
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  if (!mm.getTransposeRhs() || mm.getTransposeLhs() || lhs.getRank() < 2 || mm.getLhs() == mm.getRhs() ||
      !lhs.getElementType().isF32() && !lhs.getElementType().isF64() || mm.getResult().use_empty())
    return HeadForm::None;
  auto uses = mm.getResult().getUses();
  if (llvm::all_of(uses, [](OpOperand &u) { return isa<CrossEntropyOp>(u.getOwner()) && u.getOperandNumber() == 0; }))
    return HeadForm::Loss;
  if (llvm::all_of(uses, [](OpOperand &u) { return isa<func::ReturnOp>(u.getOwner()); }))
    return HeadForm::Returned;
  return HeadForm::None;
}

/// A read of the table that has a vocabulary-parallel form: a lookup, or a
/// tied output projection whose logits feed the loss or a return (headForm).
/// The first vocabulary-parallel tied head read the table all-gathered (as
/// ZeRO-3 does), which cost more memory at the peak than the split saved
/// (docs/distributed.md, "The vocabulary"); the loss form stores no logits.
bool isSplittableUse(OpOperand &use) {
  if (isa<EmbeddingOp>(use.getOwner()))
    return use.getOperandNumber() == 0;
  auto mm = dyn_cast<MatmulOp>(use.getOwner());
  return mm && use.getOperandNumber() == 1 && headForm(mm) != HeadForm::None;
}

StringAttr paramName(func::FuncOp f, BlockArgument arg) {
  return f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param");
}

Value scalarConstant(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

/// The first class of the rank's rows, r·rows, as a float scalar of `element`
/// (and in `count`, when given, the constant `rows`).
Value firstClass(OpBuilder &b, Location loc, Type element, int64_t axis, int64_t ranks, int64_t rows,
                 Value *count = nullptr) {
  Value r = b.create<AxisIndexOp>(loc, RankedTensorType::get({}, element), axis, ranks);
  Value n = scalarConstant(b, loc, element, static_cast<double>(rows));
  if (count)
    *count = n;
  return b.create<MulOp>(loc, r, n);
}

/// The masked local lookup of `emb` (its table already local, `rows` rows)
/// and the all-reduce of the parts.
void splitLookup(EmbeddingOp emb, int64_t axis, int64_t ranks, int64_t rows) {
  OpBuilder b(emb);
  Location loc = emb.getLoc();
  auto result = cast<RankedTensorType>(emb.getType());
  Type element = result.getElementType();
  auto ids = cast<RankedTensorType>(emb.getIds().getType());
  auto idsFloat = RankedTensorType::get(ids.getShape(), element);
  Value count;
  Value first = firstClass(b, loc, element, axis, ranks, rows, &count);
  // One statement per op: the order of the ops is the order written.
  Value idsAsFloat = b.create<ToFloatOp>(loc, idsFloat, emb.getIds());
  Value local = b.create<SubOp>(loc, idsAsFloat, first);
  Value zero = scalarConstant(b, loc, element, 0.0);
  Value atLeastFirst = b.create<GeOp>(loc, local, zero);
  Value belowEnd = b.create<LtOp>(loc, local, count);
  Value in = b.create<MulOp>(loc, atLeastFirst, belowEnd);
  Value inRange = b.create<MulOp>(loc, local, in);
  Value localIds = b.create<ToIntOp>(loc, ids, inRange);
  Value part = b.create<EmbeddingOp>(loc, result, emb.getTable(), localIds);
  SmallVector<int64_t> column(ids.getShape());
  column.push_back(1);
  Value mask = b.create<ReshapeOp>(loc, RankedTensorType::get(column, element), in);
  Value masked = b.create<MulOp>(loc, part, mask);
  auto sum = b.create<AllReduceOp>(loc, masked, axis, ranks, /*mean=*/false);
  emb.replaceAllUsesWith(sum.getResult());
  emb.erase();
}

/// `ce`, the cross-entropy of `mm`'s logits, as the vocabulary-parallel loss
/// (the file's comment): the stats op on the rank's rows and the exact
/// combination over the ranks.
void splitLoss(MatmulOp mm, CrossEntropyOp ce, int64_t axis, int64_t ranks, int64_t rows) {
  OpBuilder b(ce);
  Location loc = FusedLoc::get(ce.getContext(), {mm.getLoc(), ce.getLoc()});
  Value h = mm.getLhs(), table = mm.getRhs(), targets = ce.getTargets();
  auto targetType = cast<RankedTensorType>(targets.getType());
  Type element = cast<RankedTensorType>(h.getType()).getElementType();
  int64_t n = targetType.getNumElements(), d = cast<RankedTensorType>(h.getType()).getShape().back();
  auto perRow = RankedTensorType::get(targetType.getShape(), element);
  auto gatheredRow = RankedTensorType::get({1, n}, element);
  // (ODS returns an I64Attr as uint64_t: this is the signed value, -100 by default.)
  int64_t ignoreIndex = ce.getIgnoreIndexAttr().getInt();
  Value first = firstClass(b, loc, element, axis, ranks, rows);
  auto stats = b.create<LinearCrossEntropyStatsOp>(loc, h, table, targets, first, rows * ranks,
                                                   /*transpose_rhs=*/true, ignoreIndex,
                                                   lmrt::kernels::linearCrossEntropyChunkRows(n, rows, d));
  // The exact logsumexp over the ranks' parts of each row.
  Value lseRow = b.create<ReshapeOp>(loc, gatheredRow, stats.getLse());
  Value all = b.create<AllGatherOp>(loc, lseRow, axis, ranks, /*dim=*/0);
  Value max = b.create<ReduceMaxOp>(loc, all, ArrayRef<int64_t>{0});
  Value shift = b.create<StopGradientOp>(loc, max);
  Value centered = b.create<SubOp>(loc, all, shift);
  Value exps = b.create<ExpOp>(loc, centered);
  Value sum = b.create<SumToOp>(loc, gatheredRow, exps);
  Value logSum = b.create<LogOp>(loc, sum);
  Value lseFlat = b.create<AddOp>(loc, shift, logSum);
  Value lse = b.create<ReshapeOp>(loc, perRow, lseFlat);
  // The target's logit: one rank holds it, the others add 0.
  Value targetLogit = b.create<AllReduceOp>(loc, stats.getTargetLogit(), axis, ranks, /*mean=*/false);
  // The mean over the targets that are not ignore_index (0 when none is).
  Value targetsAsFloat = b.create<ToFloatOp>(loc, perRow, targets);
  Value ignore = scalarConstant(b, loc, element, static_cast<double>(ignoreIndex));
  Value valid = b.create<NeOp>(loc, targetsAsFloat, ignore);
  Value rowLoss = b.create<SubOp>(loc, lse, targetLogit);
  Value counted = b.create<MulOp>(loc, rowLoss, valid);
  auto scalar = RankedTensorType::get({}, element);
  Value total = b.create<SumToOp>(loc, scalar, counted);
  Value count = b.create<SumToOp>(loc, scalar, valid);
  Value none = b.create<EqOp>(loc, count, scalarConstant(b, loc, element, 0.0));
  Value divisor = b.create<AddOp>(loc, count, none);
  Value loss = b.create<DivOp>(loc, total, divisor);
  ce.replaceAllUsesWith(loss);
  ce.erase();
}

/// `mm`, a tied output projection on the rank's rows (its table already
/// local, `rows` rows): the loss form for each cross-entropy of its logits,
/// or the rank's logits all-gathered along the vocabulary for a return.
void splitHead(MatmulOp mm, int64_t axis, int64_t ranks, int64_t rows) {
  if (headForm(mm) == HeadForm::Loss) {
    SmallVector<Operation *> losses(mm.getResult().getUsers());
    for (Operation *ce : losses)
      splitLoss(mm, cast<CrossEntropyOp>(ce), axis, ranks, rows);
    mm.erase();
    return;
  }
  OpBuilder b(mm);
  auto local = b.create<MatmulOp>(mm.getLoc(), mm.getLhs(), mm.getRhs(), /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true);
  int64_t last = cast<RankedTensorType>(local.getType()).getRank() - 1;
  auto whole = b.create<AllGatherOp>(mm.getLoc(), local.getResult(), axis, ranks, last);
  mm.replaceAllUsesWith(whole.getResult());
  mm.erase();
}

} // namespace

llvm::StringSet<> mlir::lm::vocabularyTables(ModuleOp module, int64_t ranks,
                                             llvm::function_ref<bool(func::FuncOp, BlockArgument)> otherwiseSplit) {
  struct Table {
    int64_t rows = 0;
    bool splittable = true;
    Location loc;
  };
  llvm::StringMap<Table> tables;
  int64_t largest = 0;
  // Every table a lookup reads, and whether each of its reads has a split form.
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    f.walk([&](EmbeddingOp emb) {
      int64_t rows = cast<RankedTensorType>(emb.getTable().getType()).getDimSize(0);
      largest = std::max(largest, rows);
      auto arg = dyn_cast<BlockArgument>(emb.getTable());
      StringAttr name = arg ? paramName(f, arg) : StringAttr();
      if (name)
        tables.try_emplace(name.getValue(), Table{rows, true, arg.getLoc()});
    });
  }
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    for (BlockArgument arg : f.getArguments()) {
      StringAttr name = paramName(f, arg);
      auto it = name ? tables.find(name.getValue()) : tables.end();
      if (it == tables.end())
        continue;
      if (otherwiseSplit(f, arg) || !llvm::all_of(arg.getUses(), isSplittableUse))
        it->second.splittable = false;
    }
  }
  llvm::StringSet<> chosen;
  for (auto &[name, t] : tables) {
    if (t.rows != largest || !t.splittable)
      continue;
    if (t.rows % ranks != 0) {
      emitWarning(t.loc) << "tensor parallelism: parameter '" << name << "' (" << t.rows
                         << " rows, the vocabulary) is not divisible by mesh axis 'tensor' (" << ranks
                         << " ranks), so it stays whole on every rank; pad the vocabulary to a multiple of " << ranks
                         << " to split it";
      continue;
    }
    chosen.insert(name);
  }
  return chosen;
}

void mlir::lm::splitVocabulary(func::FuncOp f, const llvm::StringSet<> &tables, int64_t axis, int64_t ranks,
                               DictionaryAttr sharding) {
  for (BlockArgument arg : f.getArguments()) {
    StringAttr name = paramName(f, arg);
    if (!name || !tables.contains(name.getValue()))
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] /= ranks;
    arg.setType(type.clone(shape));
    f.setArgAttr(arg.getArgNumber(), "lm.sharding", sharding);
    SmallVector<Operation *> users(arg.getUsers());
    for (Operation *user : users) {
      if (auto emb = dyn_cast<EmbeddingOp>(user))
        splitLookup(emb, axis, ranks, shape[0]);
      else
        splitHead(cast<MatmulOp>(user), axis, ranks, shape[0]);
    }
  }
}
