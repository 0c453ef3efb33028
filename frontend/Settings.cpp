//===- Settings.cpp - config, -D overrides, train and data attributes -----===//
//
// The module attributes of docs/dialect.md: lm.config (the resolved config
// constants), lm.train (optimizer, schedule, clipping) and lm.data (how the
// runtime batches token windows for the objective).
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "contract/train_settings.h"
#include "contract/transform_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <set>

namespace mlir::lm {

namespace {

/// Parses a -D value: an integer, else a float; nullopt for anything else.
std::optional<LMValue> parseDefine(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  long long i = std::strtoll(text.c_str(), &end, 10);
  if (errno == 0 && *end == '\0')
    return LMValue::ofInt(i);
  errno = 0;
  double f = std::strtod(text.c_str(), &end);
  if (errno == 0 && *end == '\0')
    return LMValue::ofFloat(f);
  return std::nullopt;
}

} // namespace

LogicalResult MLIRGen::evalConfig() {
  ast::Loc configLoc = ast.configLoc.value_or(ast::Loc{1, 1});
  // The preset's values replace the config's expressions; -D then overrides both.
  const ast::Preset *preset = nullptr;
  for (const ast::Preset &p : ast.presets) {
    if (p.name == options.preset)
      preset = &p;
    for (const ast::Setting &s : p.settings) {
      bool known = false;
      for (const ast::Setting &c : ast.config)
        known |= c.name == s.name;
      if (!known)
        return error(s.loc) << "preset '" << p.name << "' sets '" << s.name
                            << "', which is not a config constant";
    }
  }
  // The train options in effect: the preset's `train { }` replaces the train
  // section's options of the same name and adds the others.
  trainSettings.clear();
  for (const ast::Setting &s : ast.train)
    trainSettings.push_back(&s);
  if (preset) {
    std::set<std::string> seen;
    for (const ast::Setting &p : preset->train) {
      if (!seen.insert(p.name).second)
        return error(p.loc) << "train option '" << p.name << "' is set twice in preset '" << preset->name << "'";
      bool replaced = false;
      for (const ast::Setting *&s : trainSettings)
        if (s->name == p.name && !replaced)
          s = &p, replaced = true;
      if (!replaced)
        trainSettings.push_back(&p);
    }
  }
  if (!options.preset.empty() && !preset) {
    std::string names;
    for (const ast::Preset &p : ast.presets)
      names += (names.empty() ? "" : ", ") + p.name;
    return error(configLoc) << "--preset " << options.preset << ": no preset named '" << options.preset
                            << "'" << (names.empty() ? std::string(" (the file has no presets)")
                                                     : " (the file defines " + names + ")");
  }
  std::map<std::string, std::string> defines;
  for (const auto &[name, value] : options.defines) {
    bool known = false;
    for (const ast::Setting &s : ast.config)
      known |= s.name == name;
    if (!known) {
      std::string names;
      for (const ast::Setting &s : ast.config)
        names += (names.empty() ? "" : ", ") + s.name;
      return error(configLoc) << "-D " << name << "=" << value << ": no config constant named '"
                              << name << "'"
                              << (names.empty() ? std::string(" (the file has no config)")
                                                : " (the config defines " + names + ")");
    }
    defines[name] = value; // the last -D of a name wins
  }

  Env env;
  for (const ast::Setting &s : ast.config) {
    bool dup = false;
    lookupConfig(s.name, dup);
    if (dup)
      return error(s.loc) << "config constant '" << s.name << "' is defined twice";
    const ast::Expr *valueExpr = s.value.get();
    if (preset)
      for (const ast::Setting &p : preset->settings)
        if (p.name == s.name)
          valueExpr = p.value.get(); // the last setting of a name wins
    FailureOr<LMValue> v = eval(*valueExpr, env);
    if (failed(v))
      return failure();
    if (!v->isNumber())
      return error(valueExpr->loc) << "config constant '" << s.name
                                   << "' must be a number, got " << describe(*v);
    auto def = defines.find(s.name);
    if (def != defines.end()) {
      std::string shown = "-D " + s.name + "=" + def->second;
      std::optional<LMValue> o = parseDefine(def->second);
      if (!o)
        return error(s.loc) << shown << ": '" << def->second << "' is not a number";
      if (!std::isfinite(o->asDouble()))
        return error(s.loc) << shown << ": '" << def->second << "' is not a finite number";
      if (v->kind == LMValue::Kind::Int && o->kind != LMValue::Kind::Int)
        return error(s.loc) << shown << ": config constant '" << s.name
                            << "' is an integer, and '" << def->second << "' is not";
      if (v->kind == LMValue::Kind::Float)
        o = LMValue::ofFloat(o->asDouble());
      v = *o;
    }
    config.emplace_back(s.name, *v);
  }
  return success();
}

DictionaryAttr MLIRGen::configAttr() {
  SmallVector<NamedAttribute> attrs;
  for (const auto &[name, v] : config)
    attrs.push_back(builder.getNamedAttr(
        name, v.kind == LMValue::Kind::Int ? Attribute(builder.getI64IntegerAttr(v.intValue))
                                           : Attribute(builder.getF64FloatAttr(v.floatValue))));
  return builder.getDictionaryAttr(attrs);
}

FailureOr<std::optional<DictionaryAttr>> MLIRGen::meshAttr(DictionaryAttr train) {
  // `mesh = { data = D, tensor = T }`, then lmc's --mesh over it (field by field).
  int64_t axes[2] = {1, 1};
  const char *names[2] = {"data", "tensor"};
  // `zero = N` (the ZeRO stage), then lmc's --zero over it.
  int64_t zero = 0;
  // `sequence_parallel = true` (or lmc's --mesh ...,sp): with the tensor axis.
  bool sequenceParallel = false;
  // `bucket_mb = N` (the gradient buckets of -lm-data-parallel), then lmc's --bucket-mb;
  // -1: not given (the pass's default).
  double bucketMb = -1;
  Location bucketLoc = FileLineColLoc::get(&ctx, files[0], 1, 1);
  // `prefetch_mb = N` (ZeRO stage 3's gathers issued ahead, -lm-zero-shard-params), then
  // lmc's --prefetch-mb; -1: not given (the pass's default).
  double prefetchMb = -1;
  Location prefetchLoc = bucketLoc;
  Location zeroLoc = FileLineColLoc::get(&ctx, files[0], 1, 1), meshLoc = zeroLoc, spLoc = zeroLoc;
  for (const ast::Setting *sp : trainSettings) {
    const ast::Setting &s = *sp;
    if (s.name == "zero") {
      Env env;
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      if (v->kind != LMValue::Kind::Int)
        return error(s.value->loc) << "zero must be a ZeRO stage 0, 1, 2 or 3, got '" << ast::toString(*s.value) << "'";
      zero = v->intValue;
      zeroLoc = loc(s.value->loc);
      continue;
    }
    if (s.name == "bucket_mb") {
      Env env;
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      if (v->kind != LMValue::Kind::Int && v->kind != LMValue::Kind::Float)
        return error(s.value->loc) << "bucket_mb must be a number of MiB (0: one all-reduce per gradient), got '"
                                   << ast::toString(*s.value) << "'";
      bucketMb = v->kind == LMValue::Kind::Int ? double(v->intValue) : v->floatValue;
      if (!(bucketMb >= 0))
        return error(s.value->loc) << "bucket_mb = " << ast::toString(*s.value) << ": the gradient bucket size must "
                                   << "be 0 (one all-reduce per gradient) to " << (int64_t(1) << 20) << " MiB";
      bucketLoc = loc(s.value->loc);
      continue;
    }
    if (s.name == "prefetch_mb") {
      Env env;
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      if (v->kind != LMValue::Kind::Int && v->kind != LMValue::Kind::Float)
        return error(s.value->loc) << "prefetch_mb must be a number of MiB (0: each ZeRO-3 gather right before its "
                                   << "op), got '" << ast::toString(*s.value) << "'";
      prefetchMb = v->kind == LMValue::Kind::Int ? double(v->intValue) : v->floatValue;
      if (!(prefetchMb >= 0))
        return error(s.value->loc) << "prefetch_mb = " << ast::toString(*s.value) << ": the prefetch size must be 0 "
                                   << "(no prefetch) to " << (int64_t(1) << 20) << " MiB";
      prefetchLoc = loc(s.value->loc);
      continue;
    }
    if (s.name != "mesh")
      continue;
    const ast::Expr &e = *s.value;
    meshLoc = loc(e.loc);
    if (e.kind != ast::Expr::Kind::Call || e.name != "mesh" || !e.args.empty())
      return error(e.loc) << "mesh must be written { data = D, tensor = T }, got '" << ast::toString(e) << "'";
    Env env;
    std::set<std::string> seen;
    for (const ast::KeywordArg &kw : e.kwargs) {
      int axis = kw.name == "data" ? 0 : kw.name == "tensor" ? 1 : -1;
      if (axis < 0 && kw.name != "sequence_parallel")
        return error(kw.loc) << "mesh has no axis '" << kw.name << "' (expected data, tensor or sequence_parallel)";
      if (!seen.insert(kw.name).second)
        return error(kw.loc) << "mesh axis '" << kw.name << "' is given twice";
      FailureOr<LMValue> v = eval(*kw.value, env);
      if (failed(v))
        return failure();
      if (axis < 0) {
        if (v->kind != LMValue::Kind::Bool)
          return error(kw.value->loc) << "mesh sequence_parallel must be true or false, got "
                                      << ast::toString(*kw.value);
        sequenceParallel = v->boolValue;
        spLoc = loc(kw.loc);
        continue;
      }
      if (v->kind != LMValue::Kind::Int || v->intValue < 1 || v->intValue > (1 << 20))
        return error(kw.value->loc) << "mesh axis '" << kw.name << "' must be a whole number of ranks in [1, "
                                    << (1 << 20) << "], got " << ast::toString(*kw.value);
      axes[axis] = v->intValue;
    }
  }
  for (int axis = 0; axis < 2; ++axis) {
    int64_t given = axis == 0 ? options.meshData : options.meshTensor;
    if (given > 0)
      axes[axis] = given;
  }
  if (options.zero >= 0)
    zero = options.zero;
  if (options.sequenceParallel >= 0)
    sequenceParallel = options.sequenceParallel;
  if (options.bucketMb >= 0)
    bucketMb = options.bucketMb;
  if (bucketMb > double(int64_t(1) << 20))
    return emitError(bucketLoc) << "bucket_mb = " << bucketMb << ": the gradient bucket size must be 0 (one all-reduce "
                                << "per gradient) to " << (int64_t(1) << 20) << " MiB";
  if (options.prefetchMb >= 0)
    prefetchMb = options.prefetchMb;
  if (prefetchMb > double(int64_t(1) << 20))
    return emitError(prefetchLoc) << "prefetch_mb = " << prefetchMb << ": the prefetch size must be 0 (no prefetch) "
                                  << "to " << (int64_t(1) << 20) << " MiB";
  if (sequenceParallel && axes[1] == 1)
    return emitError(spLoc) << "sequence_parallel splits the sequence over the tensor-parallel ranks, and this mesh "
                            << "has none: set mesh = { tensor = T } with T > 1 (or lmc compile --mesh tensor=T,sp); "
                            << "docs/distributed.md";
  if (zero < 0 || zero > 3)
    return emitError(zeroLoc) << "zero = " << zero << ": the ZeRO stage must be 0 (plain data parallelism), 1, 2 or 3";
  if (zero > 0) {
    // ZeRO shards what data parallelism replicates; one rank has nothing to shard.
    if (axes[0] == 1)
      return emitError(zeroLoc) << "zero = " << zero << " shards the training state over the data-parallel ranks, "
                                << "and this mesh has none: set mesh = { data = D } with D > 1 (or lmc compile "
                                << "--mesh data=D); docs/distributed.md";
    // A shard of a parameter is updated alone: the optimizer must treat every element
    // on its own (LAMB's trust ratio and Adafactor's factored moments see whole tensors).
    auto optimizer = train ? dyn_cast_or_null<StringAttr>(train.get("optimizer")) : StringAttr();
    StringRef kind = optimizer ? optimizer.getValue() : StringRef(lmrt::settings::kDefaultOptimizer);
    if (kind != "adamw" && kind != "sgd" && kind != "lion")
      return emitError(zeroLoc) << "zero = " << zero << " needs an elementwise optimizer (adamw, sgd or lion): each "
                                << "rank updates a slice of every parameter, and " << kind
                                << " reads whole tensors (norms or factored moments)";
  }
  if (axes[1] > 1) {
    // lmrt keeps a slice of every split parameter and of its optimizer state, and updates
    // it alone (docs/distributed.md, "Tensor parallelism"): the same conditions as ZeRO's.
    // ZeRO splits each rank's slices over the data axis: stage 1 their optimizer state
    // (lmrt alone); stages 2 and 3 their gradients and parameters too (-lm-zero-shard-params).
    auto optimizer = train ? dyn_cast_or_null<StringAttr>(train.get("optimizer")) : StringAttr();
    StringRef kind = optimizer ? optimizer.getValue() : StringRef(lmrt::settings::kDefaultOptimizer);
    if (kind != "adamw" && kind != "sgd" && kind != "lion")
      return emitError(meshLoc) << "mesh tensor = " << axes[1] << " needs an elementwise optimizer (adamw, sgd or "
                                << "lion): each rank updates its slice of the split parameters, and " << kind
                                << " reads whole tensors (norms or factored moments)";
  }
  if (axes[0] == 1 && axes[1] == 1)
    return std::optional<DictionaryAttr>(); // one process: no mesh, the plan keeps its bytes
  SmallVector<NamedAttribute> attrs;
  for (int axis = 0; axis < 2; ++axis)
    attrs.push_back(builder.getNamedAttr(names[axis], builder.getI64IntegerAttr(axes[axis])));
  if (zero > 0) // written only when set, so data-parallel plans keep their bytes
    attrs.push_back(builder.getNamedAttr("zero", builder.getI64IntegerAttr(zero)));
  if (bucketMb >= 0) // read by -lm-data-parallel; its default (25 MiB) is not written
    attrs.push_back(builder.getNamedAttr("bucket_mb", builder.getF64FloatAttr(bucketMb)));
  if (prefetchMb >= 0) // read by -lm-zero-shard-params; its default (0, none) is not written
    attrs.push_back(builder.getNamedAttr("prefetch_mb", builder.getF64FloatAttr(prefetchMb)));
  if (sequenceParallel) // read by -lm-spmd
    attrs.push_back(builder.getNamedAttr("sequence_parallel", builder.getBoolAttr(true)));
  return std::optional<DictionaryAttr>(builder.getDictionaryAttr(attrs));
}

FailureOr<DictionaryAttr> MLIRGen::trainAttr() {
  namespace st = lmrt::settings;
  // Whatever the train section leaves out takes the table's default
  // (contract/train_settings.h: PyTorch's AdamW, a constant schedule, no
  // clipping); its bounds are the plan contract's.
  const st::Kind *optimizer = st::findOptimizer(st::kDefaultOptimizer);
  const st::Kind *schedule = st::findSchedule(st::kDefaultSchedule);
  std::string remat = st::kDefaultRemat;
  std::string precision = st::kDefaultPrecision;
  int64_t memoryBudget = 0; // none
  // A whole-number setting keeps its int64 exactly (a double would round past 2^53).
  struct Value {
    double real;
    int64_t whole;
  };
  std::map<const st::Setting *, Value> values;
  for (const st::Setting *s : st::allSettings())
    values[s] = {s->defaultValue, (int64_t)s->defaultValue};
  std::optional<ast::Loc> minLrLoc; // min_lr <= lr waits until lr is known
  std::optional<ast::Loc> lrLoc;    // Adafactor's relative step takes no lr
  std::optional<ast::Loc> fractionLoc;  // warmup or warmup_fraction, not both

  Env env;
  std::set<std::string> seen;
  // Evaluates a value of setting `s` and holds it to its bounds; `shown` names
  // it in messages.
  auto setNumber = [&](const st::Setting &s, const ast::Expr &e, const std::string &shown) -> LogicalResult {
    Value v;
    if (s.isInt && !s.isBool) {
      FailureOr<int64_t> i = evalInt(e, env, shown);
      if (failed(i))
        return failure();
      v = {double(*i), *i};
    } else if (s.isBool) {
      FailureOr<LMValue> b = eval(e, env);
      if (failed(b))
        return failure();
      if (b->kind != LMValue::Kind::Bool)
        return error(e.loc) << shown << " must be true or false, got " << describe(*b);
      v = {b->boolValue ? 1.0 : 0.0, b->boolValue ? 1 : 0};
    } else {
      FailureOr<double> d = evalNumber(e, env, shown);
      if (failed(d))
        return failure();
      v = {*d, 0};
    }
    if (!st::within(s, v.real))
      return error(e.loc) << shown << (s.meaning ? " is " + std::string(s.meaning) + ": it " : " ")
                          << st::rule(s) << ", got " << st::format(s, v.real);
    values[&s] = v;
    return success();
  };
  // One keyword argument of an optimizer or a schedule: a setting, or a tuple
  // of the settings that share the keyword (betas = (beta1, beta2)).
  auto setArgument = [&](const st::Kind &kind, const ast::KeywordArg &kw) -> LogicalResult {
    std::vector<const st::Setting *> named;
    for (const st::Setting *s : kind.takes)
      if (kw.name == s->keyword)
        named.push_back(s);
    if (named.empty())
      return error(kw.loc) << kind.name << " has no argument '" << kw.name << "' (expected "
                           << st::keywordList(kind) << ")";
    if (named[0] == &st::kMinLr)
      minLrLoc = kw.value->loc;
    if (named[0] == &st::kLr)
      lrLoc = kw.value->loc;
    if (named[0] == &st::kWarmupFraction)
      fractionLoc = kw.value->loc;
    if (named.size() == 1)
      return setNumber(*named[0], *kw.value, kw.name);
    FailureOr<LMValue> tuple = eval(*kw.value, env);
    if (failed(tuple))
      return failure();
    std::string names;
    for (const st::Setting *s : named)
      names += (names.empty() ? "" : ", ") + std::string(s->attr);
    bool numbers = tuple->kind == LMValue::Kind::List && tuple->items.size() == named.size();
    for (size_t i = 0; numbers && i < named.size(); ++i)
      numbers = named[i]->isInt ? tuple->items[i].asInt().has_value() : tuple->items[i].isNumber();
    if (!numbers)
      return error(kw.value->loc) << kw.name << " must be " << (named.size() == 2 ? "a pair" : "a tuple")
                                  << " (" << names << ")";
    for (size_t i = 0; i < named.size(); ++i) {
      const LMValue &item = tuple->items[i];
      Value v = {item.asDouble(), named[i]->isInt ? *item.asInt() : 0};
      if (!st::within(*named[i], v.real))
        return error(kw.value->loc) << kw.name << ": " << named[i]->attr << " " << st::rule(*named[i])
                                    << ", got " << st::format(*named[i], v.real);
      values[named[i]] = v;
    }
    return success();
  };
  // `name(k = v, ...)` or a bare `name`, one of `kinds`.
  auto choose = [&](const ast::Setting &s, const std::vector<st::Kind> &kinds,
                    const st::Kind *&chosen) -> LogicalResult {
    const ast::Expr &e = *s.value;
    if (e.kind != ast::Expr::Kind::Name && e.kind != ast::Expr::Kind::Call)
      return error(e.loc) << s.name << " must name a " << s.name << ", e.g. " << kinds[0].name << "(...)";
    chosen = st::findKind(kinds, e.name);
    if (!chosen)
      return error(e.loc) << "unknown " << s.name << " '" << e.name << "' (expected "
                          << st::kindList(kinds, false) << ")";
    if (!e.args.empty())
      return error(e.args[0]->loc) << e.name << " takes keyword arguments (name = value)";
    // The kind's own defaults (LAMB's eps), before its arguments replace them.
    for (const st::Setting *t : chosen->takes)
      values[t] = {st::defaultIn(*chosen, *t), (int64_t)st::defaultIn(*chosen, *t)};
    for (const ast::KeywordArg &kw : e.kwargs)
      if (failed(setArgument(*chosen, kw)))
        return failure();
    return success();
  };

  for (const ast::Setting *sp : trainSettings) {
    const ast::Setting &s = *sp;
    if (!seen.insert(s.name).second)
      return error(s.loc) << "train option '" << s.name << "' is set twice";
    if (s.name == "optimizer") {
      if (failed(choose(s, st::optimizers(), optimizer)))
        return failure();
      continue;
    }
    if (s.name == "schedule") {
      if (failed(choose(s, st::schedules(), schedule)))
        return failure();
      continue;
    }
    if (s.name == "remat") {
      const ast::Expr &e = *s.value;
      if (e.kind != ast::Expr::Kind::Name || !st::isRematPolicy(e.name))
        return error(e.loc) << "remat must be none, full, selective or auto, got '" << ast::toString(e) << "'";
      remat = e.name;
      continue;
    }
    if (s.name == "precision") {
      const ast::Expr &e = *s.value;
      if (e.kind != ast::Expr::Kind::Name || !st::isPrecision(e.name))
        return error(e.loc) << "precision must be fp32, bf16 or fp16, got '" << ast::toString(e) << "'";
      precision = e.name;
      continue;
    }
    if (s.name == st::kMemoryBudgetKeyword) {
      const ast::Expr &e = *s.value;
      std::string why;
      if (e.kind != ast::Expr::Kind::String)
        return error(e.loc) << st::kMemoryBudgetKeyword << " must be a quoted size such as \"8 GiB\" (units "
                            << st::kMemoryBudgetUnits << "), got '" << ast::toString(e) << "'";
      int64_t bytes = 0;
      if (!st::parseByteSize(e.name, bytes, why))
        return error(e.loc) << st::kMemoryBudgetKeyword << " " << why;
      memoryBudget = bytes;
      continue;
    }
    if (s.name == "data")
      continue; // the batch transform: dataAttr reads it with the objective's inputs
    if (s.name == "mesh" || s.name == "zero" || s.name == "bucket_mb" || s.name == "prefetch_mb")
      continue; // the device mesh, the ZeRO stage, the gradient buckets, the prefetch: meshAttr reads them
    if (s.name == "no_decay" || s.name == "groups")
      continue; // parameter groups: paramGroupsAttr reads them once the parameters exist
    if (s.name == "lora")
      continue; // LoRA adapters: loraAttr reads them once the parameters exist
    const st::Setting *setting = nullptr;
    std::string known = "optimizer, schedule, remat, precision, memory_budget";
    for (const st::Setting *b : st::blockSettings()) {
      known += ", " + std::string(b->keyword);
      if (s.name == b->keyword)
        setting = b;
    }
    if (!setting)
      return error(s.loc) << "unknown train option '" << s.name << "' (expected " << known
                          << ", no_decay, groups, lora, data, mesh or zero)";
    if (failed(setNumber(*setting, *s.value, s.name)))
      return failure();
  }
  // HF's Adafactor refuses the same: its relative step replaces the rate.
  if (optimizer == st::findOptimizer("adafactor") && values[&st::kRelativeStep].whole && lrLoc)
    return error(*lrLoc) << "adafactor: lr cannot be combined with relative_step = true (the step size is "
                         << "then min(1e-2, 1/sqrt(t))); set relative_step = false to use lr and the schedule";
  if (double scale = values[&st::kLossScale].real, floor = values[&st::kMinLossScale].real;
      !st::within(st::kMinLossScale, floor, scale))
    return error(ast.trainLoc.value_or(ast::Loc{1, 1}))
           << "min_loss_scale " << st::rule(st::kMinLossScale, scale) << ", got " << st::format(st::kMinLossScale, floor);
  // A file may offer both as config knobs (warmup = warmup, warmup_fraction = f); one must be 0.
  if (values[&st::kWarmup].whole > 0 && values[&st::kWarmupFraction].real > 0)
    return error(fractionLoc.value_or(ast.trainLoc.value_or(ast::Loc{1, 1})))
           << "warmup_fraction " << st::format(st::kWarmupFraction, values[&st::kWarmupFraction].real)
           << " cannot be combined with warmup " << values[&st::kWarmup].whole
           << " (a step count): set one of them to 0";
  double lr = values[&st::kLr].real, minLr = values[&st::kMinLr].real;
  if (!st::within(st::kMinLr, minLr, lr))
    return error(minLrLoc.value_or(ast.trainLoc.value_or(ast::Loc{1, 1})))
           << "min_lr " << st::rule(st::kMinLr, lr) << ", got " << st::format(st::kMinLr, minLr);

  auto put = [&](SmallVector<NamedAttribute> &attrs, const st::Setting &s) {
    Attribute v = s.isInt ? Attribute(builder.getI64IntegerAttr(values[&s].whole))
                          : Attribute(builder.getF64FloatAttr(values[&s].real));
    attrs.push_back(builder.getNamedAttr(s.attr, v));
  };
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("optimizer", builder.getStringAttr(optimizer->name)),
      builder.getNamedAttr("schedule", builder.getStringAttr(schedule->name)),
  };
  for (const st::Setting *s : optimizer->takes)
    put(attrs, *s);
  for (const st::Setting *s : {&st::kWarmup, &st::kMinLr, &st::kDecaySteps, &st::kClipGradNorm})
    put(attrs, *s);
  // The settings added later only where they mean something, so the plans of
  // files without them keep their bytes.
  if (st::takes(*schedule, st::kCooldown))
    put(attrs, st::kCooldown);
  if (values[&st::kWarmupFraction].real != st::kWarmupFraction.defaultValue)
    put(attrs, st::kWarmupFraction);
  if (values[&st::kClipGradValue].real != st::kClipGradValue.defaultValue)
    put(attrs, st::kClipGradValue);
  if (values[&st::kAccumulate].whole != (int64_t)st::kAccumulate.defaultValue)
    put(attrs, st::kAccumulate);
  if (values[&st::kEpochs].whole != (int64_t)st::kEpochs.defaultValue)
    put(attrs, st::kEpochs);
  // fp16's loss scaling: those set (the plan writer fills in the rest, and
  // refuses them for another precision: lmc --precision may still change it).
  for (const st::Setting *s : {&st::kLossScale, &st::kLossScaleWindow, &st::kHysteresis, &st::kMinLossScale})
    if (s->isInt ? values[s].whole != (int64_t)s->defaultValue : values[s].real != s->defaultValue)
      put(attrs, *s);
  if (remat != st::kDefaultRemat)
    attrs.push_back(builder.getNamedAttr("remat", builder.getStringAttr(remat)));
  if (precision != st::kDefaultPrecision)
    attrs.push_back(builder.getNamedAttr("precision", builder.getStringAttr(precision)));
  if (memoryBudget > 0)
    attrs.push_back(builder.getNamedAttr(st::kMemoryBudgetKeyword, builder.getI64IntegerAttr(memoryBudget)));
  return builder.getDictionaryAttr(attrs);
}

