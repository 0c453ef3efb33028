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
// An output projection onto the vocabulary (a head) is split too: a tied
// table read as h·tableᵀ, an untied head [d, V] read as h·head (split by its
// columns), and a bias parameter [V] added to the logits (BERT's MLM head),
// split with the classes. Its logits feed the loss and an accuracy, or a
// return (generation's programs); headForm says which forms have a split. The
// loss becomes Megatron-LM's vocabulary-parallel cross-entropy
// (vocab_parallel_cross_entropy), fused and chunked:
// lm.linear_cross_entropy_stats gives each row's logsumexp over the rank's
// V/T classes of h·w + bias (a zero bias for a head without one) and its
// target's logit when the target is one of them (else 0), without storing
// the rank's logits; then
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
// rank's part of dh (the parts sum to it, as a column-parallel layer's do),
// the gradient of its rows and of its bias slice.
//
// An accuracy of the logits is a vocabulary-parallel argmax: the stats op also
// gives each row's max over the rank's classes and the first class holding it
// (numbered from the rank's first class); the two are all-gathered and the
// row's argmax is the smallest class among the ranks whose max is the largest.
// The ranks hold ascending blocks of classes, so that is the first maximal
// class, lm.accuracy's rule: the accuracy is one process's whenever the
// logits are. Returned logits are the rank's columns all-gathered along the
// vocabulary.
//
// A vocabulary the tensor axis does not divide is padded, as Megatron-LM pads
// it: each rank holds ceil(V/T) rows, the last rank's block ending past V. The
// padding rows start at zero (the logical tensor is [V, d]; lmrt cuts it into
// blocks and zero-fills the rest) and stay zero: no id reaches them, the head
// adds -inf to their logits (paddingMask), so they leave the logsumexp, the
// max and the argmax and get no gradient, and returned logits drop them.
//
//===----------------------------------------------------------------------===//

#include "passes/VocabParallel.h"

#include "passes/Passes.h"

#include "contract/linear_cross_entropy.h"

#include "llvm/ADT/StringMap.h"

#include <limits>

using namespace mlir;
using namespace mlir::lm;

