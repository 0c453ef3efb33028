//===- lmc.cpp - The LMC compiler driver ----------------------------------===//
//
// `lmc compile FILE.lm|FILE.mlir` runs the whole compiler through compileToPlan
// (pipelines/CompileToPlan.h): the frontend (or the MLIR parser), the compile
// pipeline shared with lm-opt (autodiff, optimize, contract, with user passes
// from --load-pass-plugin at its extension points), plan translation and
// kernel compilation; then it writes the plan file. Each stage can be printed
// (--emit) or dumped (--dump-dir); see docs/compilation.md. `lmc memory-plan
// PLAN` re-checks the memory plan of an existing plan (binary or protobuf text);
// `lmc plan --flops C` sizes a model for a budget (ComputePlanner.h).
// Errors are printed as file:line:col with the source line and a caret; every
// failure exits 1.
//
//===----------------------------------------------------------------------===//

#include "codegen/MemoryPlanner.h"
#include "pipelines/CompileToPlan.h"
#include "base/file_io.h"
#include "base/format.h"
#include "base/paths.h"
#include "contract/contract.h"
#include "contract/plan_file.h"
#include "base/tensor.h"
#include "contract/plan_trust.h"
#include "contract/tensor_split.h"
#include "contract/train_settings.h"
#include "tools/RegisterLMDialects.h"
#include "tools/cli_checks.h"
#include "tools/lmc/ComputePlanner.h"
#include "tools/lmc/DumpDir.h"
#include "contract/cost_model.h"
#include "tools/lmc/Explain.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>
#include <google/protobuf/text_format.h>

#include <chrono>
#include <map>
#include <set>

using namespace mlir;

namespace {

struct CompileOptions {
  std::string input;
  std::string output;
  std::vector<std::string> defines;
  std::string preset;
  std::string mesh;  // --mesh data=D,tensor=T (docs/distributed.md)
  int64_t zero = -1; // --zero N: the ZeRO stage (-1: the train block's)
  double bucketMb = -1; // --bucket-mb N: data-parallel gradient buckets (-1: the train block's)
  double prefetchMb = -1; // --prefetch-mb N: ZeRO-3's gathers issued ahead (-1: the train block's)
  std::string floatType = "f32";
  bool noDecodePrograms = false;
  std::string emit;
  std::string dumpDir;
  bool printIRAfterAll = false;
  std::string fusion = "auto";
  bool packAttention = true; // --pack-attention: -lm-pack-attention with fusion on a CPU-only target
  std::string remat; // empty: the train block's remat, else none
  std::string precision; // empty: the train block's precision, else fp32
  std::string memBudget; // not given: the train block's memory_budget, else none
  bool memBudgetGiven = false; // --mem-budget "" is an error, not "none"
  std::string deviceMemory; // --device-memory: a size or a known GPU (h100); not given: unknown
  bool deviceMemoryGiven = false;
  std::string target = "cpu";
  std::vector<std::string> passPlugins;
  std::vector<std::string> passes;
  std::string signKey;  // --sign: an Ed25519 private key (contract/plan_trust.h)
  bool overwrite = false;
  /// --steps S: also print the 6ND compute of a run of S steps (0: not asked).
  int64_t steps = 0;
  /// `lmc explain`: compile, then explain the plan instead of writing it.
  const lmc::ExplainOptions *explain = nullptr;
};

/// A pass plugin is mapped by dlopen, not read: it is checked to be a regular
/// file (a FIFO would block dlopen's open) of a plausible size first.
constexpr uint64_t kMaxPluginBytes = uint64_t(1) << 30;

int fail(const llvm::Twine &message) {
  llvm::outs().flush(); // keep what was printed before the error first in a 2>&1 pipe
  llvm::errs() << "lmc: error: " << message << "\n";
  return 1;
}

/// "1234567" -> "1,234,567".
std::string withThousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string humanFlops(int64_t flops) {
  const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  double v = static_cast<double>(flops);
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  return llvm::formatv("{0:f2} {1}", v, units[u]).str();
}

std::string humanBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return llvm::formatv("{0:f1} {1}", v, units[u]).str();
}

std::string planToText(const lmrt::plan::Plan &plan) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true); // shape: [2, 3] rather than one line per dim
  std::string text;
  printer.PrintToString(plan, &text);
  return text;
}

/// The --dump-dir file of a stage's IR: "00-frontend.mlir".
std::string stageDumpName(mlir::lm::CompileStage stage) {
  return llvm::formatv("{0:d2}-{1}.mlir", static_cast<int>(stage), mlir::lm::getStageName(stage)).str();
}

