//===- Pipelines.h - The lm compile pipeline --------------------*- C++ -*-===//
//
// The compile pipeline as one C++ function, shared by compileToPlan (lmc) and
// lm-opt so both run exactly the same passes: stages (autodiff, optimize,
// contract) with named extension points between them where user passes (from
// a --load-pass-plugin) go. See docs/compilation.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::lm {

/// The stages that end in IR, in order: the frontend (compileToPlan's, before
/// the pipeline), then the compile pipeline's. A stage's number is that of
/// its --dump-dir file (00-frontend.mlir .. 03-contract.mlir).
enum class CompileStage { Frontend, Autodiff, Optimize, Contract };

/// "frontend", "autodiff", "optimize", "contract".
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
  Option<std::string> remat{*this, "remat",
                            llvm::cl::desc("rematerialization in the optimize stage, after fusion: none, full, "
                                           "selective or auto (compileToPlan: empty takes lm.train's remat)"),
                            llvm::cl::init("")};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("mixed precision in the optimize stage, before fusion: bf16 or fp16 "
                                               "(GEMM operands; fp16 also seeds autodiff with a loss_scale input) or "
                                               "fp32 (compileToPlan: empty takes lm.train's precision)"),
                                llvm::cl::init("")};
  Option<int64_t> rematBudget{*this, "remat-budget",
                              llvm::cl::desc("remat=auto: the bytes the train step's activations may peak at, as "
                                             "-lm-remat estimates them (compileToPlan derives it from the memory "
                                             "budget)"),
                              llvm::cl::init(0)};
  Option<bool> packAttention{*this, "pack-attention",
                             llvm::cl::desc("with fusion: -lm-pack-attention (attention reads q, k, v in place from "
                                            "a fused projection; its ops have CPU kernels only, so compileToPlan turns it "
                                            "off for a CUDA target)"),
                             llvm::cl::init(true)};
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

  /// The pipeline text of an extension point ("" if none); null for an
  /// unknown name.
  Option<std::string> *getExtensionPoint(StringRef name);
  const Option<std::string> *getExtensionPoint(StringRef name) const {
    return const_cast<CompilePipelineOptions *>(this)->getExtensionPoint(name);
  }
};

/// Called once the passes of a stage of the pipeline (and those of the
/// extension point right after it) have been added, never for the frontend;
/// compileToPlan adds its stage hooks here (lmc's --dump-dir files).
using StageHook = std::function<void(CompileStage stage, OpPassManager &pm)>;

/// The compile pipeline, on a builtin.module pass manager:
///   [before-autodiff]
///   autodiff:  -lm-autodiff                       (unless autodiff=false)
///   [after-autodiff]
///   optimize:  -canonicalize, -cse (and, with fusion=auto, -lm-fuse; then,
///              unless remat is none or empty, -lm-remat)
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

/// The names of every registered pass and pass pipeline, sorted (plugins'
/// passes included once loaded); for error messages.
std::vector<std::string> getRegisteredPassNames();

/// Registers every lm pass (passes/ and codegen/, -lm-check-plan-contract
/// included), the generic passes LMC offers (canonicalize, cse, ...), and the
/// "lm-compile-pipeline" and "lm-train-pipeline" pipelines with the global
/// registry: what lmc's --passes and lm-opt's flags can name. Idempotent.
void registerLMPassesAndPipelines();

} // namespace mlir::lm