namespace {

/// An output projection onto the vocabulary: the matmul h·w (w a parameter,
/// [V, d] read transposed, as a tied table is, or [d, V]) and, when the head
/// adds a bias parameter [V] to its logits (BERT's MLM head), that add.
/// `logits` is the head's result: the add's, else the matmul's.
struct Head {
  MatmulOp mm;
  AddOp add;           // null without a bias
  BlockArgument bias;  // the bias parameter, null without one
  Value logits;
};

/// What a head's logits feed, when that has a split form: Loss when they feed
/// only lm.cross_entropy and lm.accuracy (as the logits), Returned when they
/// are only returned (generation's programs). Anything else (a sample, as
/// ELECTRA's generator draws) has none, so the parameters stay whole.
enum class HeadForm { None, Loss, Returned };

StringAttr paramName(func::FuncOp f, BlockArgument arg) {
  return f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param");
}

/// The dimension of a matmul's rhs that indexes its output columns.
int64_t columnDim(MatmulOp mm) { return mm.getTransposeRhs() ? 0 : 1; }

/// `mm` as a head whose rhs `w` has `vocab` columns: its logits, through the
/// add of a bias parameter of `vocab` entries when that is the matmul's only
/// use. None for a matmul that is no such head (a transposed lhs, a rank-1 h,
/// w not rank 2, a non-float type).
std::optional<Head> headOf(MatmulOp mm, int64_t vocab) {
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
  if (mm.getTransposeLhs() || lhs.getRank() < 2 || rhs.getRank() != 2 || mm.getLhs() == mm.getRhs() ||
      (!lhs.getElementType().isF32() && !lhs.getElementType().isF64()) || rhs.getDimSize(columnDim(mm)) != vocab)
    return std::nullopt;
  Head head{mm, nullptr, nullptr, mm.getResult()};
  if (!mm.getResult().hasOneUse())
    return head;
  auto add = dyn_cast<AddOp>(*mm.getResult().getUsers().begin());
  if (!add)
    return head;
  Value other = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
  auto arg = dyn_cast<BlockArgument>(other);
  auto f = dyn_cast<func::FuncOp>(add->getParentOp());
  auto type = cast<RankedTensorType>(other.getType());
  if (!arg || !f || !paramName(f, arg) || type.getRank() != 1 || type.getDimSize(0) != vocab ||
      type.getElementType() != lhs.getElementType() || add.getType() != mm.getType())
    return head;
  return Head{mm, add, arg, add.getResult()};
}

HeadForm headForm(Head head) {
  if (head.logits.use_empty())
    return HeadForm::None;
  auto uses = head.logits.getUses();
  if (llvm::all_of(uses, [](OpOperand &u) {
        return isa<CrossEntropyOp, AccuracyOp>(u.getOwner()) && u.getOperandNumber() == 0;
      }))
    return HeadForm::Loss;
  if (llvm::all_of(uses, [](OpOperand &u) { return isa<func::ReturnOp>(u.getOwner()); }))
    return HeadForm::Returned;
  return HeadForm::None;
}

/// The head that reads parameter `use` as its rhs, when it has a split form.
std::optional<Head> splittableHead(OpOperand &use, int64_t vocab) {
  auto mm = dyn_cast<MatmulOp>(use.getOwner());
  if (!mm || use.getOperandNumber() != 1)
    return std::nullopt;
  std::optional<Head> head = headOf(mm, vocab);
  if (!head || headForm(*head) == HeadForm::None)
    return std::nullopt;
  return head;
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

/// Where the ranks' blocks of `rows` classes pad the vocabulary (`vocab` <
/// ranks·rows: the last block holds classes past the vocabulary's end), the
/// rank's mask of them, [rows]: 0 for a class of the vocabulary, -inf for a
/// padding class (first + j >= vocab). Added to the head's logits it takes
/// the padding out of the logsumexp, the max and the argmax (exp(-inf) = 0:
/// masked, not merely zeroed, for a zero logit would change the softmax), and
/// gives the padding rows and bias entries a zero gradient (dz = 0 there), so
/// the optimizer leaves them at their zeros. Null where nothing is padded.
Value paddingMask(OpBuilder &b, Location loc, Type element, Value first, int64_t ranks, int64_t rows,
                  int64_t vocab) {
  if (ranks * rows == vocab)
    return nullptr;
  auto type = RankedTensorType::get({rows}, element);
  SmallVector<Attribute> index;
  for (int64_t j = 0; j < rows; ++j)
    index.push_back(b.getFloatAttr(element, static_cast<double>(j)));
  Value classes = b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, index));
  Value global = b.create<AddOp>(loc, classes, first);
  Value end = scalarConstant(b, loc, element, static_cast<double>(vocab));
  Value padded = b.create<GeOp>(loc, global, end);
  Value masked = scalarConstant(b, loc, element, -std::numeric_limits<double>::infinity());
  Value kept = scalarConstant(b, loc, element, 0.0);
  return b.create<WhereOp>(loc, padded, masked, kept);
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

/// The rank's part of the head's loss or accuracy against `targets`: the
/// stats op on the rank's `rows` classes (the head's parameters already
/// local), with the head's bias or, without one, zeros. Each consumer gets
/// its own; CSE merges those of one head and targets.
LinearCrossEntropyStatsOp rankStats(OpBuilder &b, Location loc, Head head, Value targets, int64_t ignoreIndex,
                                    int64_t axis, int64_t ranks, int64_t rows, int64_t vocab) {
  Value h = head.mm.getLhs(), w = head.mm.getRhs();
  Type element = cast<RankedTensorType>(h.getType()).getElementType();
  int64_t n = cast<RankedTensorType>(targets.getType()).getNumElements();
  int64_t d = cast<RankedTensorType>(h.getType()).getShape().back();
  Value first = firstClass(b, loc, element, axis, ranks, rows);
  Value bias = head.bias;
  if (Value padding = paddingMask(b, loc, element, first, ranks, rows, vocab))
    bias = bias ? b.create<AddOp>(loc, bias, padding).getResult() : padding;
  if (!bias) {
    auto type = RankedTensorType::get({rows}, element);
    bias = b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, b.getFloatAttr(element, 0.0)));
  }
  return b.create<LinearCrossEntropyStatsOp>(loc, h, w, targets, first, bias, vocab, head.mm.getTransposeRhs(),
                                             ignoreIndex, lmrt::kernels::linearCrossEntropyChunkRows(n, rows, d));
}