/// Every file --dump-dir may hold, so that the output rules see them all before
/// the compile starts.
std::vector<std::string> dumpFileNames() {
  std::vector<std::string> names;
  for (auto stage : {mlir::lm::CompileStage::Frontend, mlir::lm::CompileStage::Autodiff,
                     mlir::lm::CompileStage::Optimize, mlir::lm::CompileStage::Contract})
    names.push_back(stageDumpName(stage));
  for (const char *name : {"04-plan.txt", "kernels.cpp", "kernels.cu"})
    names.push_back(name);
  return names;
}

/// Writes `text` to `dir/name` (lmc::writeDumpFile); reports and fails on I/O errors.
LogicalResult writeDump(const std::string &dir, StringRef name, StringRef text) {
  std::string error;
  llvm::raw_string_ostream errors(error);
  if (failed(lmc::writeDumpFile(dir, name, text, errors)))
    return fail(error), failure();
  return success();
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n"; // a text file (and lm-opt's output) ends with a newline
  return text;
}

/// Prints every program's memory plan; false if any check failed.
bool printMemoryPlans(const lmrt::plan::Plan &plan, llvm::raw_ostream &os) {
  bool ok = true;
  for (const lmrt::plan::Program &program : plan.programs())
    ok &= mlir::lm::printMemoryPlan(program, os).empty();
  return ok;
}

/// "12 generated kernels (cpu-x86-64: compiled)" or "no generated kernels".
std::string kernelSummary(const lmrt::plan::Plan &plan, const mlir::lm::KernelCompileReport &report) {
  int kernels = plan.kernels_size();
  if (kernels == 0)
    return "no generated kernels";
  std::string targets;
  for (const lmrt::plan::KernelLibrary &lib : plan.kernel_libraries())
    targets += (targets.empty() ? "" : ", ") + lib.target();
  const char *how = report.compiledLibraries == 0 ? "from the kernel cache"
                    : report.cachedLibraries == 0 ? "compiled"
                                                  : "compiled and cached";
  return std::to_string(kernels) + (kernels == 1 ? " generated kernel (" : " generated kernels (") +
         targets + ": " + how + ")";
}

/// Parses -D name=value flags.
LogicalResult parseDefines(const std::vector<std::string> &defines, mlir::lm::FrontendOptions &options) {
  for (const std::string &d : defines) {
    size_t eq = d.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == d.size())
      return fail("-D expects name=value, got '" + d + "'"), failure();
    options.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
  }
  return success();
}

/// Parses --mesh data=D,tensor=T[,sp] (either axis may be left out: the train block's;
/// `sp`: sequence parallelism with the tensor axis).
LogicalResult parseMesh(const std::string &text, mlir::lm::FrontendOptions &options) {
  SmallVector<StringRef> items;
  StringRef(text).split(items, ',', -1, /*KeepEmpty=*/true);
  for (StringRef item : items) {
    if (item.trim() == "sp") { // sequence parallelism with the tensor axis
      options.sequenceParallel = 1;
      continue;
    }
    auto [axis, value] = item.trim().split('=');
    int64_t n = 0;
    int64_t *slot = axis == "data" ? &options.meshData : axis == "tensor" ? &options.meshTensor : nullptr;
    if (!slot || value.getAsInteger(10, n) || n < 1 || n > (1 << 20))
      return fail("--mesh expects data=D,tensor=T[,sp] with whole numbers of ranks in [1, " + std::to_string(1 << 20) +
                  "], got '" + text + "'"),
             failure();
    *slot = n;
  }
  return success();
}

/// A plan with several models (one `forward:<model>` program each, as
/// models/electra.lm's generator and discriminator) also gets each model's own
/// parameter count, parameters it shares with another model counted in both, so
/// each can be compared with its Hugging Face class.
void printModelParams(const lmrt::plan::Plan &plan) {
  std::map<std::string, int64_t> sizes;
  for (const lmrt::plan::Param &p : plan.params()) {
    int64_t n = 1;
    for (int64_t d : p.type().shape())
      n *= d;
    sizes[p.name()] = n;
  }
  for (const lmrt::plan::Program &prog : plan.programs()) {
    if (prog.name().rfind("forward:", 0) != 0)
      continue;
    std::set<std::string> seen;
    int64_t count = 0;
    for (const lmrt::plan::Buffer &b : prog.buffers())
      if (b.kind() == lmrt::plan::Buffer::PARAM && seen.insert(b.name()).second)
        count += sizes[b.name()];
    llvm::errs() << "lmc: model '" << prog.name().substr(8) << "': " << withThousands(count) << " parameters\n";
  }
}

