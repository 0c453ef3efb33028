//===- ModuleConfig.cpp - lm.config, lm.train and lm.data in plan form ----===//
//
// Reads the module's configuration dictionaries into the plan (with the
// defaults of absent keys) and holds the values to the plan contract's bounds
// (contract/contract.h), reporting a violation at the module.
//
//===----------------------------------------------------------------------===//

#include "codegen/ModuleConfig.h"
#include "codegen/PlanConvert.h"
#include "contract/contract.h"
#include "contract/train_settings.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <map>

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
  /// Whether the dictionary holds `key` (without reading it).
  bool has(StringRef key) const { return dict && dict.get(key); }
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
  /// The train block's parameter groups (frontend/ParamGroups.cpp), as written.
  void getParamGroups(StringRef key, plan::TrainConfig &tc) {
    Attribute a = lookup(key);
    if (!a)
      return;
    auto groups = dyn_cast<ArrayAttr>(a);
    if (!groups)
      return bad(key, "an array of dictionaries");
    for (Attribute entry : groups) {
      auto d = dyn_cast<DictionaryAttr>(entry);
      auto patterns = d ? d.getAs<ArrayAttr>("patterns") : ArrayAttr();
      if (!patterns)
        return bad(key, "an array of dictionaries with patterns");
      plan::ParamGroup *g = tc.add_param_groups();
      for (Attribute p : patterns)
        if (auto str = dyn_cast<StringAttr>(p))
          g->add_patterns(str.str());
      if (auto source = d.getAs<StringAttr>("source"))
        g->set_source(source.str());
      if (auto b = d.getAs<BoolAttr>("weight_decay"))
        g->set_weight_decay(b.getValue());
      if (auto b = d.getAs<BoolAttr>("frozen"))
        g->set_frozen(b.getValue());
      if (auto b = d.getAs<BoolAttr>("trust_ratio"))
        g->set_trust_ratio(b.getValue());
      if (auto f = d.getAs<FloatAttr>("lr_scale"))
        g->set_lr_scale(f.getValueAsDouble());
    }
  }
  /// A dictionary of numbers (a transform's parameters); empty when absent.
  std::map<std::string, double> getNumbers(StringRef key) {
    std::map<std::string, double> out;
    Attribute a = lookup(key);
    if (!a)
      return out;
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d)
      return bad(key, "a dictionary of numbers"), out;
    for (NamedAttribute entry : d) {
      std::optional<double> v = numberValue(entry.getValue());
      if (!v)
        return bad(key, "a dictionary of numbers"), out;
      out[entry.getName().str()] = *v;
    }
    return out;
  }
  std::string getString(StringRef key, StringRef fallback) {
    Attribute a = lookup(key);
    if (!a)
      return fallback.str();
    if (auto s = dyn_cast<StringAttr>(a))
      return s.str();
    return bad(key, "a string"), fallback.str();
  }
  /// Reports a value of this dictionary outside the plan contract's bounds
  /// (contract/contract.h): lmrt would reject the plan.
  void report(const lmrt::contract::Violation &bad) {
    // The plan's field names are the dictionary's keys, except where the
    // train settings' table says otherwise (warmup_steps is lm.train's warmup).
    StringRef key = bad.field;
    if (dictName == "lm.train")
      for (const lmrt::settings::Setting *s : lmrt::settings::allSettings())
        if (bad.field == s->field)
          key = s->attr;
    emitError(module.getLoc()) << "plan contract: " << dictName << "." << key << " = " << bad.value << " "
                               << bad.rule;
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

  // Absent keys take the train settings' defaults (contract/train_settings.h),
  // as an empty train block would, except that a hand-written module trains
  // without weight decay. The values are held to the plan contract, so a plan
  // lmc writes is one lmrt loads.
  namespace st = lmrt::settings;
  DictReader train(module, "lm.train");
  auto number = [&](const st::Setting &s) { return train.getFloat(s.attr, s.defaultValue); };
  auto integer = [&](const st::Setting &s) { return train.getInt(s.attr, (int64_t)s.defaultValue); };
  plan::TrainConfig *tc = result.mutable_train();
  plan::Optimizer *opt = tc->mutable_optimizer();
  opt->set_kind(train.getString("optimizer", st::kDefaultOptimizer));
  opt->set_lr(number(st::kLr));
  opt->set_beta1(number(st::kBeta1));
  opt->set_beta2(number(st::kBeta2));
  opt->set_eps(number(st::kEps));
  opt->set_weight_decay(train.getFloat(st::kWeightDecay.attr, st::kBareModuleWeightDecay));
  // The other optimizers: exactly the settings their kind takes (absent keys at
  // the kind's defaults), the rest 0, so AdamW's plans keep their bytes.
  if (const st::Kind *optimizer = st::findOptimizer(opt->kind()); optimizer && opt->kind() != st::kDefaultOptimizer) {
    opt->set_beta1(0);
    opt->set_beta2(0);
    opt->set_eps(0);
    for (const st::Setting *s : optimizer->takes) {
      double fallback = s == &st::kWeightDecay ? st::kBareModuleWeightDecay : st::defaultIn(*optimizer, *s);
      lmrt::contract::setTrainSetting(*tc, *s, s->isInt ? (double)train.getInt(s->attr, (int64_t)fallback)
                                                        : train.getFloat(s->attr, fallback));
    }
  }
  plan::Schedule *schedule = tc->mutable_schedule();
  schedule->set_kind(train.getString("schedule", st::kDefaultSchedule));
  schedule->set_warmup_steps(integer(st::kWarmup));
  schedule->set_min_lr(number(st::kMinLr));
  schedule->set_decay_steps(integer(st::kDecaySteps));
  // A schedule that does not take a cooldown has none in the plan (0).
  const st::Kind *kind = st::findSchedule(schedule->kind());
  schedule->set_cooldown_fraction(kind && st::takes(*kind, st::kCooldown) ? number(st::kCooldown)
                                                                           : train.getFloat(st::kCooldown.attr, 0.0));
  schedule->set_warmup_fraction(train.getFloat(st::kWarmupFraction.attr, 0.0));  // absent: 0, the plan's bytes kept
  tc->set_clip_grad_norm(number(st::kClipGradNorm));
  tc->set_clip_grad_value(number(st::kClipGradValue));
  train.getParamGroups("param_groups", *tc);
  // 0 in the plan means the default, 1 (plans from before accumulation);
  // writing nothing for it keeps those plans byte-identical.
  if (int64_t accumulate = integer(st::kAccumulate); accumulate != (int64_t)st::kAccumulate.defaultValue)
    tc->set_accumulate(accumulate);
  tc->set_epochs(train.getInt(st::kEpochs.attr, 0));  // absent: 0, the plan's bytes kept
  // LoRA adapters (lm.lora, added by -lm-lora): only where there are some.
  if (auto lora = module->getAttrOfType<DictionaryAttr>("lm.lora")) {
    plan::Lora *l = tc->mutable_lora();
    if (auto r = lora.getAs<IntegerAttr>("rank"))
      l->set_rank(r.getInt());
    if (auto a = lora.getAs<FloatAttr>("alpha"))
      l->set_alpha(a.getValueAsDouble());
    if (auto targets = lora.getAs<ArrayAttr>("targets"))
      for (Attribute t : targets)
        if (auto s = dyn_cast<StringAttr>(t))
          l->add_targets(s.str());
  }
  // The mesh (lm.mesh, from the frontend): only where there is one, so plans for
  // one process keep their bytes.
  if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh")) {
    auto axis = [&](StringRef name) {
      auto v = dyn_cast_or_null<IntegerAttr>(mesh.get(name));
      return v ? v.getInt() : int64_t(0);
    };
    plan::Mesh *m = tc->mutable_mesh();
    m->set_data(axis("data"));
    m->set_tensor(axis("tensor"));
    m->set_global_batch(axis("global_batch"));
    m->set_zero(axis("zero"));
    if (auto sp = dyn_cast_or_null<BoolAttr>(mesh.get("sequence_parallel")))
      m->set_sequence_parallel(sp.getValue());
    if (m->data() < 1 || m->tensor() < 1)
      return emitError(module.getLoc()) << "plan contract: lm.mesh needs data >= 1 and tensor >= 1, got " << mesh;
    if (m->zero() < 0 || m->zero() > 3 || (m->zero() > 0 && m->data() < 2))
      return emitError(module.getLoc()) << "plan contract: lm.mesh zero must be 0, or 1, 2 or 3 with data >= 2, got "
                                        << mesh;
  }
  // The policy -lm-remat compiled the train step with; the default writes
  // nothing, so plans without it keep their bytes.
  if (std::string remat = train.getString("remat", st::kDefaultRemat); remat != st::kDefaultRemat) {
    if (!st::isRematPolicy(remat))
      return emitError(module.getLoc()) << "plan contract: lm.train.remat must be none, full, selective or auto, got '"
                                        << remat << "'";
    result.set_remat(remat);
  }
  // The precision -lm-mixed-precision compiled with; fp32 writes nothing.
  if (std::string precision = train.getString("precision", st::kDefaultPrecision);
      precision != st::kDefaultPrecision) {
    if (!st::isPrecision(precision))
      return emitError(module.getLoc()) << "plan contract: lm.train.precision must be fp32, bf16 or fp16, got '"
                                        << precision << "'";
    result.set_precision(precision);
  }
  // fp16's loss scaling: the scaler's settings, every one written (defaults
  // filled in); other precisions take none.
  const bool fp16 = result.precision() == "fp16";
  for (const st::Setting *s : {&st::kLossScale, &st::kLossScaleWindow, &st::kHysteresis, &st::kMinLossScale})
    if (!fp16 && train.has(s->attr))
      return emitError(module.getLoc()) << "plan contract: lm.train." << s->attr
                                        << " is a setting of fp16's loss scaling; this plan's precision is "
                                        << (result.precision().empty() ? "fp32" : result.precision());
  if (fp16) {
    plan::LossScale *ls = tc->mutable_loss_scale();
    ls->set_initial_scale(number(st::kLossScale));
    ls->set_growth_interval(integer(st::kLossScaleWindow));
    ls->set_hysteresis(integer(st::kHysteresis));
    ls->set_min_scale(number(st::kMinLossScale));
  }
  // The memory budget is lmc's to check (pipelines/MemoryBudget.h); the plan
  // records the peak it predicts, not the bound.
  (void)train.getInt(st::kMemoryBudgetKeyword, 0);
  if (failed(train.finish()))
    return failure();
  if (std::optional<lmrt::contract::Violation> bad = lmrt::contract::checkTrainConfig(*tc))
    return train.report(*bad), failure();

  // No lm.data: the objective is not fed by a data pipeline (an op-level gradient
  // check); the plan then has no data config and `lmrt run` refuses it. When
  // lm.data is there it must be complete: a partial one is a plan lmrt rejects.
  if (!module->hasAttr("lm.data"))
    return success();
  DictReader data(module, "lm.data");
  plan::DataConfig *dc = result.mutable_data();
  dc->set_transform(data.getString("transform", "causal"));
  dc->set_batch(data.getInt("batch", 0));
  dc->set_seq(data.getInt("seq", 0));
  dc->set_vocab(data.getInt("vocab", 0));
  for (const auto &[name, value] : data.getNumbers("params"))
    (*dc->mutable_params())[name] = value;
  if (failed(data.finish()))
    return failure();
  if (std::optional<lmrt::contract::Violation> bad = lmrt::contract::checkDataConfig(*dc))
    return data.report(*bad), failure();
  return success();
}

