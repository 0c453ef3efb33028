//===- ComputePlanner.cpp - lmc plan --------------------------------------===//
#include "tools/lmc/ComputePlanner.h"

#include "base/file_io.h"
#include "frontend/Frontend.h"
#include "frontend/Parser.h"
#include "pipelines/CompileToPlan.h"
#include "tools/RegisterLMDialects.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

namespace lmc {

ComputeBudget chinchillaFromFlops(double flops) {
  double params = std::sqrt(flops / (kFlopsPerParamToken * kChinchillaTokensPerParam));
  return {flops, params, kChinchillaTokensPerParam * params};
}

ComputeBudget chinchillaFromParams(double params) {
  double tokens = kChinchillaTokensPerParam * params;
  return {kFlopsPerParamToken * params * tokens, params, tokens};
}

ComputeBudget chinchillaFromTokens(double tokens) { return chinchillaFromParams(tokens / kChinchillaTokensPerParam); }

double kaplanLoss(double params) { return std::pow(kKaplanNc / params, kKaplanAlphaN); }

bool parseScale(const std::string &flag, const std::string &text, double &value, std::string &error) {
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  // strtod also reads "inf", "nan" and hex floats: a budget is a finite positive decimal.
  bool decimal = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (!decimal || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value) || value <= 0) {
    error = flag + " '" + text + "' is not a positive number (e.g. 1e21 or 6e20)";
    return false;
  }
  return true;
}

namespace {

int fail(const llvm::Twine &message) {
  llvm::outs().flush();
  llvm::errs() << "lmc: error: " << message << "\n";
  return 1;
}

struct PresetCount {
  std::string file, preset;  // preset empty: the file's config (it has no presets)
  int64_t params = 0;
};

/// The parameters of a plan compiled from `path` with `preset`: every distinct
/// `lm.param` argument of the objectives the frontend emits (the train step's
/// parameters, which the plan's param_count sums; a tied weight is one
/// parameter). Only the frontend runs: no passes, no kernels.
bool countParameters(const std::string &path, const std::string &source, const std::string &preset,
                     int64_t &count) {
  mlir::DialectRegistry registry;
  mlir::lm::registerLMDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, path), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::lm::CompileToPlanOptions options;
  options.frontend.preset = preset;
  options.frontend.decodePrograms = false;
  options.compileTo = mlir::lm::CompileTo::Frontend;
  mlir::FailureOr<mlir::lm::CompiledPlan> compiled = mlir::lm::compileToPlan(sourceMgr, context, options);
  if (mlir::failed(compiled))
    return false;
  llvm::StringSet<> seen;
  count = 0;
  compiled->module->walk([&](mlir::func::FuncOp func) {
    if (!func->hasAttr("lm.objective"))
      return;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "lm.param");
      auto type = llvm::dyn_cast<mlir::RankedTensorType>(func.getArgument(i).getType());
      if (name && type && seen.insert(name.getValue()).second)
        count += type.getNumElements();
    }
  });
  return true;
}

/// Every preset of every .lm file directly in `dir`, in name order.
bool countZoo(const std::string &dir, std::vector<PresetCount> &out) {
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".lm")
      files.push_back(it->path());
  if (ec)
    return fail("cannot list --zoo '" + dir + "': " + ec.message()), false;
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    std::string source, error;
    if (!lmrt::readRegularFile(file, "source", mlir::lm::kMaxSourceBytes, source, error))
      return fail(error), false;
    std::string syntaxError;
    std::optional<mlir::lm::ast::Module> ast =
        mlir::lm::parseModule(source, [&](mlir::lm::ast::Loc, const std::string &m) { syntaxError = m; });
    if (!ast)
      return fail(file + ": " + syntaxError), false;
    std::vector<std::string> presets;
    for (const mlir::lm::ast::Preset &p : ast->presets)
      presets.push_back(p.name);
    if (presets.empty())
      presets.push_back("");
    for (const std::string &preset : presets) {
      PresetCount c{file, preset, 0};
      if (!countParameters(file, source, preset, c.params))
        return fail("cannot count the parameters of " + file + (preset.empty() ? "" : " --preset " + preset)),
               false;
      out.push_back(c);
    }
  }
  return true;
}

