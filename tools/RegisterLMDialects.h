//===- RegisterLMDialects.h - Dialects every LMC tool parses ----*- C++ -*-===//
//
// The one place that lists the dialects LMC's tools (lm-opt, lmc) load: the lm
// dialect and func. Register only what we parse (never registerAllDialects).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::lm {

inline void registerLMDialects(DialectRegistry &registry) {
  registry.insert<lm::LMDialect, func::FuncDialect>();
}

} // namespace mlir::lm
