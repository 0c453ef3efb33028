//===- LMCanonicalize.cpp - lm canonicalization patterns --------*- C++ -*-===//
//
// Rewrites that need more than one op's folder, run by -canonicalize in the
// optimize stage of every pipeline (fused or not).
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The op of type ForwardOp among `operand`'s users that `same` accepts and that
/// precedes `grad` in its block (a backward op's forward), or null.
template <typename ForwardOp>
ForwardOp forwardBefore(Operation *grad, Value operand, llvm::function_ref<bool(ForwardOp)> same) {
  for (Operation *user : operand.getUsers()) {
    auto fwd = dyn_cast<ForwardOp>(user);
    if (fwd && fwd->getBlock() == grad->getBlock() && fwd->isBeforeInBlock(grad) && same(fwd))
      return fwd;
  }
  return ForwardOp();
}

/// add(slice_grad(a), slice_grad(b)) -> slice_grad(concat(a, b)) when the two
/// slices are unit-stride, equal on every dimension but one, and adjacent on
/// that one. The backward of a fused QKV projection sliced into q, k, v is the
/// chain add(add(slice_grad(dv), slice_grad(dk)), slice_grad(dq)): each
/// slice_grad zero-fills the whole [B, T, 3d] gradient and the adds read all
/// three back, while the rewrite leaves two concats and a slice_grad covering
/// the whole tensor, which folds away. The sum is exact either way (x + 0).
struct AdjacentSliceGradsToConcat : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    auto lhs = op.getLhs().getDefiningOp<SliceGradOp>();
    auto rhs = op.getRhs().getDefiningOp<SliceGradOp>();
    if (!lhs || !rhs || lhs == rhs || lhs.getType() != op.getType() || rhs.getType() != op.getType() ||
        !lhs->hasOneUse() || !rhs->hasOneUse())
      return failure();
    auto unit = [](SliceGradOp s) { return llvm::all_of(s.getStride(), [](int64_t v) { return v == 1; }); };
    if (!unit(lhs) || !unit(rhs))
      return failure();
    std::optional<int64_t> axis;
    for (size_t d = 0; d < lhs.getStart().size(); ++d) {
      if (lhs.getStart()[d] == rhs.getStart()[d] && lhs.getLimit()[d] == rhs.getLimit()[d])
        continue;
      if (axis)
        return failure();
      axis = d;
    }
    if (!axis)
      return failure();
    SliceGradOp first = lhs, second = rhs;
    if (first.getLimit()[*axis] != second.getStart()[*axis])
      std::swap(first, second);
    if (first.getLimit()[*axis] != second.getStart()[*axis])
      return failure();
    Value joined = rewriter.create<ConcatOp>(op.getLoc(), first.getDy(), second.getDy(),
                                             rewriter.getI64IntegerAttr(*axis));
    SmallVector<int64_t> limit(first.getLimit());
    limit[*axis] = second.getLimit()[*axis];
    rewriter.replaceOpWithNewOp<SliceGradOp>(op, op.getType(), joined, first.getStart(), limit, first.getStride());
    return success();
  }
};

