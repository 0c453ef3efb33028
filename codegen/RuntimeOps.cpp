//===- RuntimeOps.cpp - The ops the runtime has kernels for ---------------===//

#include "codegen/RuntimeOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::lm;

// Operand/result counts as in docs/dialect.md. `lm.constant` is absent on purpose:
// constants become CONSTANT buffers, never steps.
static const RuntimeOpInfo kRuntimeOps[] = {
    // Forward ops.
    {"embedding", 2, 1},
    {"matmul", 2, 1},
    {"add", 2, 1},
    {"sub", 2, 1},
    {"mul", 2, 1},
    {"div", 2, 1},
    {"neg", 1, 1},
    {"gelu", 1, 1},
    {"layer_norm", 3, 1},
    {"attention", 3, 1},
    {"softmax", 1, 1},
    {"reshape", 1, 1},
    {"transpose", 1, 1},
    {"slice", 1, 1},
    {"cross_entropy", 2, 1},
    {"sum_to", 1, 1},
    // Backward ops (emitted by -lm-autodiff).
    {"gelu_grad", 2, 1},
    {"layer_norm_grad", 3, 3},
    {"attention_grad", 4, 3},
    {"softmax_grad", 2, 1},
    {"cross_entropy_grad", 3, 1},
    {"embedding_grad", 2, 1},
    {"slice_grad", 1, 1},
    // Runtime-only.
    {kCopyOpName, 1, 1},
};

const RuntimeOpInfo *mlir::lm::lookupRuntimeOp(llvm::StringRef name) {
  const auto *it = llvm::find_if(kRuntimeOps, [&](const RuntimeOpInfo &info) { return info.name == name; });
  return it == std::end(kRuntimeOps) ? nullptr : it;
}
