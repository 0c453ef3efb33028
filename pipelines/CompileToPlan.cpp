//===- CompileToPlan.cpp - The whole compiler as one function -------------===//
//
// Frontend, compile pipeline, plan translation and kernel compilation, in that
// order, with the caller's hooks at the end of each stage that ends in IR and
// after translation.
//
//===----------------------------------------------------------------------===//

#include "pipelines/CompileToPlan.h"
#include "pipelines/MemoryBudget.h"

#include "contract/train_settings.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

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

/// The remat policy the pipeline option (lmc --remat) or else the train
/// block's remat names; "none" when neither does.
std::string rematPolicyOf(ModuleOp module, StringRef option) {
  if (!option.empty())
    return option.str();
  auto train = module->getAttrOfType<DictionaryAttr>("lm.train");
  auto fromTrain = train ? train.getAs<StringAttr>("remat") : StringAttr();
  return fromTrain ? fromTrain.str() : "none";
}

/// The memory budget: the option (lmc --mem-budget) over the train block's
/// memory_budget (lm.train, in bytes); 0 when neither gives one.
int64_t budgetOf(ModuleOp module, int64_t option) {
  if (option > 0)
    return option;
  auto train = module->getAttrOfType<DictionaryAttr>("lm.train");
  auto fromTrain = train ? train.getAs<IntegerAttr>(lmrt::settings::kMemoryBudgetKeyword) : IntegerAttr();
  return fromTrain ? fromTrain.getInt() : 0;
}

/// The remat policy: the pipeline option (lmc --remat) over the train block's
/// (lm.train's remat), else none. Recorded in lm.train when not none, so the
/// plan writer puts it in Plan.remat (lmrt inspect shows it); with none the
/// key is absent and the plan keeps its bytes.
std::string resolveRemat(ModuleOp module, StringRef option) {
  auto train = module->getAttrOfType<DictionaryAttr>("lm.train");
  std::string policy = rematPolicyOf(module, option);
  NamedAttrList entries(train ? train : DictionaryAttr::get(module.getContext()));
  if (policy == "none")
    entries.erase("remat");
  else
    entries.set("remat", StringAttr::get(module.getContext(), policy));
  if (train || !entries.empty())
    module->setAttr("lm.train", entries.getDictionary(module.getContext()));
  return policy;
}

/// The precision: the pipeline option (lmc --precision) over the train
/// block's (lm.train's precision), else fp32. Recorded in lm.train when not
/// fp32, so the plan writer puts it in Plan.precision; fp32 leaves no key.
std::string resolvePrecision(ModuleOp module, StringRef option) {
  auto train = module->getAttrOfType<DictionaryAttr>("lm.train");
  std::string precision = option.str();
  if (precision.empty()) {
    auto fromTrain = train ? train.getAs<StringAttr>("precision") : StringAttr();
    precision = fromTrain ? fromTrain.str() : lmrt::settings::kDefaultPrecision;
  }
  NamedAttrList entries(train ? train : DictionaryAttr::get(module.getContext()));
  if (precision == lmrt::settings::kDefaultPrecision)
    entries.erase("precision");
  else
    entries.set("precision", StringAttr::get(module.getContext(), precision));
  if (train || !entries.empty())
    module->setAttr("lm.train", entries.getDictionary(module.getContext()));
  return precision;
}

