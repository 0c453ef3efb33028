//===- Settings.cpp - config, -D overrides, train and data attributes -----===//
//
// The module attributes of docs/dialect.md: lm.config (the resolved config
// constants), lm.train (optimizer, schedule, clipping) and lm.data (how the
// runtime batches token windows for the objective).
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "contract/transform_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
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

FailureOr<DictionaryAttr> MLIRGen::trainAttr() {
  // PyTorch's AdamW defaults, a constant schedule and no clipping, for
  // whatever the train section leaves out.
  std::string optimizer = "adamw", schedule = "constant";
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  double minLr = 0.0, clip = 0.0, cooldown = 0.2;
  int64_t warmup = 0, decaySteps = 0, accumulate = 1;

  Env env;
  std::set<std::string> seen;
  // `name(k = v, ...)` or a bare `name`: checks the name against `known` and
  // hands each keyword to `onKeyword`.
  auto call = [&](const ast::Setting &s, const std::vector<std::string> &known,
                  const std::string &what, std::string &chosen,
                  const std::function<LogicalResult(const ast::KeywordArg &)> &onKeyword)
      -> LogicalResult {
    const ast::Expr &e = *s.value;
    if (e.kind != ast::Expr::Kind::Name && e.kind != ast::Expr::Kind::Call)
      return error(e.loc) << s.name << " must name a " << what << ", e.g. " << known[0] << "(...)";
    if (std::find(known.begin(), known.end(), e.name) == known.end()) {
      std::string list;
      for (const std::string &k : known)
        list += (list.empty() ? "" : " or ") + k;
      return error(e.loc) << "unknown " << what << " '" << e.name << "' (expected " << list
                          << ")";
    }
    chosen = e.name;
    if (!e.args.empty())
      return error(e.args[0]->loc) << e.name << " takes keyword arguments (name = value)";
    for (const ast::KeywordArg &kw : e.kwargs)
      if (failed(onKeyword(kw)))
        return failure();
    return success();
  };
  auto number = [&](const ast::KeywordArg &kw, double &out, double lo,
                    bool loExclusive) -> LogicalResult {
    FailureOr<double> v = evalNumber(*kw.value, env, kw.name);
    if (failed(v))
      return failure();
    if (*v < lo || (loExclusive && *v == lo))
      return error(kw.value->loc) << kw.name << " must be " << (loExclusive ? "> " : ">= ") << lo
                                  << ", got " << *v;
    out = *v;
    return success();
  };
  auto integer = [&](const ast::KeywordArg &kw, int64_t &out) -> LogicalResult {
    FailureOr<int64_t> v = evalInt(*kw.value, env, kw.name);
    if (failed(v))
      return failure();
    if (*v < 0)
      return error(kw.value->loc) << kw.name << " must be >= 0, got " << *v;
    out = *v;
    return success();
  };

  for (const ast::Setting &s : ast.train) {
    if (!seen.insert(s.name).second)
      return error(s.loc) << "train option '" << s.name << "' is set twice";
    if (s.name == "optimizer") {
      if (failed(call(s, {"adamw"}, "optimizer", optimizer, [&](const ast::KeywordArg &kw) {
            if (kw.name == "lr")
              return number(kw, lr, 0.0, true);
            if (kw.name == "eps")
              return number(kw, eps, 0.0, true);
            if (kw.name == "weight_decay")
              return number(kw, weightDecay, 0.0, false);
            if (kw.name == "betas") {
              FailureOr<LMValue> b = eval(*kw.value, env);
              if (failed(b))
                return failure();
              if (b->kind != LMValue::Kind::List || b->items.size() != 2 ||
                  !b->items[0].isNumber() || !b->items[1].isNumber())
                return LogicalResult(error(kw.value->loc) << "betas must be a pair (beta1, beta2)");
              beta1 = b->items[0].asDouble();
              beta2 = b->items[1].asDouble();
              if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
                return LogicalResult(error(kw.value->loc) << "betas must lie in [0, 1)");
              return success();
            }
            return LogicalResult(error(kw.loc) << "adamw has no argument '" << kw.name
                                         << "' (expected lr, betas, eps, weight_decay)");
          })))
        return failure();
    } else if (s.name == "schedule") {
      // constant(warmup); linear and cosine(warmup, min_lr, decay_steps);
      // wsd(warmup, min_lr, decay_steps, cooldown) - cooldown a fraction in (0, 1].
      if (failed(call(s, {"cosine", "constant", "linear", "wsd"}, "schedule", schedule,
                      [&](const ast::KeywordArg &kw) {
                        const std::string &kind = s.value->name;
                        bool decays = kind != "constant";
                        if (kw.name == "warmup")
                          return integer(kw, warmup);
                        if (decays && kw.name == "min_lr")
                          return number(kw, minLr, 0.0, false);
                        if (decays && kw.name == "decay_steps")
                          return integer(kw, decaySteps);
                        if (kind == "wsd" && kw.name == "cooldown") {
                          if (failed(number(kw, cooldown, 0.0, true)))
                            return failure();
                          if (cooldown > 1)
                            return LogicalResult(error(kw.value->loc)
                                                 << "cooldown is the fraction of the steps after warmup "
                                                    "spent decaying: it must be in (0, 1], got "
                                                 << cooldown);
                          return success();
                        }
                        return LogicalResult(error(kw.loc)
                                       << kind << " has no argument '" << kw.name << "' (expected "
                                       << (kind == "constant" ? "warmup"
                                           : kind == "wsd"    ? "warmup, min_lr, decay_steps, cooldown"
                                                              : "warmup, min_lr, decay_steps")
                                       << ")");
                      })))
        return failure();
    } else if (s.name == "clip_grad_norm") {
      FailureOr<double> v = evalNumber(*s.value, env, "clip_grad_norm");
      if (failed(v))
        return failure();
      if (*v < 0)
        return error(s.value->loc) << "clip_grad_norm must be >= 0 (0 turns it off), got " << *v;
      clip = *v;
    } else if (s.name == "accumulate") {
      // Gradient accumulation: micro-batches summed (mean) per optimizer step.
      FailureOr<int64_t> v = evalInt(*s.value, env, "accumulate");
      if (failed(v))
        return failure();
      if (*v < 1 || *v > (1 << 20))
        return error(s.value->loc) << "accumulate must be in [1, 1048576], got " << *v;
      accumulate = *v;
    } else if (s.name == "data") {
      continue;  // the batch transform: dataAttr reads it with the objective's inputs
    } else {
      return error(s.loc) << "unknown train option '" << s.name
                          << "' (expected optimizer, schedule, clip_grad_norm, accumulate or data)";
    }
  }
  if (schedule != "constant" && minLr > lr)
    return error(ast.trainLoc.value_or(ast::Loc{1, 1}))
           << schedule << " schedule: min_lr (" << minLr << ") is above lr (" << lr << ")";

  auto f = [&](double v) { return builder.getF64FloatAttr(v); };
  auto i = [&](int64_t v) { return builder.getI64IntegerAttr(v); };
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("optimizer", builder.getStringAttr(optimizer)),
      builder.getNamedAttr("lr", f(lr)),
      builder.getNamedAttr("beta1", f(beta1)),
      builder.getNamedAttr("beta2", f(beta2)),
      builder.getNamedAttr("eps", f(eps)),
      builder.getNamedAttr("weight_decay", f(weightDecay)),
      builder.getNamedAttr("schedule", builder.getStringAttr(schedule)),
      builder.getNamedAttr("warmup", i(warmup)),
      builder.getNamedAttr("min_lr", f(minLr)),
      builder.getNamedAttr("decay_steps", i(decaySteps)),
      builder.getNamedAttr("clip_grad_norm", f(clip)),
  };
  // Only where they mean something, so plans without them keep their bytes.
  if (schedule == "wsd")
    attrs.push_back(builder.getNamedAttr("cooldown_fraction", f(cooldown)));
  if (accumulate != 1)
    attrs.push_back(builder.getNamedAttr("accumulate", i(accumulate)));
  return builder.getDictionaryAttr(attrs);
}