/// What a head's loss and accuracy both start from: the rank's stats, and
/// the types of one value per row, as the targets' `[...S]` and as the
/// `[1, n]` row the all-gathers stack over the ranks.
struct RowStats {
  LinearCrossEntropyStatsOp stats;
  RankedTensorType perRow, gatheredRow;
};

RowStats rowStats(OpBuilder &b, Location loc, Head head, Value targets, int64_t ignoreIndex, int64_t axis,
                  int64_t ranks, int64_t rows, int64_t vocab) {
  auto targetType = cast<RankedTensorType>(targets.getType());
  Type element = cast<RankedTensorType>(head.mm.getLhs().getType()).getElementType();
  return {rankStats(b, loc, head, targets, ignoreIndex, axis, ranks, rows, vocab),
          RankedTensorType::get(targetType.getShape(), element),
          RankedTensorType::get({1, targetType.getNumElements()}, element)};
}

/// `valid`: 1 where `targets` is not `ignoreIndex`, as floats of `perRow`.
Value validTargets(OpBuilder &b, Location loc, RankedTensorType perRow, Value targets, int64_t ignoreIndex,
                   Value *asFloat = nullptr) {
  Value targetsAsFloat = b.create<ToFloatOp>(loc, perRow, targets);
  if (asFloat)
    *asFloat = targetsAsFloat;
  Value ignore = scalarConstant(b, loc, perRow.getElementType(), static_cast<double>(ignoreIndex));
  return b.create<NeOp>(loc, targetsAsFloat, ignore);
}

/// sum(perRow · valid) / max(sum(valid), 1): the mean over the targets that
/// are not ignore_index (0 when none is), as lm.cross_entropy and
/// lm.accuracy take it.
Value meanOverValid(OpBuilder &b, Location loc, Value perRow, Value valid) {
  Type element = cast<RankedTensorType>(perRow.getType()).getElementType();
  auto scalar = RankedTensorType::get({}, element);
  Value counted = b.create<MulOp>(loc, perRow, valid);
  Value total = b.create<SumToOp>(loc, scalar, counted);
  Value count = b.create<SumToOp>(loc, scalar, valid);
  Value none = b.create<EqOp>(loc, count, scalarConstant(b, loc, element, 0.0));
  Value divisor = b.create<AddOp>(loc, count, none);
  return b.create<DivOp>(loc, total, divisor);
}

/// `ce`, the cross-entropy of the head's logits, as the vocabulary-parallel
/// loss (the file's comment): the stats op on the rank's classes and the
/// exact combination over the ranks.
void splitLoss(Head head, CrossEntropyOp ce, int64_t axis, int64_t ranks, int64_t rows, int64_t vocab) {
  OpBuilder b(ce);
  Location loc = FusedLoc::get(ce.getContext(), {head.mm.getLoc(), ce.getLoc()});
  Value targets = ce.getTargets();
  // (ODS returns an I64Attr as uint64_t: this is the signed value, -100 by default.)
  int64_t ignoreIndex = ce.getIgnoreIndexAttr().getInt();
  auto [stats, perRow, gatheredRow] = rowStats(b, loc, head, targets, ignoreIndex, axis, ranks, rows, vocab);
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
  Value valid = validTargets(b, loc, perRow, targets, ignoreIndex);
  Value rowLoss = b.create<SubOp>(loc, lse, targetLogit);
  ce.replaceAllUsesWith(meanOverValid(b, loc, rowLoss, valid));
  ce.erase();
}

