//===- Export.cpp - `export` sections: name maps to other frameworks ------===//
//
// An `export hf "GPT2LMHeadModel" { config { ... } "wte" -> "transformer.wte.weight" ... }`
// section becomes one dictionary of the module attribute lm.exports
// (docs/dialect.md): the format, the model class, the config values evaluated
// against the config constants, and one entry per parameter, resolved from the
// rules. Checked here, where the source is at hand: every parameter is mapped by
// exactly one rule, every rule maps some parameter, no foreign name is produced
// twice, and only 2-D parameters are transposed. Several sections of one format
// (ELECTRA's generator and discriminator, two model classes) each map the
// parameters their rules match, at most one rule each; together they map every
// parameter, and their model classes differ. An `omit "sbo.bias"` rule states
// that the model class lacks the parameters it matches (SpanBERT's span boundary
// head in BertForMaskedLM): they count as covered, get no foreign name, and are
// listed in the section's "omitted"; like a mapping rule, it must match some
// parameter, and no parameter may match two rules of a section.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"
#include "frontend/NamePattern.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace mlir::lm {

using namespace ast;

namespace {
struct ParamInfo {
  RankedTensorType type;
  Location loc;
};
} // namespace

FailureOr<ArrayAttr> MLIRGen::exportsAttr() {
  // Every parameter of the module, from the functions' lm.param arguments (the
  // objectives and the models share names, and so one map).
  std::map<std::string, ParamInfo> params;
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(i, "lm.param"))
        params.emplace(name.str(), ParamInfo{cast<RankedTensorType>(fn.getArgument(i).getType()),
                                             fn.getArgument(i).getLoc()});

  SmallVector<Attribute> out;
  std::map<std::string, int> sections;                   // format -> how many
  std::map<std::pair<std::string, std::string>, Loc> classes; // (format, class) -> where
  std::map<std::string, std::set<std::string>> mappedBy;   // format -> parameters some section maps
  for (const Export &e : ast.exports)
    ++sections[e.format];
  for (const Export &e : ast.exports) {
    const bool several = sections[e.format] > 1;
    if (e.format != "hf")
      return error(e.formatLoc) << "unknown export format '" << e.format
                                << "' (lmc knows hf: Hugging Face transformers)";
    if (e.architecture.empty())
      return error(e.loc) << "the model class after 'export " << e.format << "' is empty";
    if (auto [it, inserted] = classes.emplace(std::pair(e.format, e.architecture), e.loc); !inserted)
      return error(e.loc) << "a second 'export " << e.format << " \"" << e.architecture
                          << "\"' section (the first is at " << at(it->second)
                          << "); the sections of a format map different model classes";

    // config: numbers, booleans and strings, evaluated against the config constants.
    SmallVector<NamedAttribute> config;
    std::map<std::string, Loc> keys;
    Env env;
    for (const Setting &s : e.config) {
      if (auto [it, inserted] = keys.emplace(s.name, s.loc); !inserted)
        return error(s.loc) << "'" << s.name << "' is set twice in the export config (first at "
                            << at(it->second) << ")";
      if (s.name == "architectures")
        return error(s.loc) << "'architectures' is written from the model class after 'export "
                            << e.format << "'; do not set it";
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      Attribute a;
      switch (v->kind) {
      case LMValue::Kind::Int: a = builder.getI64IntegerAttr(v->intValue); break;
      case LMValue::Kind::Float:
        if (!std::isfinite(v->floatValue))
          return error(s.value->loc) << "'" << s.name << "' is not finite";
        a = builder.getF64FloatAttr(v->floatValue);
        break;
      case LMValue::Kind::Bool: a = builder.getBoolAttr(v->boolValue); break;
      case LMValue::Kind::String: a = builder.getStringAttr(v->str); break;
      default:
        return error(s.value->loc) << "'" << s.name
                                   << "' must be a number, true/false or a string in the export config";
      }
      config.push_back(builder.getNamedAttr(s.name, a));
    }

    // Rules: parse both sides, then resolve every parameter through them.
    struct Rule {
      const ExportRule *src;
      NamePattern pattern;
      std::vector<NamePattern> targets, tied;
      int uses = 0;
    };
    std::vector<Rule> rules;
    for (const ExportRule &r : e.rules) {
      Rule rule{&r, {}, {}, {}, 0};
      std::string why;
      std::optional<NamePattern> p = parseNamePattern(r.pattern, why);
      if (!p)
        return error(r.loc) << "parameter path \"" << r.pattern << "\": " << why;
      rule.pattern = *p;
      for (const std::string &t : r.targets) {
        std::optional<NamePattern> tp = parseNamePattern(t, why);
        if (!tp)
          return error(r.loc) << "name \"" << t << "\": " << why;
        // Every hole of a name must be bound by the parameter path.
        for (const std::string &h : tp->holes)
          if (std::find(p->holes.begin(), p->holes.end(), h) == p->holes.end())
            return error(r.loc) << "name \"" << t << "\" uses '{" << h << "}', which the parameter path \""
                                << r.pattern << "\" does not have";
        rule.targets.push_back(*tp);
      }
      for (const std::string &t : r.tied) {
        std::optional<NamePattern> tp = parseNamePattern(t, why);
        if (!tp)
          return error(r.loc) << "tied name \"" << t << "\": " << why;
        for (const std::string &h : tp->holes)
          if (std::find(p->holes.begin(), p->holes.end(), h) == p->holes.end())
            return error(r.loc) << "tied name \"" << t << "\" uses '{" << h << "}', which the parameter path \""
                                << r.pattern << "\" does not have";
        rule.tied.push_back(*tp);
      }
      rules.push_back(std::move(rule));
    }

    SmallVector<Attribute> entries, omitted;
    std::map<std::string, std::string> produced; // foreign name -> parameter
    std::vector<std::pair<std::string, Location>> unmapped;
    for (const auto &[name, info] : params) {
      Rule *match = nullptr;
      std::map<std::string, std::string> captures, caps;
      for (Rule &r : rules) {
        if (!matchNamePattern(r.pattern, name, caps))
          continue;
        if (match) {
          InFlightDiagnostic d = error(r.src->loc);
          d << "parameter '" << name << "' is matched by this rule and by the rule at "
            << at(match->src->loc) << " of 'export " << e.format
            << "'; each parameter needs exactly one";
          return failure();
        }
        match = &r;
        captures = caps;
      }
      if (!match) {
        unmapped.push_back({name, info.loc});
        continue;
      }
      mappedBy[e.format].insert(name);
      ++match->uses;
      if (match->src->omit) {
        omitted.push_back(builder.getStringAttr(name));
        continue;
      }
      if (match->src->transpose && info.type.getRank() != 2)
        return error(match->src->loc) << "'transpose' needs a 2-D parameter, but '" << name << "' is rank "
                                      << info.type.getRank();
      SmallVector<Attribute> names, tied;
      for (auto [list, out] : {std::pair(&match->targets, &names), std::pair(&match->tied, &tied)})
        for (const NamePattern &t : *list) {
          std::string why;
          std::optional<std::string> foreign = substituteNamePattern(t, captures, why);
          if (!foreign)
            return error(match->src->loc) << "name of parameter '" << name << "': " << why;
          if (auto [it, inserted] = produced.emplace(*foreign, name); !inserted)
            return error(match->src->loc) << "name '" << *foreign << "' is given to both '" << it->second
                                          << "' and '" << name << "'";
          out->push_back(builder.getStringAttr(*foreign));
        }
      entries.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("param", builder.getStringAttr(name)),
           builder.getNamedAttr("names", builder.getArrayAttr(names)),
           builder.getNamedAttr("transpose", builder.getBoolAttr(match->src->transpose)),
           builder.getNamedAttr("tied", builder.getArrayAttr(tied))}));
    }
    if (!unmapped.empty() && !several) {
      // All of them at once: a new model file usually misses several.
      InFlightDiagnostic d = error(e.loc);
      d << "'export " << e.format << "' maps no name for " << unmapped.size() << " parameter"
        << (unmapped.size() > 1 ? "s" : "") << ": ";
      for (size_t i = 0; i < unmapped.size() && i < 8; ++i)
        d << (i ? ", '" : "'") << unmapped[i].first << "'";
      if (unmapped.size() > 8)
        d << ", ...";
      d << " (add rules \"" << unmapped[0].first << "\" -> \"...\", or omit \"" << unmapped[0].first
        << "\" where the model class lacks it)";
      d.attachNote(unmapped[0].second) << "parameter '" << unmapped[0].first << "' is declared here";
      return failure();
    }
    for (const Rule &r : rules)
      if (r.uses == 0)
        return error(r.src->loc) << (r.src->omit ? "omit \"" : "\"") << r.src->pattern
                                 << "\" matches no parameter of this module";
    if (entries.empty())
      return error(e.loc) << "'export " << e.format << " \"" << e.architecture
                          << "\"' maps no parameter (every one is omitted)";

    std::string where = files[e.loc.file] + ":" + at(e.loc);
    size_t slash = where.find_last_of('/', where.find(':'));
    if (slash != std::string::npos)
      where = where.substr(slash + 1);
    SmallVector<NamedAttribute> section{
        builder.getNamedAttr("format", builder.getStringAttr(e.format)),
        builder.getNamedAttr("architecture", builder.getStringAttr(e.architecture)),
        builder.getNamedAttr("config", builder.getDictionaryAttr(config)),
        builder.getNamedAttr("entries", builder.getArrayAttr(entries)),
        builder.getNamedAttr("loc", builder.getStringAttr(where))};
    if (!omitted.empty()) // only then: sections without `omit` read as before
      section.push_back(builder.getNamedAttr("omitted", builder.getArrayAttr(omitted)));
    out.push_back(builder.getDictionaryAttr(section));
  }
  // Several sections of a format: together they map every parameter.
  for (const Export &e : ast.exports) {
    if (sections[e.format] < 2)
      continue;
    std::vector<std::pair<std::string, Location>> unmapped;
    for (const auto &[name, info] : params)
      if (!mappedBy[e.format].count(name))
        unmapped.push_back({name, info.loc});
    if (unmapped.empty())
      continue;
    InFlightDiagnostic d = error(e.loc);
    d << "no 'export " << e.format << "' section maps or omits " << unmapped.size() << " parameter"
      << (unmapped.size() > 1 ? "s" : "") << ": ";
    for (size_t i = 0; i < unmapped.size() && i < 8; ++i)
      d << (i ? ", '" : "'") << unmapped[i].first << "'";
    if (unmapped.size() > 8)
      d << ", ...";
    d.attachNote(unmapped[0].second) << "parameter '" << unmapped[0].first << "' is declared here";
    return failure();
  }
  return builder.getArrayAttr(out);
}

} // namespace mlir::lm
