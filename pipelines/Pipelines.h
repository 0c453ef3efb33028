//===- Pipelines.h - The lm compile pipeline --------------------*- C++ -*-===//
//
// The compile pipeline as one C++ function, shared by lmc and lm-opt so both
// run exactly the same passes: stages (autodiff, optimize, contract) with
// named extension points between them where user passes (from a
// --load-pass-plugin) go. See docs/compilation.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/PlanWriter.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lmrt::plan {
class Plan;
} // namespace lmrt::plan

namespace mlir::lm {

/// The stages of the compile pipeline, in order.
enum class CompileStage { Autodiff, Optimize, Contract };

/// "autodiff", "optimize", "contract".
StringRef getStageName(CompileStage stage);

/// The extension points, in pipeline order: where user passes may run.
/// before-autodiff (the frontend's module), after-autodiff (the train step
/// exists), after-optimize (the last IR change; the contract checks what it
/// leaves).
ArrayRef<StringRef> getExtensionPointNames();

enum class FusionMode { Auto, None };

/// The options of `buildLMCompilePipeline`, also the options of lm-opt's
/// `--lm-compile-pipeline='...'`.
struct CompilePipelineOptions : public PassPipelineOptions<CompilePipelineOptions> {
  Option<bool> autodiff{*this, "autodiff",
                        llvm::cl::desc("run -lm-autodiff (false for a module that already has its train step)"),
                        llvm::cl::init(true)};
  Option<FusionMode> fusion{*this, "fusion", llvm::cl::desc("fuse elementwise chains in the optimize stage"),
                            llvm::cl::init(FusionMode::Auto),
                            llvm::cl::values(clEnumValN(FusionMode::Auto, "auto", "fuse where profitable"),
                                             clEnumValN(FusionMode::None, "none", "one plan step per lm op"))};
  Option<bool> checkContract{*this, "check-contract",
                             llvm::cl::desc("run -lm-check-plan-contract last (false to inspect IR that is not "
                                            "meant to become a plan)"),
                             llvm::cl::init(true)};
  Option<std::string> beforeAutodiff{*this, "before-autodiff",
                                     llvm::cl::desc("pass pipeline run on the frontend's module, e.g. {cse,my-pass}")};
  Option<std::string> afterAutodiff{*this, "after-autodiff",
                                    llvm::cl::desc("pass pipeline run once the train step exists")};
  Option<std::string> afterOptimize{*this, "after-optimize",
                                    llvm::cl::desc("pass pipeline run after the optimize stage, before the contract")};

  /// Not an option (C++ callers only): where the contract stage stores the
  /// plan it built while checking, so that lmc need not build it again.
  lmrt::plan::Plan *planOut = nullptr;
  /// Not an option: how the contract stage builds the plan (Plan.source, the
  /// targets the generated kernels are compiled for), and what it reports.
  PlanOptions plan;
  PlanReport *reportOut = nullptr;

  /// The pipeline text of an extension point ("" if none); null for an
  /// unknown name.
  Option<std::string> *getExtensionPoint(StringRef name);
  const Option<std::string> *getExtensionPoint(StringRef name) const {
    return const_cast<CompilePipelineOptions *>(this)->getExtensionPoint(name);
  }
};

/// Called once the passes of a stage (and those of the extension point right
/// after it) have been added; lmc adds its --dump-dir pass here.
using StageHook = std::function<void(CompileStage stage, OpPassManager &pm)>;

/// The compile pipeline, on a builtin.module pass manager:
///   [before-autodiff]
///   autodiff:  -lm-autodiff                       (unless autodiff=false)
///   [after-autodiff]
///   optimize:  -canonicalize, -cse (and, with fusion=auto, -lm-fuse)
///   [after-optimize]
///   contract:  -lm-check-plan-contract            (unless check-contract=false)
/// Fails, after writing a message to `errorStream`, when an extension point's
/// pipeline does not parse or names an unknown pass.
LogicalResult buildLMCompilePipeline(OpPassManager &pm, const CompilePipelineOptions &opts,
                                     raw_ostream &errorStream, const StageHook &afterStage = nullptr);

/// Parses "point:pipeline;point:pipeline" (lmc's --passes) into `opts`. A
/// point may appear more than once; its pipelines then run in order. Fails,
/// with a message listing the extension points, on an unknown point or a
/// missing ':'.
LogicalResult parseExtensionPasses(StringRef spec, CompilePipelineOptions &opts, raw_ostream &errorStream);

/// The -lm-check-plan-contract pass: runs the plan writer (codegen/PlanWriter.h)
/// on the module and fails with its diagnostics if the module breaks the plan
/// contract. The IR is left unchanged. If `planOut` is set, the plan is stored
/// there.
std::unique_ptr<Pass> createLMCheckPlanContractPass(PlanOptions options = {},
                                                    lmrt::plan::Plan *planOut = nullptr,
                                                    PlanReport *reportOut = nullptr);

/// The names of every registered pass and pass pipeline, sorted (plugins'
/// passes included once loaded); for error messages.
std::vector<std::string> getRegisteredPassNames();

/// Registers every lm pass, the generic passes LMC offers (canonicalize, cse,
/// ...), -lm-check-plan-contract, and the "lm-compile-pipeline" and
/// "lm-train-pipeline" pipelines with the global registry. Idempotent.
void registerLMPasses();

} // namespace mlir::lm
