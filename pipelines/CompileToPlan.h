//===- CompileToPlan.h - The whole compiler as one function -----*- C++ -*-===//
//
// compileToPlan: a `.lm` source (or an lm `.mlir` module) to a plan, every
// step of the compiler in order, shared by lmc and the tests:
//   frontend      .lm -> lm module (frontend/Frontend.h), or the MLIR parser
//   pipeline      autodiff, optimize, contract (Pipelines.h), with the
//                 extension points' passes
//   translation   module -> plan protobuf (codegen/PlanWriter.h), the
//                 generated kernels' sources emitted for each target
//   kernels       those sources compiled with c++ / nvcc through the kernel
//                 cache and embedded (codegen/KernelCompiler.h)
// See docs/compilation.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/KernelCompiler.h"
#include "codegen/PlanWriter.h"
#include "frontend/Frontend.h"
#include "pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <optional>

namespace mlir::lm {

/// What the main buffer of the source manager holds.
enum class InputKind { LmSource, MlirModule };

/// Where compileToPlan stops: after the frontend, after the compile pipeline,
/// or (the default) with the plan, its kernels compiled.
enum class CompileTo { Frontend, Pipeline, Plan };

struct CompileToPlanOptions {
  InputKind input = InputKind::LmSource;
  /// For a .lm source: -D overrides, preset, float type, decode programs.
  FrontendOptions frontend;
  /// Fusion, the extension points' passes and check-contract. `autodiff` is
  /// not read: it is decided from the module, off for one that already has
  /// its train step (a hand-written test, or lmc's own --emit=train-mlir).
  CompilePipelineOptions pipeline;
  /// Plan.source and the targets the generated kernels are compiled for.
  PlanTranslationOptions translation;
  /// The kernel cache and the compilers (defaults: $LMC_CACHE_DIR, $LMC_CXX,
  /// $LMC_NVCC, ...).
  KernelCompileOptions kernels;
  CompileTo compileTo = CompileTo::Plan;
  /// The memory budget in bytes (lmc --mem-budget); 0 takes the train block's
  /// memory_budget, if any. A plan whose predicted peak exceeds it is an
  /// error; remat = auto needs one (docs/remat.md, "Budgets").
  int64_t memBudget = 0;
  /// The memory of the device the plan will run on, in bytes (lmc
  /// --device-memory, a size or a known GPU); 0: not known. It bounds the
  /// predicted peak as a budget does: the smaller of the two applies, and
  /// remat = auto takes it for its budget (docs/remat.md, "The device's
  /// memory"). `deviceName` names a known device in the error ("h100"); empty for a size.
  int64_t deviceMemory = 0;
  std::string deviceName;
  /// Print the IR around every pass of the pipeline to stderr (MLIR's
  /// IR printing; it disables the context's multithreading).
  bool printIRAfterAll = false;

  /// Called with the module at the end of each stage that ends in IR. For the
  /// pipeline's stages a pass at the stage's end calls it, so that it sees
  /// the IR exactly there, extension points included, in the one pipeline
  /// run. A failure stops the compile (the hook reports its own error).
  std::function<LogicalResult(CompileStage stage, ModuleOp module)> afterStage;
  /// Called with the translated plan before kernel compilation: its kernel
  /// libraries hold each target's source, not yet the image.
  std::function<LogicalResult(const lmrt::plan::Plan &plan)> afterTranslation;
};

struct CompiledPlan {
  /// The IR where the compile ended (the plan's source with CompileTo::Plan).
  OwningOpRef<ModuleOp> module;
  /// With CompileTo::Plan: the plan, its generated kernels compiled for every
  /// requested target and embedded.
  std::optional<lmrt::plan::Plan> plan;
  /// What kernel compilation did (libraries compiled, or from the cache).
  KernelCompileReport kernels;
};

/// Compiles the main buffer of `sourceMgr` (its identifier is the file name
/// diagnostics show). `context` must have the dialects of registerLMDialects
/// (tools/RegisterLMDialects.h); the passes and pipelines are registered here
/// if they are not yet (a pass plugin's are the caller's to load). Every error
/// is a diagnostic of `context`, at the source where there is one (a
/// SourceMgrDiagnosticHandler prints it with the line and a caret), and an
/// extension point's pipeline that does not parse at an unknown location;
/// then failure.
FailureOr<CompiledPlan> compileToPlan(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                      const CompileToPlanOptions &options);

} // namespace mlir::lm
