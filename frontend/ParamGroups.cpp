//===- ParamGroups.cpp - the train block's optimizer parameter groups ------===//
//
// `no_decay = ["*.bias", "*ln*"]` and `groups = [group("head.*", lr_scale = 0.1),
// group("emb.*", frozen = true)]` (docs/language.md, "Parameter groups") say,
// by parameter name, which parameters take weight decay, at what multiple of
// the learning rate they train, which are frozen and which LAMB leaves out of
// its trust ratio. They are resolved here, once every function exists, into
// argument attributes that the rest of the pipeline already reads or carries
// to the plan: lm.frozen (autodiff computes no gradient), lm.weight_decay,
// lm.lr_scale, lm.trust_ratio (PlanWriter -> Param). Without groups nothing is
// written, so the rank rule (rank >= 2 decays) and every plan's bytes stay.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <set>

namespace mlir::lm {

/// `*` matches any run of characters (dots included), `?` any one; the rest
/// matches itself. The whole name must match.
bool globMatch(const std::string &pattern, const std::string &name) {
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

namespace {

/// One group as written: its patterns (with where each was written) and what it sets.
struct Group {
  std::vector<std::pair<std::string, ast::Loc>> patterns;
  ast::Loc loc;
  std::optional<bool> weightDecay, frozen, trustRatio;
  std::optional<double> lrScale;
};

/// What a setting of one group says, for conflict messages: "weight_decay = false".
std::string said(const char *key, double v, bool isBool) {
  if (isBool)
    return std::string(key) + " = " + (v != 0 ? "true" : "false");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s = %g", key, v);
  return buf;
}

} // namespace

FailureOr<ArrayAttr> MLIRGen::paramGroupsAttr(bool &decayAll) {
  decayAll = false;
  std::vector<Group> groups;
  Env env;
  // A list of quoted patterns: no_decay's value, or a group's positional arguments.
  auto patternsOf = [&](const std::vector<ast::ExprPtr> &items, Group &g, const char *what) -> LogicalResult {
    for (const ast::ExprPtr &item : items) {
      if (item->kind != ast::Expr::Kind::String || item->name.empty())
        return error(item->loc) << what << " takes quoted name patterns such as \"*.bias\", got '"
                                << ast::toString(*item) << "'";
      g.patterns.emplace_back(item->name, item->loc);
    }
    return success();
  };
  for (const ast::Setting *sp : trainSettings) {
    const ast::Setting &s = *sp;
    const ast::Expr &e = *s.value;
    if (s.name == "no_decay") {
      // HF's rule: every parameter decays except those named here.
      if (e.kind != ast::Expr::Kind::List || e.args.empty())
        return error(e.loc) << "no_decay must be a list of quoted name patterns, e.g. no_decay = [\"*.bias\", "
                               "\"*ln*\"]";
      Group g;
      g.loc = e.loc;
      if (failed(patternsOf(e.args, g, "no_decay")))
        return failure();
      g.weightDecay = false;
      groups.push_back(std::move(g));
      decayAll = true;
    } else if (s.name == "groups") {
      if (e.kind != ast::Expr::Kind::List || e.args.empty())
        return error(e.loc) << "groups must be a list of group(\"pattern\", ..., weight_decay =, lr_scale =, "
                               "frozen =, trust_ratio =)";
      for (const ast::ExprPtr &item : e.args) {
        if (item->kind != ast::Expr::Kind::Call || item->name != "group")
          return error(item->loc) << "groups holds group(\"pattern\", ...) entries, got '" << ast::toString(*item)
                                  << "'";
        Group g;
        g.loc = item->loc;
        if (item->args.empty())
          return error(item->loc) << "group needs at least one quoted name pattern";
        if (failed(patternsOf(item->args, g, "group")))
          return failure();
        for (const ast::KeywordArg &kw : item->kwargs) {
          FailureOr<LMValue> v = eval(*kw.value, env);
          if (failed(v))
            return failure();
          std::optional<bool> *flag = kw.name == "weight_decay" ? &g.weightDecay
                                      : kw.name == "frozen"     ? &g.frozen
                                      : kw.name == "trust_ratio" ? &g.trustRatio
                                                                 : nullptr;
          if (flag) {
            if (v->kind != LMValue::Kind::Bool)
              return error(kw.value->loc) << kw.name << " must be true or false, got " << describe(*v);
            *flag = v->boolValue;
          } else if (kw.name == "lr_scale") {
            if (!v->isNumber() || !std::isfinite(v->asDouble()) || v->asDouble() < 0)
              return error(kw.value->loc) << "lr_scale must be a finite number >= 0, got " << describe(*v);
            g.lrScale = v->asDouble();
          } else {
            return error(kw.loc) << "group has no argument '" << kw.name
                                 << "' (expected weight_decay, lr_scale, frozen or trust_ratio)";
          }
        }
        if (!g.weightDecay && !g.frozen && !g.trustRatio && !g.lrScale)
          return error(item->loc) << "group sets nothing (give weight_decay, lr_scale, frozen or trust_ratio)";
        if (g.frozen && *g.frozen == false)
          return error(item->loc) << "frozen = false is what every parameter is already; freeze with frozen = true";
        groups.push_back(std::move(g));
      }
    }
  }
  if (groups.empty())
    return ArrayAttr();

  // The parameters, by name, with every function argument that carries each.
  std::map<std::string, std::vector<std::pair<func::FuncOp, unsigned>>> params;
  for (func::FuncOp f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param"))
        params[name.str()].emplace_back(f, i);

  // Each setting of each parameter, with the group that set it (the first).
  struct Set {
    double value;
    const Group *group;
    size_t pattern;
  };
  std::map<std::string, std::map<std::string, Set>> chosen;
  for (const Group &g : groups)
    for (size_t k = 0; k < g.patterns.size(); ++k) {
      const auto &[pattern, where] = g.patterns[k];
      bool any = false;
      for (const auto &[name, uses] : params) {
        if (!globMatch(pattern, name))
          continue;
        any = true;
        std::pair<const char *, std::optional<double>> sets[] = {
            {"weight_decay", g.weightDecay ? std::optional<double>(*g.weightDecay) : std::nullopt},
            {"frozen", g.frozen ? std::optional<double>(*g.frozen) : std::nullopt},
            {"trust_ratio", g.trustRatio ? std::optional<double>(*g.trustRatio) : std::nullopt},
            {"lr_scale", g.lrScale}};
        for (const auto &[key, value] : sets) {
          if (!value)
            continue;
          auto [it, fresh] = chosen[name].try_emplace(key, Set{*value, &g, k});
          if (!fresh && it->second.value != *value) {
            const Set &first = it->second;
            bool isBool = std::string(key) != "lr_scale";
            return error(where) << "parameter '" << name << "' is in two groups that disagree: pattern \""
                                << pattern << "\" sets " << said(key, *value, isBool) << ", pattern \""
                                << first.group->patterns[first.pattern].first << "\" (at "
                                << ast::at(first.group->patterns[first.pattern].second) << ") sets "
                                << said(key, first.value, isBool);
          }
        }
      }
      if (!any) {
        std::string names;
        size_t shown = 0;
        for (const auto &entry : params)
          if (shown++ < 6)
            names += (names.empty() ? "" : ", ") + entry.first;
        return error(where) << "pattern \"" << pattern << "\" matches no parameter (the parameters are "
                            << names << (params.size() > 6 ? ", ..." : "")
                            << "; `*` matches any characters, dots included)";
      }
    }

  // The result on every argument of each parameter; the rank rule where no group
  // says (the plan writer's), unless no_decay asked for HF's all-but rule.
  for (auto &[name, uses] : params) {
    std::map<std::string, Set> &c = chosen[name];
    for (auto &[f, i] : uses) {
      auto type = cast<RankedTensorType>(f.getArgument(i).getType());
      bool decay = c.count("weight_decay") ? c.at("weight_decay").value != 0 : decayAll || type.getRank() >= 2;
      f.setArgAttr(i, "lm.weight_decay", builder.getBoolAttr(decay));
      if (c.count("frozen"))
        f.setArgAttr(i, "lm.frozen", builder.getUnitAttr());
      if (c.count("lr_scale"))
        f.setArgAttr(i, "lm.lr_scale", builder.getF64FloatAttr(c.at("lr_scale").value));
      if (c.count("trust_ratio"))
        f.setArgAttr(i, "lm.trust_ratio", builder.getBoolAttr(c.at("trust_ratio").value != 0));
    }
  }

  // The groups as written, for the plan (lmrt inspect shows them).
  SmallVector<Attribute> out;
  for (const Group &g : groups) {
    SmallVector<Attribute> patterns;
    for (const auto &p : g.patterns)
      patterns.push_back(builder.getStringAttr(p.first));
    SmallVector<NamedAttribute> attrs = {
        builder.getNamedAttr("patterns", builder.getArrayAttr(patterns)),
        builder.getNamedAttr("source", builder.getStringAttr(files[g.loc.file] + ":" + std::to_string(g.loc.line)))};
    if (g.weightDecay)
      attrs.push_back(builder.getNamedAttr("weight_decay", builder.getBoolAttr(*g.weightDecay)));
    if (g.frozen)
      attrs.push_back(builder.getNamedAttr("frozen", builder.getBoolAttr(*g.frozen)));
    if (g.trustRatio)
      attrs.push_back(builder.getNamedAttr("trust_ratio", builder.getBoolAttr(*g.trustRatio)));
    if (g.lrScale)
      attrs.push_back(builder.getNamedAttr("lr_scale", builder.getF64FloatAttr(*g.lrScale)));
    out.push_back(builder.getDictionaryAttr(attrs));
  }
  return builder.getArrayAttr(out);
}

} // namespace mlir::lm
