//===- LMOpCosts.cpp - FLOPs and bytes of the lm ops ------------*- C++ -*-===//
//
// CostOpInterface of the plan step ops, one section per op family (the
// elementwise unary and binary ops state theirs in LMOps.td; the model is in
// docs/compilation.md): the plan writer fills
// Step.flops from getFlops. GEMMs and attention are counted exactly (2 per
// multiply-add); elementwise, normalisation and loss ops get a small constant
// per element of the tensor they sweep; data movement counts zero.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;
using mlir::lm::detail::sweptElements;

static int64_t numElements(Type type) { return llvm::cast<ShapedType>(type).getNumElements(); }

int64_t mlir::lm::detail::operandAndResultBytes(Operation *op) {
  auto bytes = [](Type type) {
    auto shaped = llvm::cast<ShapedType>(type);
    return shaped.getNumElements() * static_cast<int64_t>(shaped.getElementTypeBitWidth() / 8);
  };
  int64_t total = 0;
  for (Type t : op->getOperandTypes())
    total += bytes(t);
  for (Type t : op->getResultTypes())
    total += bytes(t);
  return total;
}

int64_t mlir::lm::detail::sweptElements(Operation *op) {
  return std::max(numElements(op->getResult(0).getType()), numElements(op->getOperand(0).getType()));
}

//===----------------------------------------------------------------------===//
// Matmul: 2 flops per multiply-add, 2·batch·M·N·K = 2·numel(out)·K.
//===----------------------------------------------------------------------===//

int64_t MatmulOp::getFlops() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * numElements(getType()) * k;
}

//===----------------------------------------------------------------------===//
// Elementwise. The forward unary and binary ops state their per-element cost
// in LMOps.td (LM_ElementwiseDefs); these are the others.
//===----------------------------------------------------------------------===//

/// A conversion per element; counted as data movement.
int64_t CastOp::getFlops() { return 0; }
/// One add per input element.
int64_t SumToOp::getFlops() { return sweptElements(*this); }
/// tanh, sech², the chain rule.
int64_t GeluGradOp::getFlops() { return 16 * sweptElements(*this); }
int64_t GeluErfGradOp::getFlops() { return 16 * sweptElements(*this); }
/// One select per element of the result.
int64_t WhereOp::getFlops() { return numElements(getType()); }
/// One comparison per element of x.
int64_t ReduceMaxOp::getFlops() { return sweptElements(*this); }

//===----------------------------------------------------------------------===//
// Normalisation and losses, per element of the row-wise input.
//===----------------------------------------------------------------------===//

/// Mean, var, normalise, scale, shift.
int64_t LayerNormOp::getFlops() { return 8 * sweptElements(*this); }
int64_t LayerNormGradOp::getFlops() { return 16 * sweptElements(*this); }
/// Square, sum, rsqrt, scale.
int64_t RmsNormOp::getFlops() { return 4 * sweptElements(*this); }
int64_t RmsNormGradOp::getFlops() { return 10 * sweptElements(*this); }
/// Dot, sub, mul.
int64_t SoftmaxGradOp::getFlops() { return 4 * sweptElements(*this); }
/// Max, sub, exp, sum over the logits.
int64_t CrossEntropyOp::getFlops() { return 5 * sweptElements(*this); }
int64_t CrossEntropyGradOp::getFlops() { return 6 * sweptElements(*this); }
/// The two ops' counts: the same arithmetic, one read of the logits.
int64_t CrossEntropyWithGradOp::getFlops() { return 11 * numElements(getLogits().getType()); }
/// The logits GEMM (2 N D V) and the loss's 5 per logit; with the gradient
/// also the dh and dw GEMMs (4 N D V) and the gradient's 6 per logit.
static int64_t linearCeFlops(Value h, Value w, bool withGrad) {
  int64_t d = cast<ShapedType>(h.getType()).getShape().back();
  int64_t rows = d ? numElements(h.getType()) / d : 0, v = d ? numElements(w.getType()) / d : 0;
  int64_t logits = rows * v;
  return withGrad ? 6 * logits * d + 11 * logits : 2 * logits * d + 5 * logits;
}
int64_t LinearCrossEntropyOp::getFlops() { return linearCeFlops(getH(), getW(), false); }
int64_t LinearCrossEntropyWithGradOp::getFlops() { return linearCeFlops(getH(), getW(), true); }
/// The vocabulary-parallel loss on the rank's logits: the forward as
/// lm.linear_cross_entropy's; the backward as the fused backward's plus the
/// logits GEMM it recomputes (2 N D V).
int64_t LinearCrossEntropyStatsOp::getFlops() { return linearCeFlops(getH(), getW(), false); }
int64_t LinearCrossEntropyStatsGradOp::getFlops() {
  return linearCeFlops(getH(), getW(), true) + linearCeFlops(getH(), getW(), false);
}
/// One comparison per logit.
int64_t AccuracyOp::getFlops() { return sweptElements(*this); }
/// Max, exp, sum, then the cumulative walk: about 4 per logit.
int64_t SampleOp::getFlops() { return 4 * sweptElements(*this); }
int64_t ToFloatOp::getFlops() { return 0; }
int64_t ToIntOp::getFlops() { return 0; }
/// The mask's hash (about 8 integer operations) and the multiply, per element.
int64_t DropoutOp::getFlops() { return 9 * numElements(getType()); }
/// One select per element of the result, as lm.where.
int64_t WhereIntOp::getFlops() { return numElements(getType()); }

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// q·kᵀ and p·v are each 2·B·H·Tq·Tk·Dh, so 4·B·Tq·Tk·(H·Dh); the causal mask
/// (Tq = Tk) skips half of both products. Softmax is not counted (it is O(Tq·Tk)
/// against the O(Tq·Tk·Dh) products). A key padding mask is data: the count is
/// that of no masked key (an upper bound; the kernels skip wholly masked tiles).
static int64_t attentionFlops(ShapedType q, ShapedType k, bool causal) {
  ArrayRef<int64_t> s = q.getShape();
  int64_t flops = 4 * s[0] * s[1] * k.getShape()[1] * s[2];
  return causal ? flops / 2 : flops;
}

