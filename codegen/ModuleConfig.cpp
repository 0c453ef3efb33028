//===- ModuleConfig.cpp - lm.config, lm.train and lm.data in plan form ----===//

#include "codegen/ModuleConfig.h"
#include "codegen/PlanConvert.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::lm;
namespace plan = lmrt::plan;

namespace {
/// Typed reads from one of the module's configuration dictionaries; a value of
/// the wrong kind is an error at the module, an unknown key a warning (it would
/// be silently ignored by the runtime otherwise).
class DictReader {
public:
  DictReader(ModuleOp module, StringRef dictName) : module(module), dictName(dictName) {
    dict = module->getAttrOfType<DictionaryAttr>(dictName);
  }
  double getFloat(StringRef key, double fallback) {
    Attribute a = lookup(key);
    if (!a)
      return fallback;
    if (std::optional<double> v = numberValue(a))
      return *v;
    return bad(key, "a number"), fallback;
  }
  int64_t getInt(StringRef key, int64_t fallback) {
    Attribute a = lookup(key);
    if (!a)
      return fallback;
    if (auto i = dyn_cast<IntegerAttr>(a))
      return i.getValue().getSExtValue();
    return bad(key, "an integer"), fallback;
  }
  std::string getString(StringRef key, StringRef fallback) {
    Attribute a = lookup(key);
    if (!a)
      return fallback.str();
    if (auto s = dyn_cast<StringAttr>(a))
      return s.str();
    return bad(key, "a string"), fallback.str();
  }
  /// Reports `key` (read as `value`) unless `ok`: the runtime's plan validation
  /// (runtime/lmrt/validate.cpp) would reject it.
  void require(bool ok, StringRef key, double value, StringRef want) {
    if (ok)
      return;
    emitError(module.getLoc()) << "plan contract: " << dictName << "." << key << " = " << formatNumber(value) << " "
                               << want;
    hadError = true;
  }
  void requireOneOf(StringRef key, StringRef value, ArrayRef<StringRef> allowed) {
    if (llvm::is_contained(allowed, value))
      return;
    InFlightDiagnostic diag = emitError(module.getLoc());
    diag << "plan contract: " << dictName << "." << key << " = \"" << value << "\" is not supported (expected ";
    llvm::interleave(allowed, [&](StringRef a) { diag << "\"" << a << "\""; }, [&] { diag << " or "; });
    diag << ")";
    hadError = true;
  }
  /// Warns about every key not read so far; returns failure if any read failed.
  LogicalResult finish() {
    if (dict)
      for (NamedAttribute entry : dict)
        if (!used.contains(entry.getName().strref()))
          emitWarning(module.getLoc()) << "plan writer: ignoring unknown key '" << entry.getName().strref() << "' in "
                                       << dictName;
    return failure(hadError);
  }

private:
  Attribute lookup(StringRef key) {
    used.insert(key);
    return dict ? dict.get(key) : Attribute();
  }
  void bad(StringRef key, StringRef expected) {
    emitError(module.getLoc()) << "plan contract: " << dictName << "." << key << " must be " << expected << ", got "
                               << dict.get(key);
    hadError = true;
  }

  ModuleOp module;
  StringRef dictName;
  DictionaryAttr dict;
  llvm::StringSet<> used;
  bool hadError = false;
};
} // namespace

LogicalResult mlir::lm::readModuleConfig(ModuleOp module, plan::Plan &result) {
  if (auto config = module->getAttrOfType<DictionaryAttr>("lm.config")) {
    for (NamedAttribute entry : config) {
      std::optional<double> value = numberValue(entry.getValue());
      if (!value)
        return emitError(module.getLoc()) << "plan contract: lm.config." << entry.getName().strref()
                                          << " must be an i64 or f64, got " << entry.getValue();
      (*result.mutable_config())[entry.getName().str()] = *value;
    }
  }

  // Absent keys take AdamW's usual defaults; a module without lm.train (a
  // hand-written test module) trains with constant lr 1e-3 and no clipping.
  // Every value is held to the bounds the runtime's plan validation enforces,
  // so a plan lmc writes is one lmrt loads.
  DictReader train(module, "lm.train");
  plan::TrainConfig *tc = result.mutable_train();
  plan::Optimizer *opt = tc->mutable_optimizer();
  opt->set_kind(train.getString("optimizer", "adamw"));
  train.requireOneOf("optimizer", opt->kind(), {"adamw"});
  opt->set_lr(train.getFloat("lr", 1e-3));
  train.require(std::isfinite(opt->lr()) && opt->lr() >= 0, "lr", opt->lr(), "must be finite and >= 0");
  opt->set_beta1(train.getFloat("beta1", 0.9));
  train.require(opt->beta1() >= 0 && opt->beta1() < 1, "beta1", opt->beta1(), "must be in [0, 1)");
  opt->set_beta2(train.getFloat("beta2", 0.999));
  train.require(opt->beta2() >= 0 && opt->beta2() < 1, "beta2", opt->beta2(), "must be in [0, 1)");
  opt->set_eps(train.getFloat("eps", 1e-8));
  train.require(std::isfinite(opt->eps()) && opt->eps() > 0, "eps", opt->eps(), "must be finite and > 0");
  opt->set_weight_decay(train.getFloat("weight_decay", 0.0));
  train.require(std::isfinite(opt->weight_decay()) && opt->weight_decay() >= 0, "weight_decay",
                opt->weight_decay(), "must be finite and >= 0");
  plan::Schedule *schedule = tc->mutable_schedule();
  schedule->set_kind(train.getString("schedule", "constant"));
  train.requireOneOf("schedule", schedule->kind(), {"constant", "cosine"});
  schedule->set_warmup_steps(train.getInt("warmup", 0));
  train.require(schedule->warmup_steps() >= 0, "warmup", schedule->warmup_steps(), "must be >= 0");
  schedule->set_min_lr(train.getFloat("min_lr", 0.0));
  train.require(schedule->min_lr() >= 0 && schedule->min_lr() <= opt->lr(), "min_lr", schedule->min_lr(),
                "must be in [0, lr]");
  schedule->set_decay_steps(train.getInt("decay_steps", 0));
  train.require(schedule->decay_steps() >= 0, "decay_steps", schedule->decay_steps(), "must be >= 0");
  tc->set_clip_grad_norm(train.getFloat("clip_grad_norm", 0.0));
  train.require(std::isfinite(tc->clip_grad_norm()) && tc->clip_grad_norm() >= 0, "clip_grad_norm",
                tc->clip_grad_norm(), "must be finite and >= 0 (0: off)");
  if (failed(train.finish()))
    return failure();

  // No lm.data: the objective is not fed by a data pipeline (an op-level gradient
  // check); the plan then has no data config and `lmrt run` refuses it. When
  // lm.data is there it must be complete: a partial one is a plan lmrt rejects.
  if (!module->hasAttr("lm.data"))
    return success();
  DictReader data(module, "lm.data");
  plan::DataConfig *dc = result.mutable_data();
  dc->set_transform(data.getString("transform", "causal"));
  data.requireOneOf("transform", dc->transform(), {"causal"});
  dc->set_batch(data.getInt("batch", 0));
  data.require(dc->batch() > 0, "batch", dc->batch(), "must be given and > 0");
  dc->set_seq(data.getInt("seq", 0));
  data.require(dc->seq() > 0, "seq", dc->seq(), "must be given and > 0");
  dc->set_vocab(data.getInt("vocab", 0));
  data.require(dc->vocab() > 0, "vocab", dc->vocab(), "must be given and > 0");
  return data.finish();
}