/// Stages 1-3: the compile pipeline, with the hooks at its stages' ends
/// (none in a trial: a compile that only measures a policy's plan).
LogicalResult runPipeline(ModuleOp module, MLIRContext &context, const CompileToPlanOptions &options,
                          StringRef remat, int64_t rematBudget, bool trial) {
  CompilePipelineOptions pipelineOptions;
  pipelineOptions.copyOptionValuesFrom(options.pipeline);
  pipelineOptions.autodiff = !hasTrainStep(module);
  pipelineOptions.remat = resolveRemat(module, remat);
  pipelineOptions.rematBudget = rematBudget;
  pipelineOptions.precision = resolvePrecision(module, options.pipeline.precision);
  // The packed attention ops have CPU kernels only: a plan that may run on a GPU keeps
  // the slices (docs/fusion.md).
  pipelineOptions.packAttention = options.pipeline.packAttention && !options.translation.targetCuda;

  PassManager pm(&context);
  if (options.printIRAfterAll && !trial) {
    context.disableMultithreading();
    auto notHook = [](Pass *pass, Operation *) { return pass->getTypeID() != TypeID::get<StageHookPass>(); };
    pm.enableIRPrinting(notHook, notHook);
  }
  StageHook addHook = [&](CompileStage stage, OpPassManager &stagePm) {
    if (options.afterStage && !trial)
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

/// What a policy's plan predicts, measured on a copy of the frontend's module.
struct Trial {
  int64_t peak = 0, flops = 0;
  /// -lm-remat's estimate of the train step's activations (its budget's unit).
  int64_t activations = 0;
};

std::optional<Trial> runTrial(ModuleOp frontend, MLIRContext &context, const CompileToPlanOptions &options,
                              StringRef policy, int64_t rematBudget) {
  OwningOpRef<ModuleOp> module = frontend.clone();
  // The real compile reports any error; a trial only measures.
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  if (failed(runPipeline(*module, context, options, policy, rematBudget, /*trial=*/true)))
    return std::nullopt;
  FailureOr<lmrt::plan::Plan> plan = translateModuleToPlan(*module, options.translation);
  if (failed(plan))
    return std::nullopt;
  Trial trial{plan->predicted_peak_bytes(), plan->flops_per_step(), 0};
  for (auto func : module->getOps<func::FuncOp>())
    if (func->hasAttr("lm.train_step"))
      trial.activations = std::max(trial.activations, estimateActivationPeak(func));
  return trial;
}

/// remat = auto: the largest activation budget (-lm-remat's estimate) whose
/// plan fits `budget`, so that the least is recomputed. The pass sees the
/// train step's live values, not the plan's figure (parameters, optimizer
/// state, inputs, and the arena's first fit over the live ranges): start from
/// the estimate of none's activations less what none's plan is over the
/// budget, lower it by what a try's plan is still over until one fits, then
/// bisect between the largest that fits and the smallest that does not. A
/// dozen trial compiles at most (each a fraction of a second for GPT-2 small).
/// Unbounded when none already fits.
int64_t autoRematBudget(ModuleOp frontend, MLIRContext &context, const CompileToPlanOptions &options,
                        int64_t budget) {
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  std::optional<Trial> none = runTrial(frontend, context, options, "none", 0);
  if (!none || none->peak <= budget)
    return kUnbounded;
  std::optional<int64_t> fits;
  int64_t over = none->activations; // the smallest target known not to fit
  int64_t target = none->activations - (none->peak - budget);
  for (int attempt = 0; attempt < 12 && target > 0 && target < over; ++attempt) {
    std::optional<Trial> trial = runTrial(frontend, context, options, "auto", target);
    if (trial && trial->peak <= budget) {
      fits = target;
    } else {
      over = target;
      if (!fits) {
        target -= trial ? trial->peak - budget : target / 2;
        continue;
      }
    }
    // Close enough: within 1 % of the budget.
    if (over - *fits <= budget / 100)
      break;
    target = *fits + (over - *fits) / 2;
  }
  return fits ? *fits : std::max<int64_t>(target, 1);
}

std::string describeFlops(int64_t flops) {
  static const char *units[] = {"", "K", "M", "G", "T", "P"};
  double value = double(flops);
  int unit = 0;
  while (value >= 1000 && unit < 5)
    value /= 1000, ++unit;
  return llvm::formatv("{0:f2} {1}FLOP/step", value, units[unit]).str();
}

/// The bound on the predicted peak: the memory budget and the device's memory,
/// the smaller when both are known; 0 when neither is. `what` names it in
/// messages ("the memory budget", "the device memory of h100").
struct PeakBound {
  int64_t bytes = 0;
  std::string what;
  bool device = false; // the device's memory is the smaller
};

PeakBound peakBoundOf(int64_t budget, const CompileToPlanOptions &options) {
  if (options.deviceMemory > 0 && (budget <= 0 || options.deviceMemory < budget))
    return {options.deviceMemory,
            "the device memory" + (options.deviceName.empty() ? std::string() : " of " + options.deviceName), true};
  return {budget, "the memory budget", false};
}

/// The error of a plan over its budget: the peak, what makes it up, and what
/// every other remat policy would predict.
void reportOverBudget(const lmrt::plan::Plan &plan, StringRef policy, const PeakBound &bound, ModuleOp frontend,
                      MLIRContext &context, const CompileToPlanOptions &options) {
  const int64_t budget = bound.bytes;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "the predicted peak memory " << describeBytes(plan.predicted_peak_bytes()) << " with remat " << policy
     << " exceeds " << bound.what << " " << describeBytes(budget) << "\n"
     << describePeak(plan);
  const bool device = bound.device;
  std::optional<std::pair<std::string, Trial>> cheapestFit, smallest;
  for (StringRef other : {"none", "selective", "full", "auto"}) {
    if (other == policy)
      continue;
    int64_t rematBudget = other == "auto" ? autoRematBudget(frontend, context, options, budget) : 0;
    std::optional<Trial> trial = runTrial(frontend, context, options, other, rematBudget);
    if (!trial)
      continue;
    bool fits = trial->peak <= budget;
    const char *verdict = fits ? ": it fits" : device ? ": over the device's memory" : ": over the budget";
    os << "remat = " << other << " would predict " << describeBytes(trial->peak) << " at "
       << describeFlops(trial->flops) << verdict << "\n";
    if (fits && (!cheapestFit || trial->flops < cheapestFit->second.flops))
      cheapestFit = {other.str(), *trial};
    if (!smallest || trial->peak < smallest->second.peak)
      smallest = {other.str(), *trial};
  }
  if (cheapestFit)
    os << "remat = " << cheapestFit->first << " fits " << (device ? "the device" : "the budget")
       << " with the fewest FLOPs";
  else if (device)
    os << "no remat policy fits the device: lower the batch or the sequence length, or split the batch over "
          "devices (--mesh data=D)";
  else
    os << "no remat policy fits the budget: raise it, or lower the batch or the sequence length";
  emitError(UnknownLoc::get(&context)) << message;
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

  // A budget, and auto's activation budget, from trial compiles of a copy of
  // the frontend's module (kept for the error's comparison of policies).
  std::string policy = rematPolicyOf(*result.module, options.pipeline.remat);
  const PeakBound bound = peakBoundOf(budgetOf(*result.module, options.memBudget), options);
  const int64_t budget = bound.bytes;
  int64_t rematBudget = 0;
  OwningOpRef<ModuleOp> frontend;
  if (budget > 0)
    frontend = result.module->clone();
  if (policy == "auto") {
    if (budget <= 0)
      return emitError(UnknownLoc::get(&context))
                 << "remat = auto needs a memory budget: memory_budget = \"8 GiB\" in the train block, "
                    "lmc's --mem-budget, or the device's memory (--device-memory)",
             failure();
    rematBudget = autoRematBudget(*frontend, context, options, budget);
  }

  if (failed(runPipeline(*result.module, context, options, options.pipeline.remat, rematBudget, /*trial=*/false)))
    return failure();
  if (options.compileTo == CompileTo::Pipeline)
    return result;

  FailureOr<lmrt::plan::Plan> plan = translate(*result.module, options);
  if (failed(plan))
    return failure();
  // Budgets are compile errors: no plan is written.
  if (budget > 0 && plan->predicted_peak_bytes() > budget)
    return reportOverBudget(*plan, policy, bound, *frontend, context, options), failure();
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
