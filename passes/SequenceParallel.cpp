//===- SequenceParallel.cpp - -lm-spmd's sequence-parallel step -*- C++ -*-===//
//
// Runs after -lm-spmd has localised a function for tensor parallelism, and
// before autodiff. Every row-parallel layer's partial sum of activations
// [batch, seq, d] is reduce-scattered along the sequence (dimension 1)
// instead of all-reduced, and the region grows forward from there through the
// ops that act on each position alone: the elementwise ops (the bias, the
// residual add, activations) and the norms (their normalised dimension is the
// last, whole on every rank; gamma and beta stay whole), and dropout, whose
// mask is keyed by the element's index in the whole row: it gets the key of
// the rank's part (contract/dropout_math.h), so it drops what one process
// drops. The region stops at every other op: a column-parallel matmul,
// attention, the LM head, the loss, a return. There the value is all-gathered
// along the sequence (Megatron's gather before the column-parallel layer). A
// whole value that meets a region op (the embedding output at the first
// residual add) enters it as its rank's part of the sequence: a local gather
// at the rank's offset (lm.axis_index), no communication.
//
// The backward comes from the VJPs: a reduce-scatter's is an all-gather and
// the reverse; the entry's, a scatter of the cotangent into the rank's part
// of the whole (zeros elsewhere: JAX's convention, a rank's cotangent is its
// part of the cotangent), also without communication. The norms' parameters
// are whole, so -lm-spmd-gradients already averages their gradients, now
// partial over the sequence parts, over the tensor axis.
//
//===----------------------------------------------------------------------===//

#include "passes/SequenceParallel.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
using namespace mlir::lm;

namespace {

/// Activations are [batch, sequence, features] in every LMC model.
constexpr int64_t kSeqDim = 1;

/// The dimension of `dims` that follows `loop` (-1: none, a broadcast).
int64_t dimFollowing(ArrayRef<ShardingDim> dims, int64_t loop) {
  for (auto [i, d] : llvm::enumerate(dims))
    if (d.loop == loop && d.segments == 1)
      return i;
  return -1;
}

class SequenceRegion {
public:
  SequenceRegion(int64_t axis, int64_t ranks, llvm::function_ref<bool(Value)> tensorSplit)
      : axis(axis), ranks(ranks), tensorSplit(tensorSplit) {}

  /// Grows the region from `sum`, a row-parallel layer's all-reduce whose
  /// result is to be split along `dim`. Every rule is read here, on the
  /// global types, before anything is rewritten.
  void grow(AllReduceOp sum, int64_t dim) {
    seeds.push_back(sum);
    split[sum.getResult()] = dim;
    SmallVector<Value> worklist{sum.getResult()};
    while (!worklist.empty()) {
      Value x = worklist.pop_back_val();
      for (OpOperand &use : x.getUses()) {
        Operation *op = use.getOwner();
        if (members.count(op))
          continue;
        std::optional<Member> m = join(op, use.getOperandNumber(), split.lookup(x));
        if (!m)
          continue;
        for (auto [r, d] : llvm::zip(op->getResults(), m->resultDims)) {
          split[r] = d;
          worklist.push_back(r);
        }
        members[op] = std::move(*m);
      }
    }
  }

