//===- ShardingRules.cpp - the ops' sharding rules --------------*- C++ -*-===//
//
// ShardingOpInterface for every op that has a rule (LMSharding.h): which
// loops an op runs, which of them it may split, and which loop each operand
// and result dimension follows. -lm-spmd derives every sharding from these
// (passes/Spmd.cpp); an op without a rule is never given a split tensor.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Dimension i of `v` follows loop `loops[i]`.
SmallVector<ShardingDim, 4> dims(ArrayRef<int64_t> loops) {
  SmallVector<ShardingDim, 4> out;
  for (int64_t l : loops)
    out.push_back({l, 1});
  return out;
}

/// The rule of the attention ops: q [B, Tq, H*Dh], k and v [B, Tk, Hkv*Dh],
/// result [B, Tq, H*Dh]. Loops: batch, query positions and key positions
/// (whole: the causal mask and the softmax over keys see absolute positions
/// and all keys), and the heads, split in whole heads (grouped-query
/// attention's key/value heads split the same way, so that every rank keeps
/// the key/value heads of its query heads). TP starts here (Megatron).
ShardingRule attentionRule(Value q, int64_t numHeads) {
  int64_t headDim = shapeOf(q)[2] / std::max<int64_t>(numHeads, 1);
  ShardingRule rule;
  rule.loops = {{LoopKind::Parallel}, {LoopKind::Whole}, {LoopKind::Whole}, {LoopKind::Parallel, headDim}};
  rule.operands = {dims({0, 1, 3}), dims({0, 2, 3}), dims({0, 2, 3})};
  rule.results = {dims({0, 1, 3})};
  rule.tensorParallelLoop = 3;
  return rule;
}

} // namespace

ShardingRule mlir::lm::detail::pointwiseShardingRule(Operation *op, int64_t wholeTrailingDims) {
  ShardingRule rule;
  Value result = op->getResult(0);
  int64_t rank = rankOf(result);
  ArrayRef<int64_t> shape = shapeOf(result);
  for (int64_t i = 0; i < rank; ++i)
    rule.loops.push_back({i >= rank - wholeTrailingDims ? LoopKind::Whole : LoopKind::Parallel});
  for (Value operand : op->getOperands()) {
    SmallVector<ShardingDim, 4> d;
    int64_t r = rankOf(operand);
    for (int64_t i = 0; i < r; ++i) {
      int64_t loop = i + rank - r;
      // A broadcast dimension has one element for all of the loop's.
      d.push_back({shapeOf(operand)[i] == shape[loop] ? loop : -1, 1});
    }
    rule.operands.push_back(d);
  }
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  rule.results.push_back(dims(all));
  return rule;
}

/// lhs [...batch, M, K] x rhs [...batch, K, N] (or [K, N]) -> [...batch, M, N]:
/// batch, M and N parallel, K a reduction (a split K leaves partial sums:
/// the row-parallel matmul). The transposed forms store K and M (N) swapped.
ShardingRule MatmulOp::getShardingRule() {
  ShardingRule rule;
  int64_t rank = rankOf(getResult());
  int64_t batch = rank - 2;
  for (int64_t i = 0; i < batch; ++i)
    rule.loops.push_back({LoopKind::Parallel});
  int64_t m = batch, n = batch + 1, k = batch + 2;
  rule.loops.append({{LoopKind::Parallel}, {LoopKind::Parallel}, {LoopKind::Reduction}});
  ArrayRef<int64_t> out = shapeOf(getResult());
  auto operand = [&](Value v, int64_t rows, int64_t cols) {
    SmallVector<ShardingDim, 4> d;
    int64_t r = rankOf(v);
    for (int64_t i = 0; i < r - 2; ++i) {
      int64_t loop = i + batch - (r - 2);
      d.push_back({shapeOf(v)[i] == out[loop] ? loop : -1, 1});
    }
    d.push_back({rows, 1});
    d.push_back({cols, 1});
    return d;
  };
  rule.operands.push_back(getTransposeLhs() ? operand(getLhs(), k, m) : operand(getLhs(), m, k));
  rule.operands.push_back(getTransposeRhs() ? operand(getRhs(), n, k) : operand(getRhs(), k, n));
  SmallVector<int64_t> res;
  for (int64_t i = 0; i < rank; ++i)
    res.push_back(i);
  rule.results.push_back(dims(res));
  return rule;
}

