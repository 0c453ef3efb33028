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
// one-process lookup bit for bit (x + 0 = x). Only a table that nothing but
// lookups reads is split (an untied one: isSplittableUse says why). The ids of the other ranks look
// up row 0 and are zeroed, so their gradient (through the mask) is 0 too, and
// each rank's table gradient holds its own rows' sums. The backward needs no
// rule of its own: autodiff differentiates the lookup, the mask and the
// all-reduce (whose adjoint is an all-reduce).
//
//===----------------------------------------------------------------------===//

#include "passes/VocabParallel.h"

#include "passes/Passes.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// A read of the table that has a vocabulary-parallel form: a lookup. A tied
/// output projection (h·tableᵀ) has none yet: on the rank's rows it needs
/// Megatron's vocabulary-parallel cross-entropy, and reading the table
/// all-gathered (as ZeRO-3 does) costs more memory at the peak than the split
/// saves (docs/distributed.md, "The vocabulary"), so a tied table stays whole.
bool isSplittableUse(OpOperand &use) {
  return isa<EmbeddingOp>(use.getOwner()) && use.getOperandNumber() == 0;
}

StringAttr paramName(func::FuncOp f, BlockArgument arg) {
  return f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.param");
}

Value scalarConstant(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
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
  Value r = b.create<AxisIndexOp>(loc, RankedTensorType::get({}, element), axis, ranks);
  Value count = scalarConstant(b, loc, element, static_cast<double>(rows));
  Value first = b.create<MulOp>(loc, r, count);
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
    for (Operation *user : users)
      splitLookup(cast<EmbeddingOp>(user), axis, ranks, shape[0]);
  }
}
