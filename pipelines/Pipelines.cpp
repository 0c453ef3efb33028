//===- Pipelines.cpp - The lm compile pipeline ----------------------------===//
//
// buildLMCompilePipeline (stages and extension points) and the registration
// lmc and lm-opt share.
//
//===----------------------------------------------------------------------===//

#include "pipelines/Pipelines.h"

#include "codegen/Passes.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

#include <mutex>

using namespace mlir;
using namespace mlir::lm;

//===----------------------------------------------------------------------===//
// Stages and extension points
//===----------------------------------------------------------------------===//

StringRef mlir::lm::getStageName(CompileStage stage) {
  switch (stage) {
  case CompileStage::Frontend:
    return "frontend";
  case CompileStage::Autodiff:
    return "autodiff";
  case CompileStage::Optimize:
    return "optimize";
  case CompileStage::Contract:
    return "contract";
  }
  llvm_unreachable("unknown compile stage");
}

static constexpr StringRef kExtensionPoints[] = {"before-autodiff", "after-autodiff", "after-optimize"};

ArrayRef<StringRef> mlir::lm::getExtensionPointNames() { return kExtensionPoints; }

CompilePipelineOptions::Option<std::string> *CompilePipelineOptions::getExtensionPoint(StringRef name) {
  if (name == "before-autodiff")
    return &beforeAutodiff;
  if (name == "after-autodiff")
    return &afterAutodiff;
  if (name == "after-optimize")
    return &afterOptimize;
  return nullptr;
}

std::vector<std::string> mlir::lm::getRegisteredPassNames() {
  // MLIR keeps its pass registry private. A pass-name parser without an
  // argument string registers every registered pass and pipeline as a
  // command-line literal, so the literals that map to that one option are
  // exactly the names. lm-opt already has such a parser (MlirOptMain's, built
  // after lm-opt loaded the plugins); lmc has none and gets one here, built on
  // first use, after its plugins are loaded.
  auto collect = [](llvm::cl::Option *list) {
    std::vector<std::string> names;
    for (auto &entry : llvm::cl::getRegisteredOptions())
      if (entry.second == list)
        names.push_back(entry.first().str());
    llvm::sort(names);
    return names;
  };
  llvm::StringMap<llvm::cl::Option *> &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("canonicalize");
  if (it == options.end()) {
    static std::once_flag once;
    std::call_once(once, [] { new PassNameCLParser("", "registered passes"); }); // lives as long as the registry
    it = options.find("canonicalize");
    if (it == options.end())
      return {};
  }
  return collect(it->second);
}

/// Writes "the registered passes: a, b, c" (one line).
static void listRegisteredPasses(raw_ostream &os) {
  std::vector<std::string> names = getRegisteredPassNames();
  os << "the registered passes and pipelines are: " << llvm::join(names, ", ") << "\n";
}

/// Adds the passes of one extension point. Accepts the pipeline wrapped in
/// braces, as lm-opt's option syntax needs when it holds commas.
static LogicalResult addExtensionPoint(OpPassManager &pm, StringRef point, StringRef text,
                                       raw_ostream &errorStream) {
  text = text.trim();
  if (text.size() >= 2 && text.front() == '{' && text.back() == '}')
    text = text.drop_front().drop_back().trim();
  if (text.empty())
    return success();
  std::string message;
  llvm::raw_string_ostream messageStream(message);
  if (succeeded(parsePassPipeline(text, pm, messageStream)))
    return success();
  errorStream << "in the passes of extension point '" << point << "' ('" << text << "'):\n" << message;
  if (message.find("does not refer to a registered pass") != std::string::npos)
    listRegisteredPasses(errorStream);
  return failure();
}

