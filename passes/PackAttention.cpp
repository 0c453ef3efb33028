//===- PackAttention.cpp - -lm-pack-attention ------------------*- C++ -*-===//
//
// Attention that reads q, k and v in place from the fused projection that
// wrote them. GPT-2's block computes `qkv = x @ wqkv + bqkv` and attends over
// three last-dimension slices of it; the train step then copies the slices
// (and keeps them alive for the backward) and concatenates dq, dk, dv back
// into dqkv:
//
//   q = slice(qkv)[.., 0:Wq]  k = slice(qkv)[.., Wq:Wq+Wk]  v = slice(qkv)[.., Wq+Wk:]
//   y, lse = attention_stats(q, k, v)
//   dq, dk, dv = attention_grad_stats(q, k, v, y, lse, dy)
//   dqkv = concat(dq, concat(dk, dv))                 (any tree along the last axis)
//
// becomes
//
//   y, lse = packed_attention_stats(qkv)
//   dqkv = packed_attention_grad_stats(qkv, y, lse, dy)
//
// and a forward `attention` of such slices `packed_attention(qkv)`. The packed
// kernels run the same tile math with other strides, so the values are the
// same bits. The match is exact and conservative: the three slices take every
// batch row and position, q, k, v lie side by side in that order and cover
// qkv's last dimension (grouped-query widths included: Wq = H*Dh, Wk = Wv =
// Hkv*Dh), and a grad is packed only when dq, dk, dv are read by that one
// concatenation alone; otherwise the ops are left as they are.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

#include <functional>