std::string sci(double v) { return llvm::formatv("{0:e2}", v).str(); }

/// "124M", "1.3B", "70B": the size as papers name models.
std::string humanCount(double n) {
  const char *units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (n >= 1000 && u < 4)
    n /= 1000, ++u;
  return llvm::formatv(n < 10 ? "{0:f2}{1}" : n < 100 ? "{0:f1}{1}" : "{0:f0}{1}", n, units[u]).str();
}

} // namespace

int runPlan(const PlanOptions &o) {
  int given = !o.flops.empty() + !o.params.empty() + !o.tokens.empty();
  if (given != 1)
    return fail("lmc plan takes exactly one of --flops, --params and --tokens");
  double value = 0;
  std::string error;
  const std::string &text = !o.flops.empty() ? o.flops : !o.params.empty() ? o.params : o.tokens;
  const char *flag = !o.flops.empty() ? "--flops" : !o.params.empty() ? "--params" : "--tokens";
  if (!parseScale(flag, text, value, error))
    return fail(error);
  ComputeBudget b = !o.flops.empty()    ? chinchillaFromFlops(value)
                    : !o.params.empty() ? chinchillaFromParams(value)
                                        : chinchillaFromTokens(value);
  if (!std::isfinite(b.flops) || b.params < 1)
    return fail(std::string(flag) + " '" + text + "' gives no model of at least one parameter");
  std::vector<PresetCount> zoo;
  if (!countZoo(o.zoo, zoo))
    return 1;

  auto &os = llvm::outs();
  os << "budget (" << flag << " " << text << "), Chinchilla compute-optimal (C = 6 N D, D = 20 N):\n";
  os << "  compute C   " << sci(b.flops) << " FLOP\n";
  os << "  params  N*  " << sci(b.params) << " (" << humanCount(b.params) << ")\n";
  os << "  tokens  D*  " << sci(b.tokens) << " (" << humanCount(b.tokens) << ")\n";
  os << llvm::formatv("Kaplan L(N*) = ({0:e1} / N*)^{1:f3} = {2:f4} nats/token (N counted as non-embedding parameters)\n",
                      kKaplanNc, kKaplanAlphaN, kaplanLoss(b.params));
  if (zoo.empty()) {
    os << "no zoo presets in '" << o.zoo << "' (--zoo DIR names the folder of the zoo's .lm files)\n";
    return 0;
  }
  // Nearest on a log scale: 2x too big is as far as 2x too small.
  auto distance = [&](const PresetCount &p) { return std::fabs(std::log(double(p.params) / b.params)); };
  const PresetCount &best = *std::min_element(zoo.begin(), zoo.end(), [&](const PresetCount &a, const PresetCount &c) {
    return distance(a) < distance(c);
  });
  double ratio = double(best.params) / b.params;
  os << "nearest zoo preset: " << best.file << (best.preset.empty() ? "" : " --preset " + best.preset) << ", "
     << best.params << " parameters (" << humanCount(double(best.params)) << ", "
     << llvm::formatv(ratio >= 1 ? "{0:f2}x N*" : "N*/{0:f2}", ratio >= 1 ? ratio : 1 / ratio) << ") of "
     << zoo.size() << " presets; compute-optimal for it: "
     << sci(chinchillaFromParams(double(best.params)).tokens) << " tokens\n";
  return 0;
}

std::string describeRunCompute(int64_t params, int64_t batch, int64_t seq, int64_t steps, int64_t flopsPerStep,
                               int64_t ranks) {
  double tokens = double(batch) * double(seq) * double(steps);
  double sixND = kFlopsPerParamToken * double(params) * tokens;
  std::string model = llvm::formatv("{0:e2}", double(flopsPerStep) * double(steps) * double(ranks)).str();
  if (ranks > 1)
    model += " over the " + std::to_string(ranks) + " ranks";
  return llvm::formatv("lmc: {0} steps of {1} x {2} tokens = {3:e2} tokens; 6 N D = {4:e2} FLOP "
                       "(the plan's FLOP model: {5}); Chinchilla-optimal for {6:e2} tokens\n",
                       steps, batch, seq, tokens, sixND, model, chinchillaFromParams(double(params)).tokens)
      .str();
}

} // namespace lmc
