//===- LMOps.h - lm dialect ops ---------------------------------*- C++ -*-===//
//
// The ops of the `lm` dialect (docs/dialect.md), their gradient interface and
// the dialect-wide SameFloatElementType trait.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::OpTrait::lm {
namespace impl {
/// Fails, naming both types, when two float operands or results of `op` have
/// different element types.
LogicalResult verifySameFloatElementType(Operation *op);
} // namespace impl

/// Dialect-wide invariant: an op never mixes f32 and f64 tensors.
template <typename ConcreteType>
class SameFloatElementType : public TraitBase<ConcreteType, SameFloatElementType> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return impl::verifySameFloatElementType(op);
  }
};
} // namespace mlir::OpTrait::lm

#include "dialect/IR/LMInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/IR/LMOps.h.inc"
