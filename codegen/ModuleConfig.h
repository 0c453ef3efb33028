//===- ModuleConfig.h - lm.config, lm.train, lm.data in plan form -*- C++ -*-===//
//
// Reads the module attributes that configure a run (docs/dialect.md,
// "Function conventions") into Plan.config, Plan.train and Plan.data. Absent
// lm.train keys take the train settings' defaults (contract/train_settings.h,
// docs/compilation.md); a value of the wrong kind is an error at the module,
// an unknown key a warning.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "contract/plan.pb.h"

namespace mlir::lm {

/// Fills `result.config`, `result.train` and `result.data` from `module`.
LogicalResult readModuleConfig(ModuleOp module, lmrt::plan::Plan &result);

/// Fills `result.weight_exports` from lm.exports (the `export` sections), each
/// map's entries in the order of `result.params` (so call it once they are set).
LogicalResult readModuleExports(ModuleOp module, lmrt::plan::Plan &result);

} // namespace mlir::lm
