//===- Lora.cpp - the train block's LoRA adapters -------------------------===//
//
// `lora = { targets = ["*.wq", "*.wv"], rank = 8, alpha = 16, train = ["classifier.*"] }` (docs/finetuning.md,
// "LoRA"): read and checked here, its patterns resolved to parameter names
// once every function exists (as the parameter groups are), and handed to the
// -lm-lora pass as the module attribute lm.lora, which adds the adapters.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <set>

namespace mlir::lm {

FailureOr<std::optional<DictionaryAttr>> MLIRGen::loraAttr() {
  const ast::Setting *setting = nullptr;
  for (const ast::Setting &s : ast.train)
    if (s.name == "lora")
      setting = &s;
  if (!setting)
    return std::optional<DictionaryAttr>();
  const ast::Expr &e = *setting->value;
  const char *form = "lora must be written { targets = [\"*.wq\", \"*.wv\"], rank = 8, alpha = 16, dropout = 0.0 }";
  if (e.kind != ast::Expr::Kind::Call || e.name != "lora" || !e.args.empty())
    return error(e.loc) << form << ", got '" << ast::toString(e) << "'";

  // PEFT's LoraConfig defaults: r = 8, lora_alpha = 8, lora_dropout = 0.
  int64_t rank = 8;
  double alpha = 8;
  std::vector<std::pair<std::string, ast::Loc>> patterns, trainPatterns;
  std::set<std::string> given;
  Env env;
  for (const ast::KeywordArg &kw : e.kwargs) {
    if (!given.insert(kw.name).second)
      return error(kw.loc) << "lora: '" << kw.name << "' is given twice";
    if (kw.name == "targets" || kw.name == "train") {
      const ast::Expr &list = *kw.value;
      if (list.kind != ast::Expr::Kind::List || list.args.empty())
        return error(list.loc) << "lora " << kw.name
                               << " must be a non-empty list of quoted parameter-name patterns, e.g. "
                               << (kw.name == "train" ? "train = [\"classifier.*\"]" : "targets = [\"*.wq\", \"*.wv\"]");
      for (const ast::ExprPtr &item : list.args) {
        if (item->kind != ast::Expr::Kind::String || item->name.empty())
          return error(item->loc) << "lora " << kw.name << " holds quoted parameter-name patterns such as \"*.wq\", got '"
                                  << ast::toString(*item) << "'";
        (kw.name == "train" ? trainPatterns : patterns).emplace_back(item->name, item->loc);
      }
      continue;
    }
    FailureOr<LMValue> v = eval(*kw.value, env);
    if (failed(v))
      return failure();
    if (kw.name == "rank") {
      if (v->kind != LMValue::Kind::Int || v->intValue < 1)
        return error(kw.value->loc) << "lora rank must be a whole number >= 1, got " << describe(*v);
      rank = v->intValue;
    } else if (kw.name == "alpha") {
      if (!v->isNumber() || !std::isfinite(v->asDouble()) || v->asDouble() <= 0)
        return error(kw.value->loc) << "lora alpha must be a finite number > 0, got " << describe(*v);
      alpha = v->asDouble();
    } else if (kw.name == "dropout") {
      if (!v->isNumber() || !(v->asDouble() >= 0 && v->asDouble() < 1))
        return error(kw.value->loc) << "lora dropout must be a number in [0, 1), got " << describe(*v);
      if (v->asDouble() > 0)
        return error(kw.value->loc) << "lora dropout > 0 is not supported yet (the adapters' input is not "
                                       "dropped); use dropout = 0.0";
    } else {
      return error(kw.loc) << "lora has no field '" << kw.name << "' (expected targets, rank, alpha, dropout or train)";
    }
  }
  if (patterns.empty())
    return error(e.loc) << "lora needs targets, the weights to adapt: " << form;

  // The parameters in the order the functions declare them (the plan's order).
  std::vector<std::string> params;
  std::set<std::string> known;
  for (func::FuncOp f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param"))
        if (known.insert(name.str()).second)
          params.push_back(name.str());
  // Each pattern must match a parameter; the names in the parameters' order.
  auto resolve = [&](const std::vector<std::pair<std::string, ast::Loc>> &list, const char *what,
                     SmallVector<Attribute> &out) -> LogicalResult {
    std::set<std::string> chosen;
    for (const auto &[pattern, where] : list) {
      bool any = false;
      for (const std::string &name : params)
        if (globMatch(pattern, name)) {
          any = true;
          chosen.insert(name);
        }
      if (!any) {
        std::string names;
        for (size_t k = 0; k < params.size() && k < 6; ++k)
          names += (k ? ", " : "") + params[k];
        return error(where) << "lora " << what << " \"" << pattern << "\" matches no parameter (the parameters are "
                            << names << (params.size() > 6 ? ", ..." : "")
                            << "; `*` matches any characters, dots included)";
      }
    }
    for (const std::string &name : params)
      if (chosen.count(name))
        out.push_back(builder.getStringAttr(name));
    return success();
  };
  SmallVector<Attribute> targets, trainable;
  if (failed(resolve(patterns, "target", targets)) || failed(resolve(trainPatterns, "train pattern", trainable)))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("rank", builder.getI64IntegerAttr(rank)),
      builder.getNamedAttr("alpha", builder.getF64FloatAttr(alpha)),
      builder.getNamedAttr("targets", builder.getArrayAttr(targets)),
  };
  if (!trainable.empty())
    attrs.push_back(builder.getNamedAttr("trainable", builder.getArrayAttr(trainable)));
  return std::optional<DictionaryAttr>(builder.getDictionaryAttr(attrs));
}

} // namespace mlir::lm