int runCompile(const CompileOptions &opts, bool frontendFlagsGiven) {
  auto start = std::chrono::steady_clock::now();
  StringRef ext = llvm::sys::path::extension(opts.input);
  if (ext != ".lm" && ext != ".mlir")
    return fail("'" + opts.input + "' is neither a .lm source nor a .mlir module");
  if (ext == ".mlir" && frontendFlagsGiven)
    return fail("-D, --preset, --mesh, --zero, --bucket-mb, --prefetch-mb and --float-type apply to .lm sources, not to '" + opts.input + "'");
  // The output rules (base/paths.h, docs/runtime.md "Paths") before any work:
  // no output is an input, every one is writable, and an existing -o is
  // replaced only when it is a plan (an earlier compile's), else with
  // --overwrite. --dump-dir's files, named by lmc, are replaced on every
  // compile: the directory shows the latest one. The files the source imports
  // are known after the frontend, and checked there (afterStage below).
  bool writesPlan = !opts.explain && (opts.emit.empty() || !opts.output.empty());
  std::vector<lmrt::OutputSpec> outputs;
  if (opts.explain && !opts.explain->chart.empty())
    outputs.push_back({"--chart", opts.explain->chart, false, lmrt::IfExists::NeedsOverwrite});
  if (writesPlan) {
    std::string out = opts.output.empty() ? (llvm::sys::path::stem(opts.input) + ".plan").str() : opts.output;
    outputs.push_back({"-o", out, false, lmrt::IfExists::ReplaceEarlier, [](const std::string &path) {
                         return lmrt::fileStartsWith(path, std::string(lmrt::kPlanMagic, sizeof lmrt::kPlanMagic));
                       }, "a plan"});
  }
  if (!opts.dumpDir.empty()) {
    outputs.push_back({"--dump-dir", opts.dumpDir, true});
    for (const std::string &name : dumpFileNames())
      outputs.push_back({"--dump-dir", (opts.dumpDir + "/" + name), false, lmrt::IfExists::Replace});
  }
  std::vector<lmrt::NamedPath> inputs = {{"the source", opts.input}, {"--sign", opts.signKey}};
  for (const std::string &plugin : opts.passPlugins)
    inputs.push_back({"--load-pass-plugin", plugin});
  std::vector<lmrt::NamedPath> fileOutputs;
  for (const lmrt::OutputSpec &o : outputs)
    if (!o.directory)
      fileOutputs.push_back({o.role, o.path});
  try {
    lmrt::checkOutputs(outputs, inputs, opts.overwrite, stderr);
  } catch (const lmrt::Error &e) {
    return fail(e.what());
  }
  if (!opts.dumpDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(opts.dumpDir))
      return fail("cannot create --dump-dir '" + opts.dumpDir + "': " + ec.message());

  // Plugins first: their passes must be registered before --passes names them.
  mlir::lm::registerLMPassesAndPipelines();
  for (const std::string &path : opts.passPlugins) {
    // A missing path is left to the loader, which also searches the library
    // path for a bare name and says what it tried.
    std::string error;
    if (llvm::sys::fs::exists(path) && !lmrt::checkRegularFile(path, "pass plugin", kMaxPluginBytes, error))
      return fail(error);
    llvm::Expected<PassPlugin> plugin = PassPlugin::load(path);
    if (!plugin)
      return fail("cannot load pass plugin '" + path + "': " + llvm::toString(plugin.takeError()));
    plugin->registerPassRegistryCallbacks();
  }
  mlir::lm::CompileToPlanOptions compileOptions;
  compileOptions.pipeline.fusion = opts.fusion == "none" ? mlir::lm::FusionMode::None : mlir::lm::FusionMode::Auto;
  compileOptions.pipeline.packAttention = opts.packAttention;  // off for a CUDA target (compileToPlan)
  compileOptions.pipeline.remat = opts.remat;
  compileOptions.pipeline.precision = opts.precision;
  if (opts.memBudgetGiven) {
    std::string error;
    if (!lmrt::settings::parseByteSize(opts.memBudget, compileOptions.memBudget, error))
      return fail("--mem-budget " + error);
  }
  if (opts.deviceMemoryGiven) {
    std::string error;
    if (!lmrt::settings::parseDeviceMemory(opts.deviceMemory, compileOptions.deviceMemory, error))
      return fail("--device-memory " + error);
    if (lmrt::settings::findKnownDevice(opts.deviceMemory))
      compileOptions.deviceName = opts.deviceMemory;
  }
  for (const std::string &spec : opts.passes) {
    std::string error;
    llvm::raw_string_ostream errors(error);
    if (failed(mlir::lm::parseExtensionPasses(spec, compileOptions.pipeline, errors)))
      return fail(StringRef(error).rtrim());
  }

  DialectRegistry registry;
  mlir::lm::registerLMDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // The caret at the source line says where; dumping the op (or the whole
  // module, for module-level errors) under every error only buries that.
  context.printOpOnDiagnostic(false);

  // Read by the one reader of user files (base/file_io.h): a regular file,
  // bounded, read to its end; imports are read the same way by the frontend.
  std::string sourceText, readError;
  if (!lmrt::readRegularFile(opts.input, "source", mlir::lm::kMaxSourceBytes, sourceText, readError))
    return fail(readError);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(sourceText, opts.input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // An error with no place in the source (an extension point's passes that
  // do not parse) is about lmc's flags: it reads as lmc's own.
  ScopedDiagnosticHandler flagErrors(&context, [](Diagnostic &diag) {
    if (!isa<UnknownLoc>(diag.getLocation()) || diag.getSeverity() != DiagnosticSeverity::Error)
      return failure();
    fail(diag.str());
    return success();
  });

  if (ext == ".lm") {
    compileOptions.input = mlir::lm::InputKind::LmSource;
    compileOptions.frontend.floatType = opts.floatType;
    compileOptions.frontend.decodePrograms = !opts.noDecodePrograms;
    compileOptions.frontend.preset = opts.preset;
    if (failed(parseDefines(opts.defines, compileOptions.frontend)))
      return 1;
    if (!opts.mesh.empty() && failed(parseMesh(opts.mesh, compileOptions.frontend)))
      return 1;
    compileOptions.frontend.zero = opts.zero;
    compileOptions.frontend.bucketMb = opts.bucketMb;
    compileOptions.frontend.prefetchMb = opts.prefetchMb;
  } else {
    compileOptions.input = mlir::lm::InputKind::MlirModule;
  }
  compileOptions.translation.sourcePath = opts.input;
  compileOptions.translation.targetCpu = StringRef(opts.target).contains("cpu");
  compileOptions.translation.targetCuda = StringRef(opts.target).contains("cuda");
  compileOptions.printIRAfterAll = opts.printIRAfterAll;

  // --emit prints one stage and stops there, unless -o or --dump-dir asks for
  // the rest too.
  bool emitOnly = !writesPlan && opts.dumpDir.empty();
  if (emitOnly && opts.emit == "mlir")
    compileOptions.compileTo = mlir::lm::CompileTo::Frontend;
  else if (emitOnly && opts.emit == "train-mlir")
    compileOptions.compileTo = mlir::lm::CompileTo::Pipeline;
  // The IR of each stage: --dump-dir's NN-<stage>.mlir, and --emit=mlir (the
  // frontend's) or --emit=train-mlir (the pipeline's last stage's).
  compileOptions.afterStage = [&](mlir::lm::CompileStage stage, ModuleOp module) -> LogicalResult {
    if (stage == mlir::lm::CompileStage::Frontend) {
      // Every imported file is in the source manager now: none may be an output.
      std::vector<lmrt::NamedPath> imports;
      for (unsigned id = 2; id <= sourceMgr.getNumBuffers(); ++id)
        imports.push_back({"the imported file", sourceMgr.getMemoryBuffer(id)->getBufferIdentifier().str()});
      try {
        lmrt::refuseOverlappingPaths(fileOutputs, imports);
      } catch (const lmrt::Error &e) {
        return fail(e.what()), failure();
      }
    }
    bool emitted = (stage == mlir::lm::CompileStage::Frontend && opts.emit == "mlir") ||
                   (stage == mlir::lm::CompileStage::Contract && opts.emit == "train-mlir");
    if (!emitted && opts.dumpDir.empty())
      return success();
    std::string text = printModule(module);
    std::string name = stageDumpName(stage);
    if (!opts.dumpDir.empty() && failed(writeDump(opts.dumpDir, name, text)))
      return failure();
    if (emitted)
      llvm::outs() << text;
    return success();
  };
  // The generated kernels' sources, before they are compiled.
  StringRef cudaTarget = mlir::lm::getKernelTargetName(mlir::lm::KernelTarget::Cuda);
  compileOptions.afterTranslation = [&](const lmrt::plan::Plan &plan) -> LogicalResult {
    if (!opts.dumpDir.empty())
      for (const lmrt::plan::KernelLibrary &lib : plan.kernel_libraries())
        if (failed(writeDump(opts.dumpDir, lib.target() == cudaTarget ? "kernels.cu" : "kernels.cpp", lib.source())))
          return failure();
    return success();
  };

  FailureOr<mlir::lm::CompiledPlan> compiled = mlir::lm::compileToPlan(sourceMgr, context, compileOptions);
  if (failed(compiled))
    return 1;
  if (!compiled->plan)
    return 0;
  lmrt::plan::Plan &plan = *compiled->plan;
  if (opts.explain)
    return lmc::explainPlan(plan, opts.input, *opts.explain);

  // Signed last, over everything else the plan holds (docs/plan-format.md, "Trust").
  if (!opts.signKey.empty()) {
    try {
      lmrt::signPlan(plan, opts.signKey);
    } catch (const lmrt::Error &e) {
      return fail(e.what());
    }
  }
  // The text only when asked for: printing it took a sixth of a deep model's
  // compile (and a copy of the plan's size in memory).
  if (!opts.dumpDir.empty() || opts.emit == "plan-text") {
    std::string planText = planToText(plan);
    if (!opts.dumpDir.empty() && failed(writeDump(opts.dumpDir, "04-plan.txt", planText)))
      return 1;
    if (opts.emit == "plan-text")
      llvm::outs() << planText;
  }
  if (opts.emit == "memory-plan" && !printMemoryPlans(plan, llvm::outs()))
    return fail("the memory plan check failed");

  std::string outPath = opts.output;
  if (writesPlan) {
    if (outPath.empty())
      outPath = (llvm::sys::path::stem(opts.input) + ".plan").str();
    std::string error;
    if (!lmrt::writePlanFile(outPath, plan, error))
      return fail(error);
  }

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Frozen parameters count among the parameters (as HF's num_parameters does);
  // how many of them are frozen is said only when some are.
  // Under tensor parallelism the plan's parameters are one rank's slices
  // (param_count counts those); the model has the logical tensors.
  int64_t frozen = 0, logical = 0;
  std::string padded;  // the split parameters whose last block is padded (a vocabulary T does not divide)
  for (const lmrt::plan::Param &p : plan.params()) {
    int64_t n = 1;
    for (auto [i, d] : llvm::enumerate(p.type().shape()))
      n *= p.has_sharding() && (int64_t)i == p.sharding().dim() ? lmrt::splitLogicalSize(p.sharding(), d) : d;
    if (p.has_sharding() && p.sharding().logical_size() > 0) {
      int64_t block = p.type().shape((int)p.sharding().dim());
      padded += (padded.empty() ? "" : ", ") + p.name() + " (" + std::to_string(p.sharding().logical_size()) + " in " +
                std::to_string(p.sharding().shards()) + " blocks of " + std::to_string(block) + ": " +
                std::to_string(block * p.sharding().shards() - p.sharding().logical_size()) + " padding)";
    }
    logical += n;
    if (p.frozen())
      frozen += n;
  }
  std::string frozenNote = frozen ? " (" + withThousands(frozen) + " frozen)" : "";
  std::string rankNote = logical != plan.param_count()
                             ? " (" + withThousands(plan.param_count()) + " on each tensor-parallel rank)"
                             : std::string();
  llvm::errs() << "lmc: " << (writesPlan ? "wrote " + outPath : std::string("compiled ") + opts.input) << ": "
               << withThousands(logical) << " parameters" << frozenNote << rankNote << ", "
               << humanFlops(plan.flops_per_step())
               << "/step, predicted peak memory " << humanBytes(plan.predicted_peak_bytes()) << " ("
               << withThousands(plan.predicted_peak_bytes()) << " bytes)"
               << (plan.remat().empty() ? std::string() : " with remat " + plan.remat()) << ", " << kernelSummary(plan, compiled->kernels)
               << ", compiled in "
               << llvm::formatv("{0:f2}", seconds) << " s\n";
  if (const lmrt::plan::Lora &lora = plan.train().lora(); lora.targets_size() > 0) {
    // PEFT's print_trainable_parameters: the adapters train, the base is frozen.
    int64_t trainable = logical - frozen;
    llvm::errs() << "lmc: LoRA rank " << lora.rank() << ", alpha " << lmrt::formatG(lora.alpha()) << " on "
                 << lora.targets_size() << " weight" << (lora.targets_size() == 1 ? "" : "s")
                 << ": trainable " << withThousands(trainable) << " of " << withThousands(logical)
                 << " parameters (" << llvm::formatv("{0:f2}", 100.0 * trainable / logical) << " %)\n";
  }
  printModelParams(plan);
  if (const lmrt::plan::Mesh &mesh = plan.train().mesh(); mesh.data() > 1 || mesh.tensor() > 1) {
    // On a mesh the predicted peak is one rank's (rank 0's, the largest); its terms (docs/distributed.md).
    const lmrt::PredictedMemory m = lmrt::predictedMemory(plan);
    llvm::errs() << "lmc: per rank (";
    if (mesh.zero() > 0) llvm::errs() << "ZeRO stage " << mesh.zero() << ", ";
    llvm::errs() << "data = " << mesh.data() << (mesh.tensor() > 1 ? ", tensor = " + std::to_string(mesh.tensor()) : "")
                 << "): parameters " << humanBytes(m.params)
                 << (mesh.zero() >= 3 ? " (1/" + std::to_string(mesh.data()) +
                                            " of them; each whole one gathered into the activations right before its use)"
                                      : std::string())
                 << ", gradients " << humanBytes(m.grads)
                 << (mesh.zero() >= 2 ? " (1/" + std::to_string(mesh.data()) + ", reduce-scattered by the train step)"
                                      : std::string())
                 << ", optimizer state " << humanBytes(m.optimizer)
                 << (mesh.zero() > 0 ? " (1/" + std::to_string(mesh.data()) + " of it)" : std::string())
                 << ", activations " << humanBytes(m.arena) << ", communication buffers " << humanBytes(m.commScratch)
                 << "\n";
    if (!padded.empty())
      llvm::errs() << "lmc: per rank, padded to a block on every tensor rank (the padding counted above, held as "
                   << "zeros, never written to a checkpoint): " << padded << "\n";
  }
  if (opts.steps > 0) {
    if (!plan.has_data() || plan.data().batch() <= 0 || plan.data().seq() <= 0)
      return fail("--steps needs the plan's batch and sequence length (a data block), and '" + opts.input +
                  "' has none");
    const lmrt::plan::Mesh &mesh = plan.train().mesh();
    int64_t ranks = std::max<int64_t>(1, mesh.data()) * std::max<int64_t>(1, mesh.tensor());
    int64_t batch = mesh.global_batch() > 0 ? mesh.global_batch() : plan.data().batch();
    llvm::errs() << lmc::describeRunCompute(logical, batch, plan.data().seq(), opts.steps, plan.flops_per_step(), ranks);
  }
  return 0;
}

/// `lmc memory-plan PLAN`: the plan may be a plan file or its protobuf text
/// (what --emit=plan-text prints), so tests can hand-write broken plans. A file
/// that starts with the plan magic is a plan file, whatever its name.
int runMemoryPlan(const std::string &path) {
  // A FIFO or device would block or never end: plans are regular files, of at
  // most protobuf's 2 GiB (the plan reader's own bound) and their framing.
  std::string text, error;
  if (!lmrt::readRegularFile(path, "plan", (uint64_t(2) << 30) + 4096, text, error))
    return fail(error);
  StringRef bytes = text;
  lmrt::plan::Plan plan;
  if (bytes.starts_with(StringRef(lmrt::kPlanMagic, sizeof lmrt::kPlanMagic))) {
    try {
      plan = lmrt::decodePlan(bytes.str(), path);
    } catch (const lmrt::Error &e) {
      return fail(e.what());
    }
  } else if (!google::protobuf::TextFormat::ParseFromString(bytes.str(), &plan)) {
    return fail("'" + path + "' is neither a plan file (no \"LMCPLAN\" magic) nor a plan in protobuf text format "
                "(see the message above)");
  }
  if (!printMemoryPlans(plan, llvm::outs()))
    return fail("the memory plan check failed for '" + path + "'");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"lmc: compiles .lm models into plans that lmrt trains"};
  app.require_subcommand(1);

  CompileOptions opts;
  CLI::App *compile = app.add_subcommand("compile", "compile a .lm source (or an lm .mlir module) into a plan");
  compile->add_option("file", opts.input, "the .lm source or .mlir module")->required();
  compile->add_option("-o,--output", opts.output, "the plan to write (default: FILE's stem + .plan, here)");
  compile->add_flag("--overwrite", opts.overwrite,
                    "replace an existing -o that is not a plan (an earlier plan is replaced without it)");
  CLI::Option *defines =
      compile->add_option("-D", opts.defines, "override a config constant: -D name=value (repeatable)");
  CLI::Option *preset =
      compile->add_option("--preset", opts.preset, "start from the config values of a named preset (-D still overrides)");
  CLI::Option *floatType = compile->add_option("--float-type", opts.floatType, "float element type of every tensor")
                               ->check(CLI::IsMember({"f32", "f64"}));
  compile
      ->add_option("--emit", opts.emit,
                   "print a stage to stdout instead of writing the plan (also writes it with -o): "
                   "mlir (frontend), train-mlir (after the compile pipeline), plan-text, memory-plan")
      ->check(CLI::IsMember({"mlir", "train-mlir", "plan-text", "memory-plan"}));
  compile->add_option("--dump-dir", opts.dumpDir,
                      "write every stage: 00-frontend.mlir, 01-autodiff.mlir, 02-optimize.mlir, 03-contract.mlir, "
                      "04-plan.txt, and the generated kernels' kernels.cpp (and kernels.cu)");
  compile->add_option("--steps", opts.steps, "also print the compute (6 N D FLOP) of a run of this many steps")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 50));
  compile->add_flag("--print-ir-after-all", opts.printIRAfterAll, "print the IR after every pass (stderr)");
  compile->add_flag("--no-decode-programs", opts.noDecodePrograms,
                    "leave out a causal model's prefill and decode programs (lmrt sample then re-runs the window "
                    "for every token)");
  CLI::Option *mesh = compile->add_option(
      "--mesh", opts.mesh,
      "the device mesh, over the train block's mesh: data=D (D data-parallel ranks, each on batch / D rows; "
      "run with mpirun -np D), tensor=T (T tensor-parallel ranks) and sp (sequence parallelism with the tensor "
      "axis); docs/distributed.md");
  CLI::Option *zero = compile->add_option(
      "--zero", opts.zero,
      "the ZeRO stage over the train block's zero: 0 (plain data parallelism), 1 (each data rank keeps 1/D of the "
      "optimizer state), 2 (and reduce-scatters the gradients) or 3 (and keeps 1/D of each parameter, gathered "
      "right before its use); needs --mesh data=D with D > 1; docs/distributed.md");
  CLI::Option *bucketMb = compile->add_option(
      "--bucket-mb", opts.bucketMb,
      "data parallelism's gradient buckets, over the train block's bucket_mb: each bucket's gradients (about N "
      "MiB, in the order the backward computes them) are all-reduced as one collective while the backward goes "
      "on; 0: one all-reduce per gradient; default 25 (docs/distributed.md, \"Buckets and overlap\")")
      ->check(CLI::Range(0.0, double(1 << 20)));
  CLI::Option *prefetchMb = compile->add_option(
      "--prefetch-mb", opts.prefetchMb,
      "ZeRO stage 3's prefetch, over the train block's prefetch_mb: each op's parameter all-gathers are issued "
      "ahead of earlier ops, up to N MiB of gathered parameters ahead at any op, so they run while those ops "
      "compute; default 0: each right before its op (docs/distributed.md, \"Stage 3\")")
      ->check(CLI::Range(0.0, double(1 << 20)));
  compile->add_option("--fusion", opts.fusion, "fusion in the optimize stage: auto (default) or none")
      ->check(CLI::IsMember({"auto", "none"}));
  compile->add_option("--pack-attention", opts.packAttention,
                      "with fusion on, attention over slices of a fused q/k/v projection reads it in place and its "
                      "grad writes dqkv whole (no slice or concat copies); true (default) or false; always off for a "
                      "CUDA target (docs/fusion.md)");
  compile->add_option("--remat", opts.remat,
                      "rematerialization: none, full (keep each layer's input, recompute the rest) or selective "
                      "(keep GEMM outputs) or auto (the fewest recomputed FLOPs under --mem-budget); default: the train block's "
                      "remat, else none (docs/remat.md)")
      ->check(CLI::IsMember({"none", "full", "selective", "auto"}));
  compile->add_option("--precision", opts.precision,
                      "mixed precision: bf16 (GEMM operands in bf16, fp32 accumulation, everything else fp32), "
                      "fp16 (the same in fp16, with dynamic loss scaling) or fp32; default: the train block's "
                      "precision, else fp32 (docs/mixed-precision.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  CLI::Option *memBudget = compile->add_option("--mem-budget", opts.memBudget,
                      "fail unless the predicted peak memory fits this size (8GiB, 512MiB, 2GB, ...); with --remat "
                      "auto, recompute until it does; default: the train block's memory_budget (docs/remat.md)");
  CLI::Option *deviceMemory = compile->add_option(
      "--device-memory", opts.deviceMemory,
      "the memory of the device the plan will run on: a size (80GiB) or a known GPU (" +
          lmrt::settings::knownDeviceNames() +
          "); fail unless the predicted peak fits it, as --mem-budget (the smaller applies) (docs/remat.md)");
  compile->add_option("--sign", opts.signKey,
                      "sign the plan with this Ed25519 private key (PEM), for lmrt --trust-key (docs/plan-format.md)");
  compile->add_option("--target", opts.target, "what the generated kernels are compiled for: cpu, cuda, or cpu,cuda")
      ->check(CLI::IsMember({"cpu", "cuda", "cpu,cuda", "cuda,cpu"}));
  // One value per occurrence (repeat the flag for more), so that the input
  // file after `--passes SPEC` is not taken for a second SPEC.
  compile
      ->add_option("--load-pass-plugin", opts.passPlugins,
                   "load an MLIR pass plugin (a .so with mlirGetPassPluginInfo); repeatable")
      ->allow_extra_args(false);
  compile
      ->add_option("--passes", opts.passes,
                   "run passes at extension points: 'POINT:PASS,PASS;POINT:...' with POINT one of "
                   "before-autodiff, after-autodiff, after-optimize; repeatable")
      ->allow_extra_args(false);

  // `lmc explain`: the compile's source flags (no outputs but --chart).
  CompileOptions explainOpts;
  lmc::ExplainOptions explainOptions;
  explainOpts.explain = &explainOptions;
  CLI::App *explain = app.add_subcommand(
      "explain", "compile a .lm source and say what makes up its predicted peak memory and its FLOPs "
                 "(docs/explain.md); writes no plan");
  explain->add_option("file", explainOpts.input, "the .lm source or .mlir module")->required();
  CLI::Option *explainDefines =
      explain->add_option("-D", explainOpts.defines, "override a config constant: -D name=value (repeatable)");
  CLI::Option *explainPreset = explain->add_option("--preset", explainOpts.preset, "start from a named preset");
  CLI::Option *explainFloat = explain->add_option("--float-type", explainOpts.floatType, "float element type")
                                  ->check(CLI::IsMember({"f32", "f64"}));
  explain->add_option("--fusion", explainOpts.fusion, "fusion in the optimize stage: auto (default) or none")
      ->check(CLI::IsMember({"auto", "none"}));
  explain->add_option("--precision", explainOpts.precision, "mixed precision: fp32, bf16 or fp16 (as lmc compile)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  CLI::Option *explainMesh = explain->add_option(
      "--mesh", explainOpts.mesh, "the device mesh, data=D,tensor=T (as lmc compile): the figures are one rank's");
  CLI::Option *explainZero =
      explain->add_option("--zero", explainOpts.zero, "the ZeRO stage (as lmc compile): the figures are one rank's");
  explain->add_option("--remat", explainOpts.remat, "rematerialization: none, full, selective or auto (as lmc compile)")
      ->check(CLI::IsMember({"none", "full", "selective", "auto"}));
  CLI::Option *explainBudget =
      explain->add_option("--mem-budget", explainOpts.memBudget, "the memory budget (as lmc compile)");
  CLI::Option *explainDevice = explain->add_option("--device-memory", explainOpts.deviceMemory,
                                                   "the device's memory (as lmc compile)");
  explain->add_option("--format", explainOptions.format, "text (default) or json (one object; docs/explain.md)")
      ->check(CLI::IsMember({"text", "json"}));
  explain->add_option("--chart", explainOptions.chart,
                      "write an SVG chart of the train step's live memory over its steps to this file");
  explain->add_flag("--overwrite", explainOpts.overwrite, "replace an existing --chart file");
  explain->add_option("--machine", explainOptions.machine,
                      "the machine's rates for the predicted step time (written by lmrt calibrate; default: " +
                          lmrt::defaultMachineFile() + " when it exists, else lmc's defaults)");

  std::string planPath;
  CLI::App *memoryPlan =
      app.add_subcommand("memory-plan", "print and check the memory plan of a plan (a plan file, or protobuf text)");
  memoryPlan->add_option("plan", planPath, "the plan file")->required();

  lmc::PlanOptions planOpts;
  CLI::App *plan = app.add_subcommand(
      "plan", "compute-optimal model and data size for a budget (Chinchilla), Kaplan's L(N), the nearest zoo preset");
  plan->add_option("--flops", planOpts.flops, "training compute C in FLOP (e.g. 1e21)");
  plan->add_option("--params", planOpts.params, "model size N in parameters (e.g. 124e6)");
  plan->add_option("--tokens", planOpts.tokens, "training tokens D (e.g. 2.5e9)");
  plan->add_option("--zoo", planOpts.zoo, "the folder of the zoo's .lm files (default: models)");

  lmc_tools::refuseEmptyValues(app, {});
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  opts.memBudgetGiven = memBudget->count() > 0;
  explainOpts.memBudgetGiven = explainBudget->count() > 0;
  opts.deviceMemoryGiven = deviceMemory->count() > 0;
  explainOpts.deviceMemoryGiven = explainDevice->count() > 0;
  explainOptions.remat = explainOpts.remat;
  explainOptions.fusion = explainOpts.fusion;
  int status = *compile   ? runCompile(opts, defines->count() > 0 || floatType->count() > 0 || preset->count() > 0 ||
                                             mesh->count() > 0 || zero->count() > 0 || bucketMb->count() > 0 ||
                                             prefetchMb->count() > 0)
               : *explain ? runCompile(explainOpts, explainDefines->count() > 0 || explainFloat->count() > 0 ||
                                                        explainPreset->count() > 0 || explainMesh->count() > 0 ||
                                                        explainZero->count() > 0)
               : *plan    ? lmc::runPlan(planOpts)
                          : runMemoryPlan(planPath);
  // What --emit and memory-plan printed must have reached stdout: a full disk
  // or a closed pipe is a failure, not exit 0 (and not LLVM's fatal error when
  // the stream is destroyed with its error unread).
  llvm::outs().flush();
  if (std::error_code ec = llvm::outs().error()) {
    llvm::outs().clear_error();
    if (status == 0)
      fail("cannot write to standard output: " + ec.message());
    return 1;
  }
  return lmc_tools::finishStdout("lmc") ? 1 : status;
}