  /// Turns the seeds into reduce-scatters, gives the region's ops their
  /// local types and operands, and every use outside the region the whole
  /// value.
  void rewrite() {
    for (AllReduceOp sum : seeds) {
      OpBuilder b(sum);
      Value part = b.create<ReduceScatterOp>(sum.getLoc(), sum.getX(), axis, ranks, split.lookup(sum.getResult()));
      split[part] = split.lookup(sum.getResult());
      sum.getResult().replaceAllUsesWith(part);
    }
    for (auto &[op, m] : members) {
      for (auto [i, d] : llvm::enumerate(m.operandDims)) {
        if (d < 0)
          continue;
        Value x = op->getOperand(i);
        auto it = split.find(x);
        if (it != split.end() && it->second == d)
          continue;
        op->setOperand(i, partOf(it != split.end() ? wholeOf(x) : x, d));
      }
      for (auto [r, d] : llvm::zip(op->getResults(), m.resultDims))
        r.setType(localType(r, d));
      if (auto drop = dyn_cast<DropoutOp>(op))
        drop.getKeyMutable().assign(partKeyOf(drop.getKey()));
    }
    for (auto [v, d] : split) {
      Value g = gathered.lookup(v);
      SmallVector<OpOperand *> outside;
      for (OpOperand &use : v.getUses())
        if (!members.count(use.getOwner()) && !(g && use.getOwner() == g.getDefiningOp()))
          outside.push_back(&use);
      for (OpOperand *use : outside)
        use->set(wholeOf(v));
    }
    for (AllReduceOp sum : seeds)
      sum.erase();
  }

private:
  /// A region op: the loop it runs split and the dimension of each operand
  /// and result that follows it (-1: none, a broadcast operand).
  struct Member {
    SmallVector<int64_t> operandDims, resultDims;
  };

  /// How `op` runs when its operand `index` comes split along `dim`, if it
  /// may join the region: an op acting on each position alone, none of whose
  /// tensors tensor parallelism splits.
  std::optional<Member> join(Operation *op, unsigned index, int64_t dim) {
    // Dropout's part of each row along the sequence (dimension 1) is one
    // stretch of the row's elements, which the part's key offsets.
    if (auto drop = dyn_cast<DropoutOp>(op)) {
      if (index != 0 || dim != kSeqDim || cast<RankedTensorType>(drop.getKey().getType()).getRank() != 2)
        return std::nullopt;
      return Member{{dim, -1}, {dim}};
    }
    if (!isa<ElementwiseOpInterface, LayerNormOp, RmsNormOp>(op))
      return std::nullopt;
    auto sharding = dyn_cast<ShardingOpInterface>(op);
    if (!sharding)
      return std::nullopt;
    ShardingRule rule = sharding.getShardingRule();
    int64_t loop = rule.operands[index][dim].loop;
    if (loop < 0 || rule.loops[loop].kind != LoopKind::Parallel)
      return std::nullopt;
    Member m;
    for (auto [x, dims] : llvm::zip(op->getOperands(), rule.operands)) {
      if (tensorSplit(x))
        return std::nullopt;
      m.operandDims.push_back(dimFollowing(dims, loop));
    }
    for (auto [r, dims] : llvm::zip(op->getResults(), rule.results)) {
      m.resultDims.push_back(dimFollowing(dims, loop));
      if (tensorSplit(r) || m.resultDims.back() < 0)
        return std::nullopt;
    }
    return m;
  }

  RankedTensorType localType(Value v, int64_t dim) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= ranks;
    return type.clone(shape);
  }

  /// The whole of a split value: its all-gather, made once.
  Value wholeOf(Value v) {
    if (Value g = gathered.lookup(v))
      return g;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Value g = b.create<AllGatherOp>(v.getLoc(), v, axis, ranks, split.lookup(v));
    gathered[v] = g;
    return g;
  }

  /// The rank's part along `dim` of a value every rank holds whole, made
  /// once: an lm.take_along_axis of indices `r * n ... r * n + n - 1` (n =
  /// size / T, r = lm.axis_index; whole numbers, exact in f32 below 2^24),
  /// bit for bit the slice, with no communication (Megatron's
  /// scatter_to_sequence_parallel_region). Its VJP scatters the cotangent
  /// into the rank's part of a zero whole: each rank's cotangent of the whole
  /// is its part of it, as the collectives' VJPs assume.
  Value partOf(Value v, int64_t dim) {
    auto key = std::make_pair(v, dim);
    if (Value p = parts.lookup(key))
      return p;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = v.getLoc();
    auto type = cast<RankedTensorType>(v.getType());
    Type element = type.getElementType();
    int64_t n = type.getDimSize(dim) / ranks;
    SmallVector<int64_t> shape(type.getRank(), 1);
    shape[dim] = n;
    auto iotaType = RankedTensorType::get(shape, element);
    SmallVector<Attribute> iota;
    for (int64_t i = 0; i < n; ++i)
      iota.push_back(b.getFloatAttr(element, static_cast<double>(i)));
    auto scalar = RankedTensorType::get({}, element);
    Value r = b.create<AxisIndexOp>(loc, scalar, axis, ranks);
    Value size = b.create<ConstantOp>(loc, scalar, DenseElementsAttr::get(scalar, b.getFloatAttr(element, n)));
    Value first = b.create<MulOp>(loc, r, size);
    Value offsets = b.create<ConstantOp>(loc, iotaType, DenseElementsAttr::get(iotaType, iota));
    Value positions = b.create<AddOp>(loc, offsets, first);
    Value indices = b.create<ToIntOp>(loc, RankedTensorType::get(shape, b.getI32Type()), positions);
    Value p = b.create<TakeAlongAxisOp>(loc, localType(v, dim), v, indices, dim);
    parts[key] = p;
    return p;
  }

