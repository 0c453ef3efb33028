//===- CompileToPlan.cpp - The whole compiler as one function -------------===//
//
// Frontend, compile pipeline, plan translation and kernel compilation, in that
// order, with the caller's hooks at the end of each stage that ends in IR and
// after translation.
//
//===----------------------------------------------------------------------===//

#include "pipelines/CompileToPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// Added at the end of each stage of the pipeline when the caller has an
/// afterStage hook: calls it on the module, so the hook sees the IR exactly
/// where the stage ends in the one pipeline run. Not registered, and left out
/// of --print-ir-after-all.
struct StageHookPass : public PassWrapper<StageHookPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StageHookPass)

  StageHookPass(CompileStage stage, std::function<LogicalResult(CompileStage, ModuleOp)> hook)
      : stage(stage), hook(std::move(hook)) {}
  StringRef getName() const override { return "LMStageHookPass"; }
  StringRef getArgument() const final { return "lm-stage-hook"; }
  StringRef getDescription() const final { return "Hands the module to compileToPlan's afterStage hook"; }

  void runOnOperation() override {
    if (failed(hook(stage, getOperation())))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }

  CompileStage stage;
  std::function<LogicalResult(CompileStage, ModuleOp)> hook;
};

bool hasTrainStep(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("lm.train_step"))
      return true;
  return false;
}

/// Stage 0: the lm module, from the frontend or the MLIR parser, verified.
OwningOpRef<ModuleOp> runFrontend(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                  const CompileToPlanOptions &options) {
  OwningOpRef<ModuleOp> module = options.input == InputKind::LmSource
                                     ? emitModuleFromSource(sourceMgr, context, options.frontend)
                                     : parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

/// The remat policy: the pipeline option (lmc --remat) over the train block's
/// (lm.train's remat), else none. Recorded in lm.train when not none, so the
/// plan writer puts it in Plan.remat (lmrt inspect shows it); with none the
/// key is absent and the plan keeps its bytes.
std::string resolveRemat(ModuleOp module, StringRef option) {
  auto train = module->getAttrOfType<DictionaryAttr>("lm.train");
  std::string policy = option.str();
  if (policy.empty()) {
    auto fromTrain = train ? train.getAs<StringAttr>("remat") : StringAttr();
    policy = fromTrain ? fromTrain.str() : "none";
  }
  NamedAttrList entries(train ? train : DictionaryAttr::get(module.getContext()));
  if (policy == "none")
    entries.erase("remat");
  else
    entries.set("remat", StringAttr::get(module.getContext(), policy));
  if (train || !entries.empty())
    module->setAttr("lm.train", entries.getDictionary(module.getContext()));
  return policy;
}

/// Stages 1-3: the compile pipeline, with the hooks at its stages' ends.
LogicalResult runPipeline(ModuleOp module, MLIRContext &context, const CompileToPlanOptions &options) {
  CompilePipelineOptions pipelineOptions;
  pipelineOptions.copyOptionValuesFrom(options.pipeline);
  pipelineOptions.autodiff = !hasTrainStep(module);
  pipelineOptions.remat = resolveRemat(module, options.pipeline.remat);

  PassManager pm(&context);
  if (options.printIRAfterAll) {
    context.disableMultithreading();
    auto notHook = [](Pass *pass, Operation *) { return pass->getTypeID() != TypeID::get<StageHookPass>(); };
    pm.enableIRPrinting(notHook, notHook);
  }
  StageHook addHook = [&](CompileStage stage, OpPassManager &stagePm) {
    if (options.afterStage)
      stagePm.addPass(std::make_unique<StageHookPass>(stage, options.afterStage));
  };
  std::string message;
  llvm::raw_string_ostream messageStream(message);
  if (failed(buildLMCompilePipeline(pm, pipelineOptions, messageStream, addHook)))
    return emitError(UnknownLoc::get(&context)) << StringRef(message).rtrim(), failure();
  return pm.run(module);
}

/// Stage 4: plan translation. When the contract stage ran it has checked the
/// module with this same translation and reported its warnings (unknown
/// lm.train keys, ...); they are not repeated.
FailureOr<lmrt::plan::Plan> translate(ModuleOp module, const CompileToPlanOptions &options) {
  ScopedDiagnosticHandler noRepeats(module.getContext(), [&](Diagnostic &diag) {
    return success(options.pipeline.checkContract && diag.getSeverity() != DiagnosticSeverity::Error);
  });
  return translateModuleToPlan(module, options.translation);
}

} // namespace

FailureOr<CompiledPlan> mlir::lm::compileToPlan(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                                const CompileToPlanOptions &options) {
  registerLMPassesAndPipelines();
  CompiledPlan result;
  result.module = runFrontend(sourceMgr, context, options);
  if (!result.module)
    return failure();
  if (options.afterStage && failed(options.afterStage(CompileStage::Frontend, *result.module)))
    return failure();
  if (options.compileTo == CompileTo::Frontend)
    return result;

  if (failed(runPipeline(*result.module, context, options)))
    return failure();
  if (options.compileTo == CompileTo::Pipeline)
    return result;

  FailureOr<lmrt::plan::Plan> plan = translate(*result.module, options);
  if (failed(plan))
    return failure();
  if (options.afterTranslation && failed(options.afterTranslation(*plan)))
    return failure();

  // Stage 5: kernel compilation.
  llvm::Expected<KernelCompileReport> kernels = compilePlanKernels(*plan, options.kernels);
  if (!kernels)
    return result.module->emitError("codegen: ") << llvm::toString(kernels.takeError()), failure();
  result.kernels = *kernels;
  result.plan = std::move(*plan);
  return result;
}