/// `acc`, the accuracy of the head's logits, from a vocabulary-parallel
/// argmax: each rank's row max and the first class holding it (the stats
/// op's), gathered over the ranks; the row's argmax is the smallest class
/// among the ranks that hold the largest max. The ranks hold ascending blocks
/// of classes, so that is the first maximal class, lm.accuracy's (and
/// torch.argmax's) rule, and the accuracy is one process's exactly when the
/// logits are.
void splitAccuracy(Head head, AccuracyOp acc, int64_t axis, int64_t ranks, int64_t rows, int64_t vocab) {
  OpBuilder b(acc);
  Location loc = FusedLoc::get(acc.getContext(), {head.mm.getLoc(), acc.getLoc()});
  Value targets = acc.getTargets();
  int64_t ignoreIndex = acc.getIgnoreIndexAttr().getInt();
  auto [stats, perRow, gatheredRow] = rowStats(b, loc, head, targets, ignoreIndex, axis, ranks, rows, vocab);
  Type element = perRow.getElementType();
  Value maxRow = b.create<ReshapeOp>(loc, gatheredRow, stats.getMax());
  Value maxes = b.create<AllGatherOp>(loc, maxRow, axis, ranks, /*dim=*/0);
  Value argRow = b.create<ReshapeOp>(loc, gatheredRow, stats.getArgmax());
  Value args = b.create<AllGatherOp>(loc, argRow, axis, ranks, /*dim=*/0);
  Value best = b.create<ReduceMaxOp>(loc, maxes, ArrayRef<int64_t>{0});
  Value holds = b.create<EqOp>(loc, maxes, best);
  // The smallest class among the holders: the others count as the vocabulary's size.
  Value beyond = scalarConstant(b, loc, element, static_cast<double>(vocab));
  Value candidates = b.create<WhereOp>(loc, holds, args, beyond);
  Value negated = b.create<NegOp>(loc, candidates);
  Value negatedFirst = b.create<ReduceMaxOp>(loc, negated, ArrayRef<int64_t>{0});
  Value firstFlat = b.create<NegOp>(loc, negatedFirst);
  Value argmax = b.create<ReshapeOp>(loc, perRow, firstFlat);
  Value targetsAsFloat;
  Value valid = validTargets(b, loc, perRow, targets, ignoreIndex, &targetsAsFloat);
  Value correct = b.create<EqOp>(loc, argmax, targetsAsFloat);
  acc.replaceAllUsesWith(meanOverValid(b, loc, correct, valid));
  acc.erase();
}

/// `head`, an output projection on the rank's classes (its parameters
/// already local, `rows` classes): the loss and accuracy forms for each
/// consumer of its logits, or the rank's logits all-gathered along the
/// vocabulary for a return.
void splitHead(Head head, int64_t axis, int64_t ranks, int64_t rows, int64_t vocab) {
  if (headForm(head) == HeadForm::Loss) {
    SmallVector<Operation *> users(head.logits.getUsers());
    for (Operation *user : users) {
      if (auto ce = dyn_cast<CrossEntropyOp>(user))
        splitLoss(head, ce, axis, ranks, rows, vocab);
      else
        splitAccuracy(head, cast<AccuracyOp>(user), axis, ranks, rows, vocab);
    }
  } else {
    OpBuilder b(head.add ? head.add.getOperation() : head.mm.getOperation());
    Value local = b.create<MatmulOp>(head.mm.getLoc(), head.mm.getLhs(), head.mm.getRhs(), /*transpose_lhs=*/false,
                                     head.mm.getTransposeRhs());
    if (head.add)
      local = b.create<AddOp>(head.add.getLoc(), local, head.bias);
    auto localType = cast<RankedTensorType>(local.getType());
    int64_t last = localType.getRank() - 1;
    Value whole = b.create<AllGatherOp>(head.mm.getLoc(), local, axis, ranks, last);
    if (rows * ranks != vocab) {  // the padding classes' logits, the last block's tail, are dropped
      SmallVector<int64_t> start(localType.getRank(), 0), limit(localType.getShape()), stride(localType.getRank(), 1);
      limit[last] = vocab;
      whole = b.create<SliceOp>(head.mm.getLoc(), whole, start, limit, stride);
    }
    head.logits.replaceAllUsesWith(whole);
  }
  if (head.add)
    head.add.erase();
  head.mm.erase();
}

} // namespace