LogicalResult mlir::lm::readModuleExports(ModuleOp module, plan::Plan &result) {
  auto exports = module->getAttrOfType<ArrayAttr>("lm.exports");
  if (!exports)
    return success();
  auto bad = [&](const Twine &what) {
    return emitError(module.getLoc()) << "plan contract: lm.exports: " << what;
  };
  // Plan order: the exporter then writes tensors in a stable, meaningful order.
  std::map<std::string, int> order;
  for (int i = 0; i < result.params_size(); ++i)
    order[result.params(i).name()] = i;
  for (Attribute a : exports) {
    auto dict = dyn_cast<DictionaryAttr>(a);
    auto format = dict ? dict.getAs<StringAttr>("format") : StringAttr();
    auto arch = dict ? dict.getAs<StringAttr>("architecture") : StringAttr();
    auto config = dict ? dict.getAs<DictionaryAttr>("config") : DictionaryAttr();
    auto entries = dict ? dict.getAs<ArrayAttr>("entries") : ArrayAttr();
    if (!format || !arch || !config || !entries)
      return bad("each entry needs format, architecture, config and entries");
    plan::WeightExport *w = result.add_weight_exports();
    w->set_format(format.str());
    w->set_architecture(arch.str());
    if (auto loc = dict.getAs<StringAttr>("loc"))
      w->set_source_loc(loc.str());
    for (NamedAttribute c : config) {
      plan::Attr &v = (*w->mutable_config())[c.getName().str()];
      Attribute x = c.getValue();
      if (auto b = dyn_cast<BoolAttr>(x))
        v.set_b(b.getValue());
      else if (auto i = dyn_cast<IntegerAttr>(x))
        v.set_i(i.getValue().getSExtValue());
      else if (auto f = dyn_cast<FloatAttr>(x))
        v.set_f(f.getValueAsDouble());
      else if (auto s = dyn_cast<StringAttr>(x))
        v.set_s(s.str());
      else
        return bad("config '" + c.getName().strref() + "' is not a number, bool or string");
    }
    std::vector<std::pair<int, plan::WeightMapEntry>> sorted;
    for (Attribute ea : entries) {
      auto e = dyn_cast<DictionaryAttr>(ea);
      auto param = e ? e.getAs<StringAttr>("param") : StringAttr();
      auto names = e ? e.getAs<ArrayAttr>("names") : ArrayAttr();
      if (!param || !names)
        return bad("each entry needs param and names");
      auto it = order.find(param.str());
      if (it == order.end())
        return bad("'" + param.strref() + "' is not a parameter of the train step");
      plan::WeightMapEntry entry;
      entry.set_param(param.str());
      for (Attribute n : names)
        if (auto s = dyn_cast<StringAttr>(n))
          entry.add_names(s.str());
        else
          return bad("names of '" + param.strref() + "' must be strings");
      if (auto tied = e.getAs<ArrayAttr>("tied")) {
        for (Attribute n : tied)
          if (auto s = dyn_cast<StringAttr>(n))
            entry.add_tied(s.str());
          else
            return bad("tied names of '" + param.strref() + "' must be strings");
      }
      if (auto t = e.getAs<BoolAttr>("transpose"))
        entry.set_transpose(t.getValue());
      sorted.emplace_back(it->second, std::move(entry));
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    for (auto &[i, entry] : sorted)
      *w->add_entries() = std::move(entry);
    // Omitted parameters (absent before `omit` existed), in plan order too.
    std::vector<std::pair<int, std::string>> omitted;
    if (auto list = dict.getAs<ArrayAttr>("omitted"))
      for (Attribute o : list) {
        auto s = dyn_cast<StringAttr>(o);
        if (!s)
          return bad("omitted parameters must be strings");
        auto it = order.find(s.str());
        if (it == order.end())
          return bad("omitted '" + s.strref() + "' is not a parameter of the train step");
        omitted.emplace_back(it->second, s.str());
      }
    std::sort(omitted.begin(), omitted.end());
    for (auto &[i, name] : omitted)
      w->add_omitted(name);
  }
  return success();
}