  /// The key of the rank's part of each row for a region dropout, made once.
  Value partKeyOf(Value key) {
    if (Value k = partKeys.lookup(key))
      return k;
    OpBuilder b(key.getContext());
    b.setInsertionPointAfterValue(key);
    Value k = partDropoutKey(b, key.getLoc(), key, axis, ranks);
    partKeys[key] = k;
    return k;
  }

  int64_t axis, ranks;
  llvm::function_ref<bool(Value)> tensorSplit;
  SmallVector<AllReduceOp> seeds;
  llvm::MapVector<Operation *, Member> members; // the region's ops
  llvm::MapVector<Value, int64_t> split;       // the region's values and their split dimension
  DenseMap<Value, Value> gathered;
  DenseMap<std::pair<Value, int64_t>, Value> parts;
  DenseMap<Value, Value> partKeys;
};

} // namespace

LogicalResult mlir::lm::sequenceParallel(func::FuncOp f, ArrayRef<AllReduceOp> rowParallel,
                                         llvm::function_ref<bool(Value)> tensorSplit, int64_t axis, int64_t ranks) {
  SequenceRegion region(axis, ranks, tensorSplit);
  for (AllReduceOp sum : rowParallel) {
    Value partial = sum.getX();
    auto type = cast<RankedTensorType>(partial.getType());
    // Only activations have a sequence (the BERT pooler's [batch, d] keeps its all-reduce).
    if (type.getRank() != 3)
      continue;
    int64_t seq = type.getDimSize(kSeqDim);
    if (seq % ranks != 0) {
      std::string msg;
      llvm::raw_string_ostream os(msg);
      os << "sequence parallelism: the result of " << partial.getDefiningOp()->getName() << " " << type
         << ": dimension " << kSeqDim << " (the sequence, " << seq << ") is not divisible by mesh axis 'tensor' ("
         << ranks << " ranks); choose a sequence length that is a multiple of " << ranks
         << " (or leave sequence_parallel off)";
      return emitError(partial.getLoc()) << msg;
    }
    region.grow(sum, kSeqDim);
  }
  region.rewrite();
  return success();
}

/// The key of a rank's part of a dropout keyed by element index
/// (contract/dropout_math.h): i32[2, rows, 2], the rows' keys `key` then the
/// rank's coordinate along the tensor axis, by one lm.where_int.
Value mlir::lm::partDropoutKey(OpBuilder &b, Location loc, Value key, int64_t axis, int64_t ranks) {
  auto i32 = b.getI32Type();
  Value r = b.create<AxisIndexOp>(loc, RankedTensorType::get({}, i32), axis, ranks);
  auto condType = RankedTensorType::get({2, 1, 1}, b.getF32Type());
  Value first = b.create<ConstantOp>(loc, condType, DenseElementsAttr::get(condType, ArrayRef<float>{1.0f, 0.0f}));
  auto type = RankedTensorType::get({2, cast<RankedTensorType>(key.getType()).getDimSize(0), 2}, i32);
  return b.create<WhereIntOp>(loc, type, first, key, r);
}
