//===- LMOps.cpp - lm dialect op verifiers ----------------------*- C++ -*-===//
//
// Verifiers of the lm ops. Every shape rule comes from
// runtime/kernels/shape_rules.h, so the dialect, the frontend and the runtime
// accept exactly the same programs; this file only adapts types and
// diagnostics. Element types are checked by the ODS constraints and the
// dialect-wide SameFloatElementType trait.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"
#include "runtime/kernels/shape_rules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace mlir::lm;
namespace shapes = lmrt::shapes;
using shapes::Dims;

//===----------------------------------------------------------------------===//
// Dialect-wide trait
//===----------------------------------------------------------------------===//

LogicalResult mlir::OpTrait::lm::impl::verifySameFloatElementType(Operation *op) {
  Type first;
  auto check = [&](Type t) -> LogicalResult {
    auto shaped = llvm::dyn_cast<ShapedType>(t);
    if (!shaped || !llvm::isa<FloatType>(shaped.getElementType()))
      return success();
    if (!first) {
      first = shaped.getElementType();
      return success();
    }
    if (shaped.getElementType() == first)
      return success();
    return op->emitOpError("mixes float element types ")
           << first << " and " << shaped.getElementType()
           << "; all float operands and results of an lm op share one type";
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers bridging MLIR types and the shared shape rules
//===----------------------------------------------------------------------===//

namespace {

Dims dimsOf(Type type) {
  ArrayRef<int64_t> shape = llvm::cast<ShapedType>(type).getShape();
  return Dims(shape.begin(), shape.end());
}
Dims dimsOf(Value value) { return dimsOf(value.getType()); }
Dims dimsOf(ArrayRef<int64_t> values) { return Dims(values.begin(), values.end()); }

/// The rule messages start with the rule's name ("matmul: ..."); the op
/// diagnostic already names the op, so drop that prefix.
std::string ruleMessage(const std::string &err) {
  size_t colon = err.find(": ");
  return colon == std::string::npos ? err : err.substr(colon + 2);
}

/// Checks that `type` has the shape `expected` (inferred by a shape rule).
LogicalResult checkShape(Operation *op, StringRef what, Type type, const Dims &expected) {
  if (dimsOf(type) == expected)
    return success();
  return op->emitOpError() << what << " type " << type << " does not match the expected shape "
                           << shapes::str(expected);
}

/// Runs a shape rule's outcome through the op's diagnostics: the inferred
/// shape, or failure after reporting the rule's message at the op.
FailureOr<Dims> inferShape(Operation *op, std::optional<Dims> inferred, const std::string &err) {
  if (!inferred) {
    op->emitOpError() << ruleMessage(err);
    return failure();
  }
  return std::move(*inferred);
}

/// inferShape, then checks the op's first result against the inferred shape.
LogicalResult checkRule(Operation *op, std::optional<Dims> inferred, const std::string &err) {
  FailureOr<Dims> shape = inferShape(op, std::move(inferred), err);
  if (failed(shape))
    return failure();
  return checkShape(op, "result", op->getResult(0).getType(), *shape);
}

/// Checks layer_norm's epsilon, which sits under a square root: it must be a
/// finite number > 0 (written so that NaN, which fails every comparison, is
/// rejected too).
LogicalResult checkEpsilon(Operation *op, const APFloat &epsilon) {
  double value = epsilon.convertToDouble();
  if (std::isfinite(value) && value > 0.0)
    return success();
  return op->emitOpError("epsilon must be finite and > 0, got ") << value;
}

} // namespace

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  std::string err;
  return checkRule(*this, shapes::embedding(dimsOf(getTable()), dimsOf(getIds()), err), err);
}

LogicalResult MatmulOp::verify() {
  std::string err;
  return checkRule(*this,
                   shapes::matmul(dimsOf(getLhs()), dimsOf(getRhs()), getTransposeLhs(),
                                  getTransposeRhs(), err),
                   err);
}

/// Broadcasting binary ops share one rule; `name` is the mnemonic.
static LogicalResult verifyBroadcast(Operation *op, Value lhs, Value rhs) {
  std::string err;
  std::string name = op->getName().stripDialect().str();
  return checkRule(op, shapes::broadcast(dimsOf(lhs), dimsOf(rhs), err, name.c_str()), err);
}
LogicalResult AddOp::verify() { return verifyBroadcast(*this, getLhs(), getRhs()); }
LogicalResult SubOp::verify() { return verifyBroadcast(*this, getLhs(), getRhs()); }
LogicalResult MulOp::verify() { return verifyBroadcast(*this, getLhs(), getRhs()); }
LogicalResult DivOp::verify() { return verifyBroadcast(*this, getLhs(), getRhs()); }

LogicalResult NegOp::verify() {
  return checkShape(*this, "result", getType(), dimsOf(getX()));
}
LogicalResult GeluOp::verify() {
  return checkShape(*this, "result", getType(), dimsOf(getX()));
}
LogicalResult SoftmaxOp::verify() {
  if (getX().getType().getRank() < 1)
    return emitOpError("operand must have rank >= 1 (softmax runs over the last dimension)");
  return checkShape(*this, "result", getType(), dimsOf(getX()));
}

LogicalResult LayerNormOp::verify() {
  if (failed(checkEpsilon(*this, getEpsilon())))
    return failure();
  std::string err;
  return checkRule(
      *this, shapes::layerNorm(dimsOf(getX()), dimsOf(getGamma()), dimsOf(getBeta()), err), err);
}

LogicalResult AttentionOp::verify() {
  std::string err;
  return checkRule(*this,
                   shapes::attention(dimsOf(getQ()), dimsOf(getK()), dimsOf(getV()),
                                     getNumHeads(), err),
                   err);
}

LogicalResult ReshapeOp::verify() {
  std::string err;
  return checkRule(*this, shapes::reshape(dimsOf(getX()), dimsOf(getType()), err), err);
}

LogicalResult TransposeOp::verify() {
  std::string err;
  return checkRule(*this,
                   shapes::transpose(dimsOf(getX()), dimsOf(getPermutation()), err), err);
}

LogicalResult SliceOp::verify() {
  if (getX().getType().getElementType() != getType().getElementType())
    return emitOpError("result element type ")
           << getType().getElementType() << " differs from the operand's "
           << getX().getType().getElementType();
  std::string err;
  return checkRule(*this,
                   shapes::slice(dimsOf(getX()), dimsOf(getStart()), dimsOf(getLimit()),
                                 dimsOf(getStride()), err),
                   err);
}

LogicalResult CrossEntropyOp::verify() {
  std::string err;
  return checkRule(*this,
                   shapes::crossEntropy(dimsOf(getLogits()), dimsOf(getTargets()), err), err);
}

LogicalResult SumToOp::verify() {
  std::string err;
  Dims to = dimsOf(getType());
  bool ok = shapes::sumTo(dimsOf(getX()), to, err);
  return inferShape(*this, ok ? std::optional<Dims>(to) : std::nullopt, err);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult GeluGradOp::verify() {
  Dims x = dimsOf(getX());
  if (failed(checkShape(*this, "dy", getDy().getType(), x)))
    return failure();
  return checkShape(*this, "result", getType(), x);
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(checkEpsilon(*this, getEpsilon())))
    return failure();
  std::string err;
  Dims x = dimsOf(getX()), gamma = dimsOf(getGamma());
  if (failed(inferShape(*this, shapes::layerNorm(x, gamma, gamma, err), err)))
    return failure();
  if (failed(checkShape(*this, "dy", getDy().getType(), x)) ||
      failed(checkShape(*this, "dx", getDx().getType(), x)) ||
      failed(checkShape(*this, "dgamma", getDgamma().getType(), gamma)) ||
      failed(checkShape(*this, "dbeta", getDbeta().getType(), gamma)))
    return failure();
  return success();
}

LogicalResult AttentionGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(
      *this, shapes::attention(dimsOf(getQ()), dimsOf(getK()), dimsOf(getV()), getNumHeads(), err),
      err);
  if (failed(shape))
    return failure();
  if (failed(checkShape(*this, "dy", getDy().getType(), *shape)) ||
      failed(checkShape(*this, "dq", getDq().getType(), *shape)) ||
      failed(checkShape(*this, "dk", getDk().getType(), *shape)) ||
      failed(checkShape(*this, "dv", getDv().getType(), *shape)))
    return failure();
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  if (getY().getType().getRank() < 1)
    return emitOpError("y must have rank >= 1 (softmax runs over the last dimension)");
  Dims y = dimsOf(getY());
  if (failed(checkShape(*this, "dy", getDy().getType(), y)))
    return failure();
  return checkShape(*this, "result", getType(), y);
}

