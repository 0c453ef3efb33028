//===- lm-opt.cpp - Pass driver for the lm dialect --------------*- C++ -*-===//
//
// mlir-opt for LMC: parses lm + func IR, runs the lm passes and pipelines plus
// the generic -canonicalize and -cse. Used by the lit tests of the dialect and
// of every pass.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "tools/RegisterLMDialects.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::lm::registerLMDialects(registry);
  mlir::lm::registerLMPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "LMC optimizer driver (lm dialect)\n", registry));
}
