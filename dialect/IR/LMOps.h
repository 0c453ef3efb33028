//===- LMOps.h - lm dialect ops ---------------------------------*- C++ -*-===//
//
// The ops of the `lm` dialect (docs/dialect.md), their gradient interface,
// the dialect-wide SameFloatElementType trait and the ResultsMatchInferred
// trait of ops whose result types are inferred.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMDialect.h"
#include "dialect/IR/LMSharding.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::OpTrait::lm {
namespace impl {
/// Fails, naming both types, when two float operands or results of `op` have
/// different element types.
LogicalResult verifySameFloatElementType(Operation *op);
/// Fails, naming the result and the expected shape or element type, when a
/// result of `op` (an InferTypeOpInterface op) differs from its inferred type;
/// fails with the shape rule's message when inference does.
LogicalResult verifyResultsMatchInferred(Operation *op);
} // namespace impl

/// Dialect-wide invariant: an op never mixes f32 and f64 tensors.
template <typename ConcreteType>
class SameFloatElementType : public TraitBase<ConcreteType, SameFloatElementType> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return impl::verifySameFloatElementType(op);
  }
};

/// Marks an op whose float operands and results may differ in element type
/// (a reduced-precision storage type beside f32): the op checks its own rule,
/// and SameFloatElementType leaves it alone.
template <typename ConcreteType>
class MixesFloatTypes : public TraitBase<ConcreteType, MixesFloatTypes> {};

/// The results of an op with inferred result types are exactly those types
/// (listed before InferTypeOpInterface, so its messages come first).
template <typename ConcreteType>
class ResultsMatchInferred : public TraitBase<ConcreteType, ResultsMatchInferred> {
public:
  static LogicalResult verifyTrait(Operation *op) { return impl::verifyResultsMatchInferred(op); }
};

/// A step that may update a STATE buffer in place (lm.cache_write): a marker
/// lm-tblgen copies into the plan op table; it verifies nothing.
template <typename ConcreteType>
class UpdatesStateInPlace : public TraitBase<ConcreteType, UpdatesStateInPlace> {};

/// A step whose kernel may be given its operand 0's buffer as its result's
/// (lm.embedding_grad_add): when that operand has no other use, the plan writer
/// writes the result over it instead of into a buffer of its own. A marker
/// lm-tblgen copies into the plan op table; it verifies nothing.
template <typename ConcreteType>
class MayOverwriteOperand0 : public TraitBase<ConcreteType, MayOverwriteOperand0> {};
} // namespace mlir::OpTrait::lm

namespace mlir::lm::detail {
/// Bytes of all operands and results of `op` (the default of
/// CostOpInterface::getBytesAccessed).
int64_t operandAndResultBytes(Operation *op);
/// Elements of the tensor a per-element kernel sweeps: the larger of the first
/// operand and the first result (sum_to and the losses read more than they
/// write; broadcasting ops write more).
int64_t sweptElements(Operation *op);
/// inferReturnTypes of a broadcasting binary op (shapes::broadcast).
LogicalResult inferBroadcast(StringRef opName, std::optional<Location> loc, Value lhs, Value rhs,
                             SmallVectorImpl<Type> &types);
/// inferReturnTypes of an elementwise op: `x`'s type, which needs rank >=
/// `minRank` (1 for the ops working along the last dimension; `what` names x).
LogicalResult inferElementwise(StringRef opName, std::optional<Location> loc, Value x, StringRef what,
                               int64_t minRank, SmallVectorImpl<Type> &types);
/// The sharding rule of a pointwise op (ShardingOpInterface's default): one
/// parallel loop per result dimension, each operand's dimensions aligned to the
/// result's trailing ones (NumPy broadcasting; a broadcast size-1 dimension
/// follows no loop), the last `wholeTrailingDims` loops whole (an op working
/// along the last dimension, softmax).
ShardingRule pointwiseShardingRule(Operation *op, int64_t wholeTrailingDims);
} // namespace mlir::lm::detail

#include "dialect/IR/LMInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/IR/LMOps.h.inc"