LogicalResult CrossEntropyGradOp::verify() {
  std::string err;
  if (failed(inferShape(*this, shapes::crossEntropy(dimsOf(getLogits()), dimsOf(getTargets()), err),
                        err)))
    return failure();
  return checkShape(*this, "result", getType(), dimsOf(getLogits()));
}

LogicalResult EmbeddingGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape =
      inferShape(*this, shapes::embedding(dimsOf(getType()), dimsOf(getIds()), err), err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), *shape);
}

LogicalResult SliceGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(*this,
                                     shapes::slice(dimsOf(getType()), dimsOf(getStart()),
                                                   dimsOf(getLimit()), dimsOf(getStride()), err),
                                     err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), *shape);
}

#define GET_OP_CLASSES
#include "dialect/IR/LMOps.cpp.inc"

#include "dialect/IR/LMInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

void FusionOp::build(OpBuilder &builder, OperationState &state, TypeRange resultTypes, ValueRange inputs) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult FusionOp::verify() {
  if (getResults().empty())
    return emitOpError("must have at least one result");
  return success();
}

LogicalResult FusionOp::verifyRegions() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("region has ") << block.getNumArguments() << " arguments for " << getInputs().size()
                                      << " inputs";
  for (auto [i, arg, input] : llvm::enumerate(block.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("region argument ") << i << " has type " << arg.getType() << ", but input " << i
                                              << " has type " << input.getType();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("region must end in lm.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("lm.yield returns ") << yield.getValues().getTypes() << " but the results are "
                                            << getResultTypes();
  for (Operation &op : block.without_terminator())
    if (op.getDialect() != (*this)->getDialect() || isa<FusionOp>(op))
      return op.emitOpError("cannot be inside an lm.fusion region (only lm ops, not nested fusions)");
  return success();
}