int64_t AttentionOp::getFlops() { return attentionFlops(getQ().getType(), getK().getType(), getCausal()); }
int64_t MaskedAttentionOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal());
}
/// The bias add and the segment compare are one more operation a score, left out
/// as the masks' are: the products dominate.
int64_t BiasedAttentionOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal());
}
int64_t BiasedAttentionGradOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal()) * 5 / 2;
}
/// Recomputes the probabilities (q·kᵀ) and forms dv, dp, dq and dk: five
/// Tq·Tk-sized products against the forward's two, 2.5×.
int64_t AttentionGradOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal()) * 5 / 2;
}
int64_t AttentionStatsOp::getFlops() { return attentionFlops(getQ().getType(), getK().getType(), getCausal()); }
/// attention_grad's five products; reading y and lse saves the recomputed forward,
/// which attention_grad's count leaves out too.
int64_t AttentionGradStatsOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal()) * 5 / 2;
}
/// The packed ops count as their unpacked forms: q and k are [B, T, H*Dh] (y's shape)
/// and [B, T, Hkv*Dh], and only q's width and k's length enter the count.
int64_t PackedAttentionOp::getFlops() { return attentionFlops(getType(), getType(), getCausal()); }
int64_t PackedAttentionStatsOp::getFlops() { return attentionFlops(getY().getType(), getY().getType(), getCausal()); }
int64_t PackedAttentionGradStatsOp::getFlops() {
  return attentionFlops(getY().getType(), getY().getType(), getCausal()) * 5 / 2;
}
int64_t MaskedAttentionGradOp::getFlops() {
  return attentionFlops(getQ().getType(), getK().getType(), getCausal()) * 5 / 2;
}

/// At most every cached key: 4·B·C·W·(H·Dh), the bound of C queries over a
/// window of W keys (a decode step at offset p does (p + 1) / W of it).
int64_t CachedAttentionOp::getFlops() {
  ArrayRef<int64_t> q = getQ().getType().getShape();
  return 4 * q[0] * q[1] * getK().getType().getShape()[1] * q[2];
}

//===----------------------------------------------------------------------===//
// Embeddings and data movement
//===----------------------------------------------------------------------===//

int64_t EmbeddingOp::getFlops() { return 0; }
/// The lookup reads the ids and only the table rows it gathers (as many bytes
/// as it writes), not the whole table.
int64_t EmbeddingOp::getBytesAccessed() {
  auto bytes = [](Value v) {
    auto t = llvm::cast<ShapedType>(v.getType());
    return t.getNumElements() * static_cast<int64_t>(t.getElementTypeBitWidth() / 8);
  };
  return bytes(getIds()) + 2 * bytes(getResult());
}
/// One scatter-add per element of dy.
int64_t EmbeddingGradOp::getFlops() { return numElements(getDy().getType()); }
int64_t EmbeddingGradAddOp::getFlops() { return numElements(getDy().getType()); }
int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
/// The collectives: group_size - 1 additions per element reduced (rank-order sums), none to gather.
int64_t AllReduceOp::getFlops() { return (getGroupSize() - 1) * numElements(getType()); }
int64_t ReduceScatterOp::getFlops() { return (getGroupSize() - 1) * numElements(getType()); }
int64_t AllGatherOp::getFlops() { return 0; }
int64_t AxisIndexOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t SliceGradOp::getFlops() { return 0; }
int64_t DynamicSliceOp::getFlops() { return 0; }
/// Writes the result, reads nothing.
int64_t FillOp::getFlops() { return 0; }
/// Writes only the new rows in place.
int64_t CacheWriteOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t TakeAlongAxisOp::getFlops() { return 0; }
/// One scatter-add per element of dy.
int64_t TakeAlongAxisGradOp::getFlops() { return numElements(getDy().getType()); }