VocabularySplit
mlir::lm::vocabularyParameters(ModuleOp module, int64_t ranks,
                               llvm::function_ref<bool(func::FuncOp, BlockArgument)> otherwiseSplit) {
  auto functions = [&] {
    SmallVector<func::FuncOp> fs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        fs.push_back(f);
    return fs;
  }();
  // The vocabulary: the rows of the largest parameter an lm.embedding reads
  // (not an activation read as a table, as SpanBERT's gather of the boundary
  // tokens' states is).
  int64_t vocab = 0;
  for (auto f : functions)
    f.walk([&](EmbeddingOp emb) {
      auto arg = dyn_cast<BlockArgument>(emb.getTable());
      if (arg && arg.getOwner()->getParentOp() == f && paramName(f, arg))
        vocab = std::max(vocab, cast<RankedTensorType>(emb.getTable().getType()).getDimSize(0));
    });
  if (vocab == 0)
    return {};
  struct Parameter {
    int64_t dim = -1;  // the vocabulary's dimension
    bool splittable = true;
    Location loc;
  };
  llvm::StringMap<Parameter> params;
  SmallVector<std::string> order;                           // params' names, first seen first
  SmallVector<std::pair<std::string, std::string>> biasOf;  // (weight, bias) of each biased head
  auto note = [&](StringRef name, int64_t dim, Location loc, bool ok) {
    auto [it, fresh] = params.try_emplace(name, Parameter{dim, ok, loc});
    if (fresh)
      order.push_back(name.str());
    else if (it->second.dim != dim || !ok)
      it->second.splittable = false;
  };
  // Every parameter a lookup or a vocabulary head reads: a splittable read
  // notes its dimension, any other read (or a split by the blocks' layout)
  // keeps it whole.
  for (auto f : functions) {
    for (BlockArgument arg : f.getArguments()) {
      StringAttr name = paramName(f, arg);
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!name || !type)
        continue;
      bool reads = false;
      for (OpOperand &use : arg.getUses()) {
        if (auto emb = dyn_cast<EmbeddingOp>(use.getOwner()); emb && use.getOperandNumber() == 0) {
          reads = reads || type.getDimSize(0) == vocab;
        } else if (auto mm = dyn_cast<MatmulOp>(use.getOwner()); mm && use.getOperandNumber() == 1) {
          reads = reads || (type.getRank() == 2 && type.getDimSize(columnDim(mm)) == vocab);
        }
      }
      if (!reads)
        continue;
      bool whole = otherwiseSplit(f, arg);
      for (OpOperand &use : arg.getUses()) {
        if (auto emb = dyn_cast<EmbeddingOp>(use.getOwner()); emb && use.getOperandNumber() == 0) {
          note(name.getValue(), 0, arg.getLoc(), !whole);
        } else if (std::optional<Head> head = splittableHead(use, vocab)) {
          note(name.getValue(), columnDim(head->mm), arg.getLoc(), !whole);
          if (head->bias) {
            StringRef bias = paramName(f, head->bias).getValue();
            note(bias, 0, head->bias.getLoc(), !otherwiseSplit(f, head->bias));
            biasOf.push_back({name.str(), bias.str()});
          }
        } else {
          note(name.getValue(), -1, arg.getLoc(), false);
        }
      }
    }
  }
  // A bias read other than by its head's add keeps it whole.
  for (auto f : functions)
    for (BlockArgument arg : f.getArguments()) {
      StringAttr name = paramName(f, arg);
      auto it = name ? params.find(name.getValue()) : params.end();
      if (it == params.end() || cast<RankedTensorType>(arg.getType()).getRank() != 1)
        continue;
      for (Operation *user : arg.getUsers()) {
        auto add = dyn_cast<AddOp>(user);
        Value other = add ? (add.getLhs() == arg ? add.getRhs() : add.getLhs()) : Value();
        auto mm = other ? other.getDefiningOp<MatmulOp>() : MatmulOp();
        std::optional<Head> head = mm ? headOf(mm, vocab) : std::nullopt;
        if (!head || head->add != add || headForm(*head) == HeadForm::None)
          it->second.splittable = false;
      }
    }
  // A head's weight and bias split together or not at all.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto &[weight, bias] : biasOf) {
      Parameter &w = params.find(weight)->second, &b = params.find(bias)->second;
      if (w.splittable != b.splittable) {
        w.splittable = b.splittable = false;
        changed = true;
      }
    }
  }
  // A vocabulary the axis does not divide is padded to ranks·ceil(V / ranks)
  // (Megatron-LM pads to a multiple of the ranks too): every rank holds
  // ceil(V / ranks) classes, the last ones past V padding (paddingMask). Each
  // rank must hold at least one class of the vocabulary, or its logsumexp
  // would be of no class at all.
  VocabularySplit chosen;
  chosen.vocab = vocab;
  chosen.rows = (vocab + ranks - 1) / ranks;
  bool everyRankHolds = (ranks - 1) * chosen.rows < vocab;
  for (const std::string &name : order) {
    const Parameter &p = params.find(name)->second;
    if (!p.splittable)
      continue;
    if (!everyRankHolds) {
      bool bias = llvm::any_of(biasOf, [&](auto &wb) { return wb.second == name; });
      if (!bias)
        emitWarning(p.loc) << "tensor parallelism: parameter '" << name << "' (" << vocab
                           << (p.dim == 0 ? " rows" : " columns") << ", the vocabulary) is too small for mesh axis "
                           << "'tensor' (" << ranks << " ranks): blocks of ceil(" << vocab << " / " << ranks
                           << ") = " << chosen.rows << " classes leave the last rank none, so it stays whole on "
                           << "every rank";
      continue;
    }
    chosen.params[name] = p.dim;
  }
  return chosen;
}

