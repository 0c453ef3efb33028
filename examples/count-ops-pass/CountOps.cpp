//===- CountOps.cpp - An out-of-tree LMC pass plugin ----------------------===//
//
// count-ops: tags every func.func with how many lm ops it holds and how many
// of them are matmuls, as discardable attributes (`count_ops.lm_ops`,
// `count_ops.matmuls`) that the plan writer leaves out of the plan. It is the
// example of docs/writing-a-pass.md: built against an installed LMC with
// find_package(LMC), loaded into lmc or lm-opt with --load-pass-plugin.
//
// It uses the lm dialect's C++ classes (isa<lm::MatmulOp>), which only works
// because the plugin and the tool share one libMLIRLMDialect.so and one
// libMLIR.so: with a second copy of either, the op's TypeID would differ and
// no matmul would be counted.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

using namespace mlir;

namespace {

struct CountOpsPass : public PassWrapper<CountOpsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountOpsPass)

  CountOpsPass() = default;
  // Options are members that must be re-created in a copy, not copied.
  CountOpsPass(const CountOpsPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "count-ops"; }
  StringRef getDescription() const final {
    return "Tags every function with its number of lm ops and of matmuls";
  }

  Option<std::string> prefix{*this, "prefix", llvm::cl::desc("the attributes' namespace"),
                             llvm::cl::init("count_ops")};

  void runOnOperation() override {
    Builder builder(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      int64_t lmOps = 0, matmuls = 0;
      func.walk([&](Operation *op) {
        if (!isa<lm::LMDialect>(op->getDialect()))
          return;
        ++lmOps;
        if (isa<lm::MatmulOp>(op))
          ++matmuls;
      });
      func->setAttr(prefix + ".lm_ops", builder.getI64IntegerAttr(lmOps));
      func->setAttr(prefix + ".matmuls", builder.getI64IntegerAttr(matmuls));
    }
    // Attributes only: every analysis still holds.
    markAllAnalysesPreserved();
  }
};

} // namespace

/// The entry point lmc and lm-opt look up in a --load-pass-plugin library.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "CountOps", "0.1", [] { PassRegistration<CountOpsPass>(); }};
}