/// table [V, D] looked up at ids [...S] -> [...S, D]: one loop per result
/// dimension, all parallel. The rows (V) follow no loop: a lookup reads
/// whichever rows its ids name, so a row split has no local form here (the
/// vocabulary-parallel lookup, passes/VocabParallel.cpp, masks and sums
/// instead). A column split of the table splits the result's last dimension
/// alike: T5's relative-position bias, a [buckets, heads] table looked up per
/// (query, key) pair, splits by heads with the attention that adds it. Its
/// VJP, lm.embedding_grad into the local table's type, is then the gradient's
/// column block.
ShardingRule EmbeddingOp::getShardingRule() {
  ShardingRule rule;
  int64_t rank = rankOf(getResult());
  SmallVector<int64_t> all, ids;
  for (int64_t i = 0; i < rank; ++i) {
    rule.loops.push_back({LoopKind::Parallel});
    all.push_back(i);
    if (i < rank - 1)
      ids.push_back(i);
  }
  rule.operands = {{ShardingDim{}, ShardingDim{rank - 1}}, dims(ids)};
  rule.results.push_back(dims(all));
  return rule;
}

/// Normalisation over the last dimension: it must be whole on every rank
/// (its mean and variance read all of it); gamma and beta follow it.
static ShardingRule normRule(Operation *op) {
  ShardingRule rule = ::mlir::lm::detail::pointwiseShardingRule(op, 1);
  int64_t last = rankOf(op->getResult(0)) - 1;
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    rule.operands[i] = dims({last});
  return rule;
}
ShardingRule LayerNormOp::getShardingRule() { return normRule(*this); }
ShardingRule RmsNormOp::getShardingRule() { return normRule(*this); }

ShardingRule AttentionOp::getShardingRule() { return attentionRule(getQ(), getNumHeads()); }
ShardingRule MaskedAttentionOp::getShardingRule() {
  ShardingRule rule = attentionRule(getQ(), getNumHeads());
  rule.operands.push_back(dims({0, 2})); // the key padding mask [B, Tk]
  return rule;
}
/// lm.masked_attention's rule, with the score bias (NumPy-broadcast to
/// [B, H, Tq, Tk]: its head dimension, where it has one, splits with the
/// heads, one element a head), the segment ids [B, T] and the dropout key
/// [B, 2] or a part's [2, B, 2] (rank 0 where absent). Its dropout mask is keyed by the
/// global head: -lm-spmd gives a head-split op the key of its part
/// (passes/Spmd.cpp), so the ranks drop what one process drops.
ShardingRule BiasedAttentionOp::getShardingRule() {
  ShardingRule rule = attentionRule(getQ(), getNumHeads());
  auto optional = [](Value v, ArrayRef<int64_t> loops) {
    return rankOf(v) == 0 ? SmallVector<ShardingDim, 4>{} : dims(loops);
  };
  rule.operands.push_back(optional(getMask(), {0, 2}));
  ArrayRef<int64_t> q = shapeOf(getQ()), k = shapeOf(getK());
  // The bias's dimensions, aligned right against [B, H, Tq, Tk]; a size-1
  // dimension broadcasts (loop -1).
  int64_t full[4] = {q[0], static_cast<int64_t>(getNumHeads()), q[1], k[1]};
  SmallVector<ShardingDim, 4> bias;
  int64_t r = rankOf(getBias());
  for (int64_t i = 0; i < r; ++i) {
    int64_t at = i + 4 - r;
    ShardingDim d;
    if (shapeOf(getBias())[i] == full[at] && full[at] > 1)
      d.loop = at == 0 ? 0 : at == 1 ? 3 : at == 2 ? 1 : 2;
    d.perUnit = at == 1;
    bias.push_back(d);
  }
  rule.operands.push_back(bias);
  rule.operands.push_back(optional(getSegments(), {0, 1}));
  SmallVector<ShardingDim, 4> key;
  if (rankOf(getKey()) == 2)
    key = {ShardingDim{0}, ShardingDim{}};
  else if (rankOf(getKey()) == 3)
    key = {ShardingDim{}, ShardingDim{0}, ShardingDim{}};
  rule.operands.push_back(key);
  return rule;
}

/// q [B, C, H*Dh] over the caches [B, W, Hkv*Dh]; the offset is a scalar.
ShardingRule CachedAttentionOp::getShardingRule() {
  ShardingRule rule = attentionRule(getQ(), getNumHeads());
  rule.operands.push_back({});
  return rule;
}

/// Each rank keeps its heads' part of the heads (a split of `shards`).
static void shardHeads(Operation *op, int64_t shards) {
  for (StringRef name : {"num_heads", "num_kv_heads"})
    if (auto a = op->getAttrOfType<IntegerAttr>(name); a && a.getInt() > 0)
      op->setAttr(name, IntegerAttr::get(a.getType(), a.getInt() / shards));
}
void AttentionOp::shardAttributes(int64_t loop, int64_t shards) {
  if (loop == 3)
    shardHeads(*this, shards);
}
void MaskedAttentionOp::shardAttributes(int64_t loop, int64_t shards) {
  if (loop == 3)
    shardHeads(*this, shards);
}
void BiasedAttentionOp::shardAttributes(int64_t loop, int64_t shards) {
  if (loop == 3)
    shardHeads(*this, shards);
}
void CachedAttentionOp::shardAttributes(int64_t loop, int64_t shards) {
  if (loop == 3)
    shardHeads(*this, shards);
}

