//===- RuntimeOps.h - The ops the runtime has kernels for -------*- C++ -*-===//
//
// The plan contract's op list as the plan writer sees it: every lm op that
// becomes a plan step must be an entry of contract/op_table.h, which
// lm-tblgen generates from LMOps.td and the runtime's kernel registry is
// checked against (test/Unit/kernels), so lmc needs neither the kernels (they
// pull in BLAS) nor a restated list.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "contract/op_table.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::lm {

/// One plan step op: name without "lm.", operand and result counts, attributes.
using RuntimeOpInfo = lmrt::ops::OpInfo;

/// The op named `name` (without "lm."), or nullptr when the runtime has no
/// kernel for it.
const RuntimeOpInfo *lookupRuntimeOp(llvm::StringRef name);

} // namespace mlir::lm