FailureOr<std::optional<DictionaryAttr>> MLIRGen::dataAttr(const ast::Function &objective,
                                                          func::FuncOp op) {
  const ast::Setting *setting = nullptr;
  for (const ast::Setting *s : trainSettings)
    if (s->name == "data")
      setting = s;
  if (!setting)
    return causalDataAttr(objective, op);
  const ast::Expr &e = *setting->value;
  namespace data = lmrt::data;
  const data::TransformSpec *spec =
      e.kind == ast::Expr::Kind::Name || e.kind == ast::Expr::Kind::Call ? data::findTransform(e.name)
                                                                          : nullptr;
  if (!spec)
    return error(e.loc) << "data must name a batch transform (" << data::transformNames()
                        << "), e.g. data = mlm(mask_prob = 0.15)";
  if (!e.args.empty())
    return error(e.args[0]->loc) << e.name << " takes keyword arguments (name = value)";
  if (spec->outputs.empty()) { // causal
    if (!e.kwargs.empty())
      return error(e.kwargs[0].loc) << "causal takes no arguments";
    std::optional<DictionaryAttr> d = causalDataAttr(objective, op);
    if (!d)
      return error(objective.nameLoc)
             << "data = causal needs an objective with one input i32[batch, seq + 1] (token windows)";
    return d;
  }

  // The transform's parameters: keywords checked against its table.
  Env env;
  std::map<std::string, double> params;
  for (const ast::KeywordArg &kw : e.kwargs) {
    const data::TransformParam *p = nullptr;
    std::string known;
    for (const data::TransformParam &q : spec->params) {
      known += (known.empty() ? "" : ", ") + std::string(q.name);
      if (kw.name == q.name)
        p = &q;
    }
    if (!p)
      return error(kw.loc) << e.name << " has no argument '" << kw.name << "' (expected " << known
                           << ")";
    FailureOr<LMValue> v = eval(*kw.value, env);
    if (failed(v))
      return failure();
    double x;
    if (p->choices) {
      int index = v->kind == LMValue::Kind::String ? data::choiceIndex(*p, v->str) : -1;
      if (index < 0)
        return error(kw.value->loc) << kw.name << " must be one of " << data::choiceList(*p);
      x = index;
    } else if (p->isBool && v->kind == LMValue::Kind::Bool)
      x = v->boolValue ? 1.0 : 0.0;
    else if (!p->isBool && v->isNumber())
      x = v->asDouble();
    else
      return error(kw.value->loc) << kw.name << " must be " << (p->isBool ? "true or false" : "a number");
    if (!(x >= p->lo && x <= p->hi)) {
      char range[96];
      std::snprintf(range, sizeof range, "[%g, %g], got %g", p->lo, p->hi, x);
      return error(kw.value->loc) << kw.name << " must be in " << range;
    }
    if (p->isInt && x != std::floor(x))
      return error(kw.value->loc) << kw.name << " must be a whole number";
    if (!params.emplace(kw.name, x).second)
      return error(kw.loc) << kw.name << " is given twice";
  }
  for (const data::TransformParam &p : spec->params)
    params.emplace(p.name, p.defaultValue);
  bool nsp = params.count("nsp") && params["nsp"] != 0, sop = params.count("sop") && params["sop"] != 0;
  bool pack = params.count("pack") && params["pack"] != 0;
  if (nsp && sop)
    return error(e.loc) << e.name << ": nsp = true and sop = true cannot be combined (a row is one "
                        << "kind of sentence pair)";
  bool pairs = nsp || sop || e.name == "span";  // span: [CLS] question [SEP] context [SEP]
  // Token spans are at most max_span tokens, all of which need a row of the
  // position table that span_pos indexes.
  if (params.count("unit") && params["unit"] == 1 && params["max_span"] > params["max_span_tokens"])
    return error(e.loc) << e.name << ": with unit = \"token\", max_span (" << (int64_t)params["max_span"]
                        << ") must be <= max_span_tokens (" << (int64_t)params["max_span_tokens"]
                        << ", the rows of span_pos)";

  bool hasVocab = false;
  LMValue vocabValue = lookupConfig("vocab", hasVocab);
  if (!hasVocab || vocabValue.kind != LMValue::Kind::Int)
    return error(e.loc) << e.name << " needs an integer config constant 'vocab' (the bound on ids)";
  int64_t vocab = vocabValue.intValue;
  // span_corruption's own bound (a sentinel a noise span) is checked below;
  // seq2seq's rows are bytes and T5's pad and EOS (ids 0 and 1), no specials.
  if (e.name == "seq2seq" && vocab < data::kFirstSpecial)
    return error(e.loc) << e.name << " needs vocab >= " << data::kFirstSpecial << " (the 256 bytes), the config has "
                        << vocab;
  if (e.name != "span_corruption" && e.name != "seq2seq" && vocab < data::kMinMlmVocab)
    return error(e.loc) << e.name << " needs vocab >= " << data::kMinMlmVocab
                        << " (the 256 bytes, then [PAD] [CLS] [SEP] [MASK]), the config has " << vocab;

  // Every input of the objective is one of the transform's outputs, by name;
  // [batch, seq] comes from the inputs' shapes, which must agree.
  int64_t batch = -1, seq = -1;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < op.getNumArguments(); ++i)
    argAttrs.push_back(op.getArgAttrDict(i) ? op.getArgAttrDict(i) : builder.getDictionaryAttr({}));
  if (objective.params.empty())
    return error(objective.nameLoc) << "objective '" << objective.name << "' reads no input of "
                                    << e.name << " (it produces " << data::outputNames(*spec, nsp, sop, pack)
                                    << ")";
  for (size_t i = 0; i < objective.params.size(); ++i) {
    const ast::Parameter &p = objective.params[i];
    const data::TransformOutput *o = data::findOutput(*spec, p.name);
    if (!o || !data::produces(*o, nsp, sop, pack))
      return error(p.loc) << "input '" << p.name << "' is not produced by data transform " << e.name
                          << (o ? data::notProducedBecause(*o, nsp, sop, pack) : "")
                          << " (it produces " << data::outputNames(*spec, nsp, sop, pack) << ")";
    auto type = cast<RankedTensorType>(op.getArgument(i).getType());
    bool dtypeOk = o->isFloat ? isa<FloatType>(type.getElementType())
                              : type.getElementType().isInteger(32);
    int64_t rank = o->perRow ? 1 : 2;
    if (!dtypeOk || type.getRank() != rank)
      return error(p.loc) << "input '" << p.name << "' of " << e.name << " is "
                          << (o->isFloat ? "f32" : "i32")
                          << (o->perRow ? "[batch]" : o->targetSeq ? "[batch, target_seq]" : "[batch, seq]")
                          << " (" << o->what << ")";
    // The decoder's [batch, target_seq] inputs are checked once seq is known.
    int64_t b = type.getDimSize(0), t = o->perRow || o->targetSeq ? seq : type.getDimSize(1);
    if ((batch >= 0 && b != batch) || (seq >= 0 && t >= 0 && t != seq))
      return error(p.loc) << "input '" << p.name << "' has shape [" << b
                          << (o->perRow ? "" : ", " + std::to_string(type.getDimSize(1)))
                          << "], which disagrees with the batch and sequence of the inputs before it ("
                          << batch << ", " << seq << ")";
    batch = b;
    if (!o->perRow && !o->targetSeq)
      seq = t;
  }
  if (seq < 0)
    return error(objective.nameLoc) << "objective '" << objective.name
                                    << "' reads no [batch, seq] input of " << e.name
                                    << ", so the sequence length is unknown";
  if (e.name == "span_corruption") {
    // HF's compute_input_and_target_lengths fixes the raw and target lengths.
    data::SpanCorruptionLengths l =
        data::spanCorruptionLengths(seq, params["noise_density"], params["mean_noise_span_length"]);
    if (l.raw < 0)
      return error(objective.nameLoc) << "seq " << seq << " has no raw length whose span-corrupted inputs "
                                      << "are exactly " << seq << " ids; try " << seq + 1;
    int64_t spans = data::spanNoise(l.raw, params["noise_density"], params["mean_noise_span_length"]).spans;
    if (vocab < data::kFirstSpecial + spans)
      return error(e.loc) << e.name << " needs vocab >= " << data::kFirstSpecial + spans << " (the 256 bytes, "
                          << "then a sentinel for each of the " << spans << " noise spans of a row), the config has "
                          << vocab;
    for (size_t i = 0; i < objective.params.size(); ++i) {
      const data::TransformOutput *o = data::findOutput(*spec, objective.params[i].name);
      auto type = cast<RankedTensorType>(op.getArgument(i).getType());
      if (o->targetSeq && type.getDimSize(1) != l.targets)
        return error(objective.params[i].loc)
               << "input '" << o->name << "' has shape [" << type.getDimSize(0) << ", " << type.getDimSize(1)
               << "], but span_corruption's targets for seq " << seq << " are " << l.targets << " long (from "
               << l.raw << " raw tokens: compute_input_and_target_lengths); declare it [batch, " << l.targets
               << "]";
    }
  } else if (e.name == "seq2seq") {
    // The decoder's inputs fix target_seq (or must agree with it when given).
    int64_t given = (int64_t)params["target_seq"], target = -1;
    for (size_t i = 0; i < objective.params.size(); ++i) {
      const data::TransformOutput *o = data::findOutput(*spec, objective.params[i].name);
      int64_t len = cast<RankedTensorType>(op.getArgument(i).getType()).getDimSize(1);
      if (!o->targetSeq) continue;
      if ((target >= 0 && len != target) || (given > 0 && len != given))
        return error(objective.params[i].loc)
               << "input '" << o->name << "' has shape [" << batch << ", " << len << "], but the decoder's rows are "
               << (given > 0 ? given : target) << " long" << (given > 0 ? " (target_seq)" : " (the input before it)");
      target = len;
    }
    if (target < 0 && given == 0)
      return error(e.loc) << "seq2seq: the objective reads no decoder input (decoder_ids, labels), so give "
                          << "target_seq = N, the decoder rows' length";
    if (target >= 0) params["target_seq"] = (double)target;
    if (seq < 2 || params["target_seq"] < 2)
      return error(objective.nameLoc) << "seq2seq rows need room for a token and EOS: seq " << seq
                                      << " and target_seq " << (int64_t)params["target_seq"] << " must be >= 2";
  } else if (seq < (pairs ? 5 : 3))
    return error(objective.nameLoc) << "seq " << seq << " is too short for " << e.name
                                    << " (at least [CLS] a [SEP]" << (pairs ? " b [SEP]" : "") << ")";
  // Each input gets its own bound: the vocabulary, 2, batch * seq (row
  // indices), a parameter's value, or none (a mask).
  for (size_t i = 0; i < objective.params.size(); ++i) {
    const data::TransformOutput *o = data::findOutput(*spec, objective.params[i].name);
    NamedAttrList attrs(argAttrs[i]);
    attrs.erase("lm.vocab");
    if (int64_t bound = data::outputBound(*o, vocab, batch, seq, [&](const char *n) { return params[n]; }))
      attrs.set("lm.vocab", builder.getI64IntegerAttr(bound));
    if (o->ignoreIndex)
      attrs.set("lm.ignore_index", builder.getI64IntegerAttr(data::kIgnoreIndex));
    argAttrs[i] = attrs.getDictionary(builder.getContext());
  }
  op.setAllArgAttrs(argAttrs); // one array, not one per argument (quadratic in the parameters)

  SmallVector<NamedAttribute> paramAttrs;
  for (const auto &[name, value] : params) {
    // pack = false and doc_stride = 0 are the defaults, left out so that the
    // plans without them keep the bytes they had before these existed.
    if ((name == "pack" || name == "doc_stride") && value == 0) continue;
    paramAttrs.push_back(builder.getNamedAttr(name, builder.getF64FloatAttr(value)));
  }
  return std::optional<DictionaryAttr>(builder.getDictionaryAttr({
      builder.getNamedAttr("transform", builder.getStringAttr(e.name)),
      builder.getNamedAttr("batch", builder.getI64IntegerAttr(batch)),
      builder.getNamedAttr("seq", builder.getI64IntegerAttr(seq)),
      builder.getNamedAttr("vocab", builder.getI64IntegerAttr(vocab)),
      builder.getNamedAttr("params", builder.getDictionaryAttr(paramAttrs)),
  }));
}

/// An objective reading one i32[batch, seq + 1] input consumes windows of
/// seq + 1 tokens: the runtime's "causal" transform.
std::optional<DictionaryAttr> MLIRGen::causalDataAttr(const ast::Function &objective, func::FuncOp op) {
  if (objective.params.size() != 1 || op.getNumArguments() < 1)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op.getArgument(0).getType());
  if (!type || type.getRank() != 2 || !type.getElementType().isInteger(32) ||
      type.getDimSize(1) < 2)
    return std::nullopt;
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("transform", builder.getStringAttr("causal")),
      builder.getNamedAttr("batch", builder.getI64IntegerAttr(type.getDimSize(0))),
      builder.getNamedAttr("seq", builder.getI64IntegerAttr(type.getDimSize(1) - 1))};
  bool hasVocab = false;
  LMValue vocab = lookupConfig("vocab", hasVocab);
  if (hasVocab && vocab.kind == LMValue::Kind::Int)
    attrs.push_back(builder.getNamedAttr("vocab", builder.getI64IntegerAttr(vocab.intValue)));
  return builder.getDictionaryAttr(attrs);
}

} // namespace mlir::lm