/// attention_grad(q, k, v, dy) whose forward y = attention(q, k, v) (same
/// operands and attributes) precedes it in its block: the forward becomes
/// attention_stats, which also returns the row logsumexp, and the backward
/// attention_grad_stats, which reads y and lse instead of re-running the
/// forward sweep (two of its seven tile products and one of its two passes of
/// exponentials). The values are the same bits: the forward and the recompute
/// are one function over the same query blocks.
struct AttentionGradFromStats : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionGradOp grad, PatternRewriter &rewriter) const override {
    auto forward = forwardBefore<AttentionOp>(grad, grad.getQ(), [&](AttentionOp attn) {
      return attn.getQ() == grad.getQ() && attn.getK() == grad.getK() && attn.getV() == grad.getV() &&
             attn.getNumHeads() == grad.getNumHeads() && attn.getCausal() == grad.getCausal() &&
             attn.getNumKvHeads() == grad.getNumKvHeads();
    });
    if (!forward)
      return failure();
    rewriter.setInsertionPoint(forward);
    auto stats = rewriter.create<AttentionStatsOp>(forward.getLoc(), forward.getQ(), forward.getK(), forward.getV(),
                                                   forward.getNumHeadsAttr(), forward.getCausalAttr(),
                                                   forward.getNumKvHeadsAttr());
    rewriter.replaceOp(forward, stats.getY());
    rewriter.setInsertionPoint(grad);
    rewriter.replaceOpWithNewOp<AttentionGradStatsOp>(grad, grad.getQ(), grad.getK(), grad.getV(), stats.getY(),
                                                      stats.getLse(), grad.getDy(), grad.getNumHeadsAttr(),
                                                      grad.getCausalAttr(), grad.getNumKvHeadsAttr());
    return success();
  }
};

/// add(x, embedding_grad(ids, dy)) -> embedding_grad_add(x, ids, dy) (either
/// operand order), x of the table's type. A table used both as the input
/// embedding and as the output projection (GPT-2's tied wte) gets its gradient
/// as this sum: embedding_grad zero-fills a [V, D] table to scatter B*T rows
/// into, and the add reads both tables back (GPT-2 small: 154 MB each, about
/// 25 ms a step on two cores); the rewrite scatters the rows into x's values.
/// The rows are added to x one by one instead of to zeros first, which rounds
/// differently (the sums are equal in exact arithmetic).
struct AddEmbeddingGradInto : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      Value scattered = side ? op.getLhs() : op.getRhs(), base = side ? op.getRhs() : op.getLhs();
      auto grad = scattered.getDefiningOp<EmbeddingGradOp>();
      if (!grad || !grad->hasOneUse() || grad.getType() != op.getType() || base.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<EmbeddingGradAddOp>(op, base, grad.getIds(), grad.getDy());
      rewriter.eraseOp(grad);
      return success();
    }
    return failure();
  }
};

/// cross_entropy_grad(x, t, dloss) whose forward loss = cross_entropy(x, t)
/// (same ignore_index) precedes it in its block, with dloss defined before that
/// forward (the backward's seed, a constant): both become one
/// cross_entropy_with_grad at the forward's place, which reads each row of the
/// logits once and computes its exponentials once (GPT-2 small's [256, 50257]
/// logits: two passes over 51 MB and their exps saved). The values are those of
/// the pair: the same row max, sum of exponentials and formulas.
struct CrossEntropyWithGrad : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyGradOp grad, PatternRewriter &rewriter) const override {
    auto forward = forwardBefore<CrossEntropyOp>(grad, grad.getLogits(), [&](CrossEntropyOp ce) {
      return ce.getLogits() == grad.getLogits() && ce.getTargets() == grad.getTargets() &&
             ce.getIgnoreIndex() == grad.getIgnoreIndex();
    });
    if (!forward)
      return failure();
    Value dloss = grad.getDloss();
    if (auto arg = dyn_cast<BlockArgument>(dloss)) {
      if (arg.getOwner() != forward->getBlock())
        return failure();
    } else if (dloss.getDefiningOp()->getBlock() != forward->getBlock() ||
               !dloss.getDefiningOp()->isBeforeInBlock(forward)) {
      return failure();
    }
    rewriter.setInsertionPoint(forward);
    auto both = rewriter.create<CrossEntropyWithGradOp>(forward.getLoc(), forward.getLogits(), forward.getTargets(),
                                                        dloss, forward.getIgnoreIndexAttr());
    rewriter.replaceOp(forward, both.getLoss());
    rewriter.replaceOp(grad, both.getDlogits());
    return success();
  }
};

} // namespace

void CrossEntropyGradOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<CrossEntropyWithGrad>(context);
}

void AttentionGradOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AttentionGradFromStats>(context);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AdjacentSliceGradsToConcat, AddEmbeddingGradInto>(context);
}