/// cache [B, W, D] with rows of x [B, C, D] written: the feature dimension
/// may be split (a head-split cache), the rows not.
ShardingRule CacheWriteOp::getShardingRule() {
  ShardingRule rule;
  rule.loops = {{LoopKind::Parallel}, {LoopKind::Whole}, {LoopKind::Whole}, {LoopKind::Parallel}};
  rule.operands = {dims({0, 1, 3}), dims({0, 2, 3}), {}};
  rule.results = {dims({0, 1, 3})};
  return rule;
}

/// out[i] = x[permutation[i]]: one loop per result dimension.
ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> perm = getPermutation();
  rule.loops.assign(perm.size(), ShardingLoop{});
  SmallVector<ShardingDim, 4> in(perm.size());
  SmallVector<int64_t> res;
  for (size_t i = 0; i < perm.size(); ++i) {
    in[perm[i]] = {static_cast<int64_t>(i), 1};
    res.push_back(i);
  }
  rule.operands.push_back(in);
  rule.results.push_back(dims(res));
  return rule;
}

/// A row-major reshape regroups dimensions: the groups whose products agree
/// on both sides are one loop each, followed by the outermost dimension of
/// more than one element on each side (a split of it is a contiguous block of
/// the group's elements on either side); the inner dimensions of a group
/// cannot be split.
ShardingRule ReshapeOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getX()), out = shapeOf(getResult());
  ShardingRule rule;
  SmallVector<ShardingDim, 4> inDims(in.size()), outDims(out.size());
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // One group: the shortest runs of dimensions with equal products.
    size_t i0 = i, o0 = o;
    int64_t pi = i < in.size() ? in[i++] : 1, po = o < out.size() ? out[o++] : 1;
    while (pi != po) {
      if (pi < po && i < in.size())
        pi *= in[i++];
      else if (o < out.size())
        po *= out[o++];
      else
        break;
    }
    // Size-1 dimensions after the group join it.
    while (i < in.size() && in[i] == 1 && !(o < out.size() && out[o] == 1))
      ++i;
    while (o < out.size() && out[o] == 1 && !(i < in.size() && in[i] == 1))
      ++o;
    int64_t loop = rule.loops.size();
    rule.loops.push_back({LoopKind::Parallel});
    auto outer = [&](ArrayRef<int64_t> shape, size_t from, size_t to, SmallVector<ShardingDim, 4> &d) {
      for (size_t k = from; k < to; ++k)
        if (shape[k] > 1) {
          d[k] = {loop, 1};
          return;
        }
    };
    outer(in, i0, i, inDims);
    outer(out, o0, o, outDims);
  }
  rule.operands.push_back(inDims);
  rule.results.push_back(outDims);
  return rule;
}

/// One loop per result dimension; the concatenated one is whole (its two parts
/// would each be split, and the blocks of the result interleave them).
ShardingRule ConcatOp::getShardingRule() {
  ShardingRule rule;
  int64_t rank = rankOf(getResult());
  SmallVector<ShardingDim, 4> in;
  SmallVector<int64_t> res;
  for (int64_t i = 0; i < rank; ++i) {
    rule.loops.push_back({i == static_cast<int64_t>(getAxis()) ? LoopKind::Whole : LoopKind::Parallel});
    in.push_back({i == static_cast<int64_t>(getAxis()) ? -1 : i, 1});
    res.push_back(i);
  }
  rule.operands = {in, in};
  rule.results.push_back(dims(res));
  return rule;
}

/// One loop per result dimension. A dimension taken whole follows it; one
/// sliced to a segment [k n, (k + 1) n) of an extent N = s n (stride 1) follows
/// it as s segments (the packed q|k|v projection's q, k and v); any other
/// sliced dimension cannot be split.
ShardingRule SliceOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getX());
  ArrayRef<int64_t> start = getStart(), limit = getLimit(), stride = getStride();
  SmallVector<ShardingDim, 4> d;
  SmallVector<int64_t> res;
  for (size_t i = 0; i < in.size(); ++i) {
    rule.loops.push_back({LoopKind::Parallel});
    res.push_back(i);
    int64_t n = limit[i] - start[i];
    if (n == in[i])
      d.push_back({static_cast<int64_t>(i), 1});
    else if (stride[i] == 1 && n > 0 && in[i] % n == 0 && start[i] % n == 0)
      d.push_back({static_cast<int64_t>(i), in[i] / n});
    else
      d.push_back({-1, 1});
  }
  rule.operands.push_back(d);
  rule.results.push_back(dims(res));
  return rule;
}

/// A rank's slice of segment k is block k of its local operand: the bounds
/// scale with the split.
void SliceOp::shardAttributes(int64_t loop, int64_t shards) {
  SmallVector<int64_t> start(getStart()), limit(getLimit());
  start[loop] /= shards;
  limit[loop] = start[loop] + (getLimit()[loop] - getStart()[loop]) / shards;
  setStart(start);
  setLimit(limit);
}
