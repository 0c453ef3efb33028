//===- Passes.h - codegen passes --------------------------------*- C++ -*-===//
//
// Declarations of the codegen passes (generated from Passes.td).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::lm {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

} // namespace mlir::lm
