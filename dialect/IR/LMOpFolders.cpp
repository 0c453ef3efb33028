//===- LMOpFolders.cpp - lm op folders --------------------------*- C++ -*-===//
//
// Folders used by -canonicalize: constants, identity and chained reshapes and
// transposes. Chains are folded in place (the op takes the inner op's operand),
// which leaves the inner op dead for the canonicalizer to erase.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::lm;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// reshape(x : T) -> T is x; reshape(reshape(x)) is one reshape of x; a
/// reshape of a constant is the constant's data under the new shape.
OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(adaptor.getX()))
    return dense.reshape(getType());
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    if (inner.getX().getType() == getType())
      return inner.getX();
    getOperation()->setOperand(0, inner.getX());
    return getResult();
  }
  return {};
}

static bool isIdentity(ArrayRef<int64_t> permutation) {
  for (auto [i, p] : llvm::enumerate(permutation))
    if (p != static_cast<int64_t>(i))
      return false;
  return true;
}

/// An identity permutation is x; transpose(transpose(x, p1), p2) is
/// transpose(x, c) with c[i] = p1[p2[i]] (out[i] = mid[p2[i]] = x[p1[p2[i]]]);
/// a transpose of a splat constant is the splat in the new shape.
OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> outer = getPermutation();
  if (isIdentity(outer))
    return getX();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getX()))
    return splat.resizeSplat(getType());
  if (auto inner = getX().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> first = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : outer)
      composed.push_back(first[p]);
    if (isIdentity(composed))
      return inner.getX();
    getOperation()->setOperand(0, inner.getX());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic: splat constants and identities
//===----------------------------------------------------------------------===//

/// The splat float value of a folded operand, if it is one.
static std::optional<APFloat> splatValue(Attribute attr) {
  auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat || !llvm::isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

static bool isSplatOf(Attribute attr, double value) {
  std::optional<APFloat> v = splatValue(attr);
  return v && v->isExactlyValue(value);
}

/// Folds `lhs op rhs` when both are splats (the result is a splat of the
/// broadcast result type), and `x op identity` to x when x already has the
/// result type (a broadcasting identity still changes the shape). Identities
/// must be IEEE-exact for every x, signed zeros included: the additive one is
/// -0.0 (x + 0.0 turns x = -0.0 into +0.0) and x - 0.0 is x, as in arith.
static OpFoldResult foldBinary(Operation *op, Attribute lhs, Attribute rhs,
                               function_ref<APFloat(APFloat, const APFloat &)> compute,
                               std::optional<double> rightIdentity,
                               std::optional<double> leftIdentity) {
  auto type = llvm::cast<ShapedType>(op->getResult(0).getType());
  std::optional<APFloat> l = splatValue(lhs), r = splatValue(rhs);
  if (l && r)
    return DenseElementsAttr::get(type, compute(*l, *r));
  Value x = op->getOperand(0), y = op->getOperand(1);
  if (rightIdentity && isSplatOf(rhs, *rightIdentity) && x.getType() == type)
    return x;
  if (leftIdentity && isSplatOf(lhs, *leftIdentity) && y.getType() == type)
    return y;
  return {};
}

static constexpr llvm::RoundingMode kRound = llvm::RoundingMode::NearestTiesToEven;

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(),
      [](APFloat a, const APFloat &b) {
        a.add(b, kRound);
        return a;
      }, -0.0, -0.0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(),
      [](APFloat a, const APFloat &b) {
        a.subtract(b, kRound);
        return a;
      }, 0.0, std::nullopt);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(),
      [](APFloat a, const APFloat &b) {
        a.multiply(b, kRound);
        return a;
      }, 1.0, 1.0);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(),
      [](APFloat a, const APFloat &b) {
        a.divide(b, kRound);
        return a;
      }, 1.0, std::nullopt);
}

/// neg(neg(x)) is x; the negation of a splat is a splat.
OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  if (std::optional<APFloat> v = splatValue(adaptor.getX()))
    return DenseElementsAttr::get(llvm::cast<ShapedType>(getType()), neg(*v));
  return {};
}

//===----------------------------------------------------------------------===//
// Slices
//===----------------------------------------------------------------------===//

/// A slice whose result has the operand's shape selects everything (a dim of
/// size d >= 2 forces start 0, limit d, stride 1; a dim of size 1 is kept by
/// any stride), e.g. `wpe[0:T]` with T = ctx.
OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

/// The adjoint of a slice that selects everything is the identity.
OpFoldResult SliceGradOp::fold(FoldAdaptor) {
  if (getDy().getType() == getType())
    return getDy();
  return {};
}
