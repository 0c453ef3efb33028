//===- LMDialect.cpp - lm dialect registration ------------------*- C++ -*-===//
//
// Registers the ops and materializes folded constants as lm.constant.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMDialect.h"
#include "dialect/IR/LMOps.h"

using namespace mlir;
using namespace mlir::lm;

#include "dialect/IR/LMDialect.cpp.inc"

void LMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/IR/LMOps.cpp.inc"
      >();
}

/// Folders only produce dense tensor attributes of the op's own type; anything
/// else is left to the caller (returning null makes the fold fail cleanly).
Operation *LMDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                          Location loc) {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  if (!dense || dense.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, dense);
}