FailureOr<std::optional<DictionaryAttr>> MLIRGen::dataAttr(const ast::Function &objective,
                                                          func::FuncOp op) {
  const ast::Setting *setting = nullptr;
  for (const ast::Setting &s : ast.train)
    if (s.name == "data")
      setting = &s;
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
  if (nsp && sop)
    return error(e.loc) << e.name << ": nsp = true and sop = true cannot be combined (a row is one "
                        << "kind of sentence pair)";
  bool pairs = nsp || sop;
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
  if (vocab < data::kMinMlmVocab)
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
                                    << e.name << " (it produces " << data::outputNames(*spec, nsp, sop)
                                    << ")";
  for (size_t i = 0; i < objective.params.size(); ++i) {
    const ast::Parameter &p = objective.params[i];
    const data::TransformOutput *o = data::findOutput(*spec, p.name);
    if (!o || !data::produces(*o, nsp, sop))
      return error(p.loc) << "input '" << p.name << "' is not produced by data transform " << e.name
                          << (o ? (o->needsSop ? " without sop = true" : " without nsp = true") : "")
                          << " (it produces " << data::outputNames(*spec, nsp, sop) << ")";
    auto type = cast<RankedTensorType>(op.getArgument(i).getType());
    bool dtypeOk = o->isFloat ? isa<FloatType>(type.getElementType())
                              : type.getElementType().isInteger(32);
    int64_t rank = o->perRow ? 1 : 2;
    if (!dtypeOk || type.getRank() != rank)
      return error(p.loc) << "input '" << p.name << "' of " << e.name << " is "
                          << (o->isFloat ? "f32" : "i32") << (o->perRow ? "[batch]" : "[batch, seq]")
                          << " (" << o->what << ")";
    int64_t b = type.getDimSize(0), t = o->perRow ? seq : type.getDimSize(1);
    if ((batch >= 0 && b != batch) || (seq >= 0 && t >= 0 && t != seq))
      return error(p.loc) << "input '" << p.name << "' has shape [" << b
                          << (o->perRow ? "" : ", " + std::to_string(type.getDimSize(1)))
                          << "], which disagrees with the batch and sequence of the inputs before it ("
                          << batch << ", " << seq << ")";
    batch = b;
    if (!o->perRow)
      seq = t;
  }
  if (seq < 0)
    return error(objective.nameLoc) << "objective '" << objective.name
                                    << "' reads no [batch, seq] input of " << e.name
                                    << ", so the sequence length is unknown";
  if (seq < (pairs ? 5 : 3))
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
  for (unsigned i = 0; i < op.getNumArguments(); ++i)
    op.setArgAttrs(i, argAttrs[i]);

  SmallVector<NamedAttribute> paramAttrs;
  for (const auto &[name, value] : params)
    paramAttrs.push_back(builder.getNamedAttr(name, builder.getF64FloatAttr(value)));
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
