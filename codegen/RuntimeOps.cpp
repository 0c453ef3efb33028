//===- RuntimeOps.cpp - The ops the runtime has kernels for ---------------===//
//
// Looks names up in the generated op table. `lm.constant` is not in it on
// purpose: constants become CONSTANT buffers, never steps.
//
//===----------------------------------------------------------------------===//

#include "codegen/RuntimeOps.h"

using namespace mlir::lm;

const RuntimeOpInfo *mlir::lm::lookupRuntimeOp(llvm::StringRef name) {
  return lmrt::ops::findOp(std::string_view(name.data(), name.size()));
}
