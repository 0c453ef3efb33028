//===- RuntimeOps.h - The ops the runtime has kernels for -------*- C++ -*-===//
//
// The plan contract's op list: every lm op that becomes a plan step must name a
// CPU kernel of the runtime (runtime/kernels/registry.h) with the same operand
// and result counts. lmc does not link the kernels (they pull in BLAS), so the
// table is restated here from docs/dialect.md; the lit tests that run
// `lmrt inspect` on lmc's plans keep the two in step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

namespace mlir::lm {

/// One runtime kernel as the plan writer sees it.
struct RuntimeOpInfo {
  llvm::StringRef name; ///< op name without "lm." ("matmul")
  unsigned numInputs;
  unsigned numOutputs;
};

/// The kernel named `name` (without "lm."), or nullptr when the runtime has none.
const RuntimeOpInfo *lookupRuntimeOp(llvm::StringRef name);

/// The runtime's buffer-to-buffer copy, used for gradients that alias another
/// value (see PlanWriter.cpp).
inline constexpr llvm::StringLiteral kCopyOpName = "copy";

/// The step that runs a generated kernel (Plan.kernels[attr "kernel"]) on its
/// inputs then outputs; see docs/fusion.md.
inline constexpr llvm::StringLiteral kFusedOpName = "fused";

} // namespace mlir::lm