namespace mlir::lm {
#define GEN_PASS_DEF_LMPACKATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

int64_t lastDim(Value v) { return cast<ShapedType>(v.getType()).getShape().back(); }

/// True when `s` takes every row of dimensions 0 and 1 of its rank-3 operand,
/// with stride 1, and columns [from, to) of the last.
bool takesColumns(SliceOp s, int64_t from, int64_t to) {
  ArrayRef<int64_t> shape = cast<ShapedType>(s.getX().getType()).getShape();
  ArrayRef<int64_t> start = s.getStart(), limit = s.getLimit(), stride = s.getStride();
  return shape.size() == 3 && llvm::all_of(stride, [](int64_t x) { return x == 1; }) && start[0] == 0 &&
         start[1] == 0 && limit[0] == shape[0] && limit[1] == shape[1] && start[2] == from && limit[2] == to;
}

/// The tensor q, k and v are side-by-side column blocks of, covering its last
/// dimension in that order; null when they are not.
Value packedSource(Value q, Value k, Value v) {
  auto sq = q.getDefiningOp<SliceOp>(), sk = k.getDefiningOp<SliceOp>(), sv = v.getDefiningOp<SliceOp>();
  if (!sq || !sk || !sv || sk.getX() != sq.getX() || sv.getX() != sq.getX())
    return Value();
  Value qkv = sq.getX();
  const int64_t wq = lastDim(q), wk = lastDim(k), wv = lastDim(v);
  if (wv != wk || lastDim(qkv) != wq + wk + wv || !takesColumns(sq, 0, wq) || !takesColumns(sk, wq, wq + wk) ||
      !takesColumns(sv, wq + wk, wq + wk + wv))
    return Value();
  return qkv;
}

/// The concatenation (a tree of lm.concat along the last axis) whose leaves are
/// exactly dq, dk, dv in that order, each read by it alone, with every inner
/// node read only by its parent; null when there is none.
ConcatOp packedConcat(AttentionGradStatsOp grad) {
  Value dq = grad.getDq();
  const int64_t rank = cast<ShapedType>(dq.getType()).getRank();
  const int64_t width = lastDim(grad.getDq()) + 2 * lastDim(grad.getDk());
  auto concatOf = [&](Value v) -> ConcatOp {
    if (!v.hasOneUse())
      return ConcatOp();
    auto c = dyn_cast<ConcatOp>(*v.getUsers().begin());
    return c && c.getAxis() == rank - 1 ? c : ConcatOp();
  };
  // Climb from dq to the concatenation as wide as dqkv.
  ConcatOp root = concatOf(dq);
  while (root && lastDim(root.getResult()) < width)
    root = concatOf(root.getResult());
  if (!root || lastDim(root.getResult()) != width)
    return ConcatOp();
  SmallVector<Value> leaves;
  std::function<void(Value, bool)> flatten = [&](Value v, bool isRoot) {
    auto c = v.getDefiningOp<ConcatOp>();
    if (c && c.getAxis() == rank - 1 && (isRoot || v.hasOneUse()) && v != grad.getDq() && v != grad.getDk() &&
        v != grad.getDv()) {
      flatten(c.getLhs(), false);
      flatten(c.getRhs(), false);
    } else {
      leaves.push_back(v);
    }
  };
  flatten(root, true);
  if (leaves.size() != 3 || leaves[0] != grad.getDq() || leaves[1] != grad.getDk() || leaves[2] != grad.getDv() ||
      !grad.getDk().hasOneUse() || !grad.getDv().hasOneUse())
    return ConcatOp();
  return root;
}

/// Erases the concatenation tree under `root` (its inner nodes have no other reader).
void eraseConcatTree(ConcatOp root) {
  SmallVector<Operation *> inner;
  for (Value operand : {root.getLhs(), root.getRhs()})
    if (auto c = operand.getDefiningOp<ConcatOp>())
      inner.push_back(c);
  root.erase();
  for (Operation *op : inner)
    if (op->use_empty())
      eraseConcatTree(cast<ConcatOp>(op));
}

void eraseIfUnused(Value v) {
  if (Operation *op = v.getDefiningOp(); op && op->use_empty())
    op->erase();
}

/// Forward only (an eval or forward program): lm.attention of packed slices.
void packForward(AttentionOp attn) {
  Value qkv = packedSource(attn.getQ(), attn.getK(), attn.getV());
  if (!qkv)
    return;
  OpBuilder b(attn);
  auto packed = b.create<PackedAttentionOp>(attn.getLoc(), qkv, attn.getNumHeadsAttr(), attn.getCausalAttr(),
                                            attn.getNumKvHeadsAttr());
  Value q = attn.getQ(), k = attn.getK(), v = attn.getV();
  attn.getResult().replaceAllUsesWith(packed.getResult());
  attn.erase();
  for (Value s : {q, k, v})
    eraseIfUnused(s);
}

/// The train step's pair: attention_stats and every attention_grad_stats reading
/// its statistics, all or nothing.
void packWithGrads(AttentionStatsOp stats) {
  Value q = stats.getQ(), k = stats.getK(), v = stats.getV();
  Value qkv = packedSource(q, k, v);
  if (!qkv)
    return;
  SmallVector<std::pair<AttentionGradStatsOp, ConcatOp>> grads;
  for (Operation *user : stats.getLse().getUsers()) {
    auto grad = dyn_cast<AttentionGradStatsOp>(user);
    if (!grad || grad.getQ() != q || grad.getK() != k || grad.getV() != v || grad.getY() != stats.getY() ||
        grad.getNumHeads() != stats.getNumHeads() || grad.getCausal() != stats.getCausal() ||
        grad.getNumKvHeads() != stats.getNumKvHeads())
      return;
    ConcatOp root = packedConcat(grad);
    if (!root)
      return;
    grads.push_back({grad, root});
  }
  // Other readers of q, k or v (a grad without statistics, a frozen branch) keep
  // their slices; the slices are erased only once nothing reads them.
  OpBuilder b(stats);
  auto packed = b.create<PackedAttentionStatsOp>(stats.getLoc(), qkv, stats.getNumHeadsAttr(), stats.getCausalAttr(),
                                                 stats.getNumKvHeadsAttr());
  stats.getY().replaceAllUsesWith(packed.getY());
  stats.getLse().replaceAllUsesWith(packed.getLse());
  stats.erase();
  for (auto [grad, root] : grads) {
    b.setInsertionPoint(grad);
    auto dqkv = b.create<PackedAttentionGradStatsOp>(grad.getLoc(), qkv, packed.getY(), packed.getLse(),
                                                     grad.getDy(), grad.getNumHeadsAttr(), grad.getCausalAttr(),
                                                     grad.getNumKvHeadsAttr());
    root.getResult().replaceAllUsesWith(dqkv.getDqkv());
    eraseConcatTree(root);
    grad.erase();
  }
  for (Value s : {q, k, v})
    eraseIfUnused(s);
}

struct LMPackAttentionPass : public lm::impl::LMPackAttentionPassBase<LMPackAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionStatsOp> withGrads;
    SmallVector<AttentionOp> forward;
    getOperation().walk([&](Operation *op) {
      if (auto s = dyn_cast<AttentionStatsOp>(op))
        withGrads.push_back(s);
      else if (auto a = dyn_cast<AttentionOp>(op))
        forward.push_back(a);
    });
    for (AttentionStatsOp s : withGrads)
      packWithGrads(s);
    for (AttentionOp a : forward)
      packForward(a);
  }
};

} // namespace