void mlir::lm::splitVocabulary(func::FuncOp f, const VocabularySplit &split, int64_t axis, int64_t ranks,
                               llvm::function_ref<DictionaryAttr(int64_t rank, int64_t dim)> sharding) {
  const int64_t rows = split.rows, vocab = split.vocab;
  // Every split parameter gets its local type first, so that a head's rewrite
  // reads its bias already local.
  SmallVector<BlockArgument> weights;
  for (BlockArgument arg : f.getArguments()) {
    StringAttr name = paramName(f, arg);
    auto it = name ? split.params.find(name.getValue()) : split.params.end();
    if (it == split.params.end())
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[it->second] = rows;
    arg.setType(type.clone(shape));
    DictionaryAttr attr = sharding(type.getRank(), it->second);
    if (rows * ranks != vocab) {  // padded: the logical size the blocks pad (plan ParamSharding.logical_size)
      NamedAttrList attrs(attr);
      attrs.set("logical_size", IntegerAttr::get(IntegerType::get(f.getContext(), 64), vocab));
      attr = attrs.getDictionary(f.getContext());
    }
    f.setArgAttr(arg.getArgNumber(), "lm.sharding", attr);
    if (type.getRank() == 2)
      weights.push_back(arg);
  }
  for (BlockArgument arg : weights) {
    SmallVector<Operation *> users(arg.getUsers());
    for (Operation *user : users) {
      // A lookup's ids are below the vocabulary (the data's bound, lm.vocab), so
      // no id reaches a padding row: the block's range [first, first + rows)
      // masks the other ranks' ids as it does without padding.
      if (auto emb = dyn_cast<EmbeddingOp>(user)) {
        splitLookup(emb, axis, ranks, rows);
        continue;
      }
      auto mm = cast<MatmulOp>(user);
      splitHead(*headOf(mm, rows), axis, ranks, rows, vocab);
    }
  }
}
