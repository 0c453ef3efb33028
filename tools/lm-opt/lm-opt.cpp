//===- lm-opt.cpp - Pass driver for the lm dialect --------------*- C++ -*-===//
//
// mlir-opt for LMC: parses lm + func IR, runs the lm passes (passes/, and
// codegen's -lm-check-plan-contract), the compile pipeline from pipelines/,
// the code lmc runs (--lm-compile-pipeline='fusion=none
// after-autodiff={my-pass}'), and MLIR's generic transforms. Used by the lit
// tests of the dialect and of every pass. Pass plugins (--load-pass-plugin)
// share its libMLIR.so.
//
//===----------------------------------------------------------------------===//

#include "pipelines/Pipelines.h"
#include "tools/RegisterLMDialects.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

/// Loads every --load-pass-plugin of the command line now, before MlirOptMain
/// builds its pass-name options, so that plugin passes work as flags
/// (-my-pass), appear in --help, and are listed in error messages. MlirOptMain
/// loads them again while parsing, which registers nothing new. Unlike
/// MlirOptMain ("Request ignored"), a plugin that does not load is an error.
static bool preloadPassPlugins(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.consume_front("--") && !arg.consume_front("-"))
      continue;
    if (!arg.consume_front("load-pass-plugin"))
      continue;
    std::string path;
    if (arg.consume_front("="))
      path = arg.str();
    else if (arg.empty() && i + 1 < argc)
      path = argv[++i];
    else
      continue;
    llvm::Expected<mlir::PassPlugin> plugin = mlir::PassPlugin::load(path);
    if (!plugin) {
      llvm::errs() << "lm-opt: error: cannot load pass plugin '" << path
                   << "': " << llvm::toString(plugin.takeError()) << "\n";
      return false;
    }
    plugin->registerPassRegistryCallbacks();
  }
  return true;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::lm::registerLMDialects(registry);
  mlir::lm::registerLMPassesAndPipelines();
  if (!preloadPassPlugins(argc, argv))
    return 1;
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "LMC optimizer driver (lm dialect)\n", registry));
}