LogicalResult mlir::lm::buildLMCompilePipeline(OpPassManager &pm, const CompilePipelineOptions &opts,
                                               raw_ostream &errorStream, const StageHook &afterStage) {
  auto stageDone = [&](CompileStage stage) {
    if (afterStage)
      afterStage(stage, pm);
  };

  // LoRA adapters (the train block's lora = { ... }): frozen targets and new
  // trainable parameters, before anything else sees the parameters. A no-op
  // without lm.lora.
  pm.addPass(createLMLoraPass());
  if (failed(addExtensionPoint(pm, "before-autodiff", opts.beforeAutodiff.getValue(), errorStream)))
    return failure();

  // Stage 1: autodiff.
  if (opts.autodiff) {
    // Tensor parallelism (lm.mesh tensor > 1): every function becomes one
    // rank's, before autodiff, so the backward's collectives are the VJPs of
    // the forward's. Nothing changes without a tensor axis; a module that
    // already has its train step (lmc's --emit=train-mlir) is already one
    // rank's.
    pm.addPass(createLMSpmdPass());
    // fp16 seeds the backward with the runtime's loss scale (docs/mixed-precision.md).
    LMAutodiffPassOptions autodiffOptions;
    autodiffOptions.lossScale = opts.precision == "fp16";
    pm.addPass(createLMAutodiffPass(autodiffOptions));
  }
  // Dropout only in the train step (a no-op for a module without dropout).
  pm.addPass(createLMEvalModePass());
  // Tensor parallelism's gradients: split parameters' scaled, whole ones'
  // averaged over mesh axis 1 (with the train step it completes).
  if (opts.autodiff)
    pm.addPass(createLMSpmdGradientsPass());
  // Data parallelism (lm.mesh data > 1): the train step's gradients and loss
  // averaged over the ranks. Nothing changes without a mesh.
  pm.addPass(createLMDataParallelPass());
  if (failed(addExtensionPoint(pm, "after-autodiff", opts.afterAutodiff.getValue(), errorStream)))
    return failure();
  stageDone(CompileStage::Autodiff);

  // Stage 2: optimize. Canonicalize and CSE fold the backward graph (dead
  // adjoints, chained reshapes and transposes, duplicate constants).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Fusion, after the graph is folded: lm.fusion regions, one generated
  // kernel each (docs/fusion.md).
  // The output projection and the loss first, chunked over rows, so that the
  // [rows, V] logits are never stored and -lm-fuse does not take their matmuls.
  if (opts.fusion == FusionMode::Auto)
    pm.addPass(createLMFuseLinearCrossEntropyPass());
  // ZeRO stages 2 and 3 (lm.mesh zero >= 2): each gradient reduce-scattered in the
  // train step; under stage 3 every parameter the rank's slice too, gathered
  // right before each op that reads it. After CSE, which would merge a
  // parameter's gathers into one value live across the step, and after the fused
  // loss, whose forward and backward matmuls must read the same weight value to fuse.
  pm.addPass(createLMZeroShardParamsPass());
  // Mixed precision between the two: the fused loss keeps its fp32 GEMMs, and
  // -lm-fuse sees the casts, which it fuses into their producers' kernels.
  if (!opts.precision.empty() && opts.precision != "fp32") {
    if (opts.precision != "bf16" && opts.precision != "fp16") {
      errorStream << "unknown precision '" << opts.precision << "' (expected bf16, fp16 or fp32)\n";
      return failure();
    }
    LMMixedPrecisionPassOptions precisionOptions;
    precisionOptions.precision = opts.precision;
    pm.addPass(createLMMixedPrecisionPass(precisionOptions));
  }
  // Attention over slices of the fused q/k/v projection reads it in place, before
  // -lm-fuse (which neither takes slices nor concatenations).
  if (opts.fusion == FusionMode::Auto && opts.packAttention)
    pm.addPass(createLMPackAttentionPass());
  if (opts.fusion == FusionMode::Auto)
    pm.addPass(createLMFusePass());
  // Rematerialization, after fusion: it clones whole regions, so a recomputed
  // value comes from the same kernel as the forward's (bit-identical), and the
  // default compilation runs no extra pass at all.
  if (!opts.remat.empty() && opts.remat != "none") {
    std::optional<RematPolicy> policy = parseRematPolicy(opts.remat);
    if (!policy) {
      errorStream << "unknown remat policy '" << opts.remat << "' (expected none, full, selective or auto)\n";
      return failure();
    }
    LMRematPassOptions rematOptions;
    rematOptions.policy = opts.remat;
    rematOptions.budget = opts.rematBudget;
    pm.addPass(createLMRematPass(rematOptions));
  }
  if (failed(addExtensionPoint(pm, "after-optimize", opts.afterOptimize.getValue(), errorStream)))
    return failure();
  stageDone(CompileStage::Optimize);

  // Stage 3: contract. Plan translation's own checks, so that a module that
  // passes this stage is one lmc can write as a plan.
  if (opts.checkContract)
    pm.addPass(createLMCheckPlanContractPass());
  stageDone(CompileStage::Contract);
  return success();
}

LogicalResult mlir::lm::parseExtensionPasses(StringRef spec, CompilePipelineOptions &opts,
                                             raw_ostream &errorStream) {
  SmallVector<StringRef> entries;
  spec.split(entries, ';', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef entry : entries) {
    entry = entry.trim();
    if (entry.empty())
      continue;
    auto [point, pipeline] = entry.split(':');
    point = point.trim();
    CompilePipelineOptions::Option<std::string> *slot = opts.getExtensionPoint(point);
    if (!slot || !entry.contains(':')) {
      errorStream << "--passes expects 'point:pass,pass;point:...', got '" << entry << "'";
      if (!slot)
        errorStream << ": unknown extension point '" << point << "'";
      errorStream << "; the extension points are: " << llvm::join(getExtensionPointNames(), ", ") << "\n";
      return failure();
    }
    std::string text = slot->getValue();
    if (!text.empty())
      text += ",";
    text += pipeline.trim().str();
    *slot = text;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

/// lm-opt's pipeline builder: parses the options, then builds; a bad option
/// or extension pipeline fails pipeline construction with the message.
static LogicalResult buildFromOptionString(OpPassManager &pm, StringRef optionString,
                                           function_ref<LogicalResult(const Twine &)> errorHandler,
                                           bool trainOnly) {
  CompilePipelineOptions opts;
  std::string message;
  llvm::raw_string_ostream messageStream(message);
  if (failed(opts.parseFromString(optionString, messageStream)))
    return errorHandler("invalid options '" + optionString + "': " + message);
  if (trainOnly)
    opts.checkContract = false;
  if (failed(buildLMCompilePipeline(pm, opts, messageStream)))
    return errorHandler(StringRef(message).rtrim());
  return success();
}

void mlir::lm::registerLMPassesAndPipelines() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerLMTransformsPasses();
    registerLMCodegenPasses();
    registerTransformsPasses();
    auto printOptions = [](function_ref<void(const detail::PassOptions &)> print) {
      print(CompilePipelineOptions());
    };
    registerPassPipeline("lm-compile-pipeline",
                         "The whole compile pipeline: autodiff, optimize, contract, with extension points",
                         [](OpPassManager &pm, StringRef options,
                            function_ref<LogicalResult(const Twine &)> errorHandler) {
                           return buildFromOptionString(pm, options, errorHandler, /*trainOnly=*/false);
                         },
                         printOptions);
    registerPassPipeline("lm-train-pipeline",
                         "lm-compile-pipeline without the contract stage (autodiff, then canonicalize and CSE)",
                         [](OpPassManager &pm, StringRef options,
                            function_ref<LogicalResult(const Twine &)> errorHandler) {
                           return buildFromOptionString(pm, options, errorHandler, /*trainOnly=*/true);
                         },
                         printOptions);
  });
}
