//===- MLIRGen.cpp - Functions, calls and parameters ----------------------===//
//
// The module-level walk: one func.func per objective and per model (a model
// specialised to the shapes its objective calls it with), blocks inlined at
// each call, and parameters turned into function arguments carrying their
// hierarchical names and initializers (docs/dialect.md, Function conventions).
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlir::lm {

using ast::Function;
using ast::Stmt;

MLIRGen::MLIRGen(MLIRContext &context, const ast::Module &module, std::vector<std::string> files,
                 const FrontendOptions &options)
    : ctx(context), ast(module), files(std::move(files)), options(options), builder(&context) {}

Location MLIRGen::loc(ast::Loc l) {
  const std::string &file = l.file >= 0 && size_t(l.file) < files.size() ? files[l.file] : files[0];
  return FileLineColLoc::get(&ctx, file, l.line, l.col);
}

InFlightDiagnostic MLIRGen::error(ast::Loc l) {
  InFlightDiagnostic diag = emitError(loc(l));
  // The chain of calls that inlined this code, innermost first.
  for (size_t i = callStack.size(); i-- > 0;)
    diag.attachNote(loc(callLocs[i])) << "in " << kindName(callStack[i]->kind) << " '"
                                      << callStack[i]->name << "' called from here";
  return diag;
}

std::string MLIRGen::join(const std::string &scope, const std::string &name) {
  return scope.empty() ? name : scope + "." + name;
}

const ast::KeywordArg *MLIRGen::nameArg(const ast::Expr &call) {
  for (const ast::KeywordArg &kw : call.kwargs)
    if (kw.name == "name")
      return &kw;
  return nullptr;
}

/// With `callee` (a block call), a second unnamed call is deferred to the
/// block's first parameter (Env::unnamedRepeat); builtins that declare
/// parameters fail at once.
FailureOr<CallFlags> MLIRGen::callFlags(const ast::Expr &call, Env &env) {
  CallFlags flags;
  for (const ast::KeywordArg &kw : call.kwargs) {
    if (kw.name != "shared" && kw.name != "frozen")
      continue;
    FailureOr<LMValue> v = eval(*kw.value, env);
    if (failed(v))
      return failure();
    if (v->kind != LMValue::Kind::Bool)
      return error(kw.value->loc) << kw.name << " must be true or false, got " << describe(*v);
    (kw.name == "shared" ? flags.shared : flags.frozen) = v->boolValue;
  }
  return flags;
}

FailureOr<std::string> MLIRGen::callScope(Env &env, const ast::Expr &call, const std::string &dflt,
                                          Env *callee, const CallFlags &flags,
                                          bool *reuse) {
  std::string local = dflt;
  const ast::KeywordArg *named = nameArg(call);
  if (named) {
    FailureOr<LMValue> v = eval(*named->value, env);
    if (failed(v))
      return failure();
    if (v->kind != LMValue::Kind::String)
      return error(named->value->loc) << "name must be a string like name = \"ln_1\", got "
                                      << describe(*v);
    bool ok = !v->str.empty();
    for (char c : v->str)
      ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!ok)
      return error(named->value->loc) << "name \"" << v->str
                                      << "\" must be letters, digits and '_' (it is one part of "
                                         "a parameter path like layer.3.attn.q)";
    local = v->str;
  }
  ast::Loc where = named ? named->value->loc : call.loc;
  auto [it, inserted] = env.scopes.emplace(local, where);
  if (reuse)
    *reuse = false;
  if (!inserted && flags.shared && reuse) {
    // `shared = true`: this call is the scope opened before, called again.
    *reuse = true;
    return join(env.scope, local);
  }
  if (!inserted) {
    if (named)
      return error(where) << "the name \"" << local << "\" is already used in this scope (at "
                          << at(it->second) << "); parameter paths must be unique (add "
                          << "shared = true to reuse that call's parameters)";
    if (callee) {
      callee->unnamedRepeat = Env::UnnamedRepeat{call.loc, it->second, dflt};
      return join(env.scope, local);
    }
    return error(call.loc) << "'" << dflt << "' is called a second time in this scope (first at "
                           << at(it->second) << "); name each call's parameters: " << dflt
                           << "(..., name = \"...\")";
  }
  return join(env.scope, local);
}

DictionaryAttr MLIRGen::initAttr(StringRef kind, ArrayRef<std::pair<StringRef, double>> args) {
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(builder.getNamedAttr("kind", builder.getStringAttr(kind)));
  for (auto &[name, value] : args)
    attrs.push_back(builder.getNamedAttr(name, builder.getF64FloatAttr(value)));
  return builder.getDictionaryAttr(attrs);
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> MLIRGen::run() {
  if (options.floatType == "f32") {
    floatType = builder.getF32Type();
  } else if (options.floatType == "f64") {
    floatType = builder.getF64Type();
  } else {
    emitError(FileLineColLoc::get(&ctx, files[0], 1, 1))
        << "unsupported float type '" << options.floatType << "' (expected f32 or f64)";
    return nullptr;
  }
  OwningOpRef<ModuleOp> owned = ModuleOp::create(FileLineColLoc::get(&ctx, files[0], 1, 1));
  module = *owned;
  if (failed(evalConfig()) || failed(checkDefinitions()))
    return nullptr;
  FailureOr<DictionaryAttr> train = trainAttr();
  if (failed(train))
    return nullptr;
  FailureOr<std::optional<DictionaryAttr>> mesh = meshAttr(*train);
  if (failed(mesh))
    return nullptr;

  std::optional<DictionaryAttr> data;
  for (const Function &fn : ast.functions) {
    if (fn.kind != Function::Kind::Objective)
      continue;
    if (failed(emitObjective(fn)))
      return nullptr;
    if (!data) {
      FailureOr<std::optional<DictionaryAttr>> d =
          dataAttr(fn, cast<func::FuncOp>(module.getBody()->back()));
      if (failed(d))
        return nullptr;
      data = *d;
    }
  }
  for (const Function &fn : ast.functions) {
    if (fn.kind != Function::Kind::Model)
      continue;
    auto it = modelSpecs.find(fn.name);
    if (failed(emitModel(fn, it == modelSpecs.end() ? nullptr : &it->second)))
      return nullptr;
  }
  // Incremental decoding of causal models (MLIRDecode.cpp); the plan has one model.
  if (options.decodePrograms)
    for (const Function &fn : ast.functions)
      if (fn.kind == Function::Kind::Model)
        if (auto forward = module.lookupSymbol<func::FuncOp>(fn.name))
          emitDecodePrograms(fn, forward);

  // Functions in source order, whichever order they were emitted in.
  for (const Function &fn : ast.functions)
    for (const std::string &name : {fn.name, fn.name + ".prefill", fn.name + ".decode", fn.name + ".encode"})
      if (auto op = module.lookupSymbol<func::FuncOp>(name))
        op->moveBefore(module.getBody(), module.getBody()->end());

  // Parameter groups need the parameters: resolved once every function exists.
  bool decayAll = false;
  FailureOr<ArrayAttr> groups = paramGroupsAttr(decayAll);
  if (failed(groups))
    return nullptr;
  if (*groups) {
    NamedAttrList attrs(*train);
    attrs.set("param_groups", *groups);
    train = attrs.getDictionary(&ctx);
  }
  FailureOr<std::optional<DictionaryAttr>> lora = loraAttr();
  if (failed(lora))
    return nullptr;
  if (*lora)
    module->setAttr("lm.lora", **lora);
  FailureOr<ArrayAttr> exports = exportsAttr();
  if (failed(exports))
    return nullptr;
  module->setAttr("lm.config", configAttr());
  module->setAttr("lm.train", *train);
  if (!exports->empty())
    module->setAttr("lm.exports", *exports);
  if (data)
    module->setAttr("lm.data", *data);
  if (*mesh)
    module->setAttr("lm.mesh", **mesh);
  return owned;
}

/// Names are global: a second definition, or a block named like a builtin,
/// would make calls ambiguous.
LogicalResult MLIRGen::checkDefinitions() {
  std::map<std::string, const Function *> seen;
  for (const Function &fn : ast.functions) {
    auto [it, inserted] = seen.emplace(fn.name, &fn);
    if (!inserted)
      return error(fn.nameLoc) << "duplicate definition of '" << fn.name << "' (the first "
                               << kindName(it->second->kind) << " '" << fn.name << "' is at "
                               << at(it->second->nameLoc) << ")";
    if (isBuiltin(fn.name))
      return error(fn.nameLoc) << "'" << fn.name << "' is a builtin; give the "
                               << kindName(fn.kind) << " another name";
    bool isConst = false;
    lookupConfig(fn.name, isConst);
    if (isConst)
      return error(fn.nameLoc) << "'" << fn.name << "' is already a config constant";
    std::set<std::string> params;
    for (const ast::Parameter &p : fn.params) {
      if (!params.insert(p.name).second)
        return error(p.loc) << "duplicate parameter '" << p.name << "' in the signature of '"
                            << fn.name << "'";
      if (p.name == "name")
        return error(p.loc) << "a parameter cannot be called 'name': `name = \"...\"` names the "
                               "parameter scope of a call";
      if (p.name == "shared" || p.name == "frozen")
        return error(p.loc) << "a parameter cannot be called '" << p.name << "': `" << p.name
                            << " = true` is a keyword of every call that declares parameters";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

void MLIRGen::beginFunction(FuncState &state, const Function &fn) {
  builder.setInsertionPointToEnd(module.getBody());
  state.op = builder.create<func::FuncOp>(loc(fn.loc), fn.name, builder.getFunctionType({}, {}));
  state.entry = state.op.addEntryBlock();
  builder.setInsertionPointToStart(state.entry);
  cur = &state;
}

BlockArgument MLIRGen::addInput(FuncState &state, RankedTensorType type, const std::string &name,
                                ast::Loc l) {
  BlockArgument arg = state.entry->addArgument(type, loc(l));
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(builder.getNamedAttr("lm.input", builder.getStringAttr(name)));
  bool hasVocab = false;
  LMValue vocab = lookupConfig("vocab", hasVocab);
  if (hasVocab && type.getElementType().isInteger(32) && vocab.kind == LMValue::Kind::Int)
    attrs.push_back(builder.getNamedAttr("lm.vocab", builder.getI64IntegerAttr(vocab.intValue)));
  state.argAttrs.push_back(builder.getDictionaryAttr(attrs));
  return arg;
}

FailureOr<Value> MLIRGen::dropoutKey(ArrayRef<int64_t> x, ast::Loc l) {
  if (x.empty())
    return error(l) << "dropout needs a tensor whose first dimension is the batch (each row's mask is keyed by "
                       "its sample), got a scalar";
  if (cur->dropoutKey) {
    int64_t rows = cast<RankedTensorType>(cur->dropoutKey.getType()).getDimSize(0);
    if (rows != x[0])
      return error(l) << "dropout of a tensor with " << x[0] << " rows in an objective whose first dropout had "
                      << rows << " rows (the batch): dropout keys each row by its sample, so its tensors have the "
                      << "batch as their first dimension";
    return cur->dropoutKey;
  }
  for (DictionaryAttr a : cur->argAttrs)
    if (auto name = a.getAs<StringAttr>("lm.input"); name && name.getValue() == "dropout_key")
      return error(l) << "dropout adds the input 'dropout_key' (its random keys, from the runtime), which this "
                         "objective already declares; rename that input";
  auto type = RankedTensorType::get({x[0], 2}, builder.getI32Type());
  BlockArgument arg = cur->entry->addArgument(type, loc(l));
  cur->argAttrs.push_back(
      builder.getDictionaryAttr({builder.getNamedAttr("lm.input", builder.getStringAttr("dropout_key"))}));
  cur->dropoutKey = arg;
  return Value(arg);
}

FailureOr<LMValue> MLIRGen::emitSharedDropout(Value x, ArrayRef<int64_t> dims, double p, ast::Loc l) {
  // The rows: the key's when a dropout made it, else the objective's batch
  // (its inputs are batch-first, so the first one's first dimension).
  int64_t rows = 0;
  if (cur->dropoutKey)
    rows = cast<RankedTensorType>(cur->dropoutKey.getType()).getDimSize(0);
  else if (cur->entry->getNumArguments() > 0)
    if (auto t = dyn_cast<RankedTensorType>(cur->entry->getArgument(0).getType()); t && t.getRank() > 0)
      rows = t.getDimSize(0);
  if (rows < 1)
    return error(l) << "dropout(..., shared = true) draws its mask from the batch's dropout keys, and this "
                       "objective has no batch-first input to take the batch from";
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n % rows != 0)
    return error(l) << "dropout(..., shared = true) spreads its tensor's " << n << " elements over the batch's "
                    << rows << " dropout keys, an equal share each, and " << rows << " does not divide " << n;
  FailureOr<Value> key = dropoutKey({rows}, l);
  if (failed(key))
    return failure();
  Location at = loc(l);
  Type elem = cast<RankedTensorType>(x.getType()).getElementType();
  Value flat = builder.create<ReshapeOp>(at, tensorType({rows, n / rows}, elem), x);
  Value dropped = builder.create<DropoutOp>(at, flat, *key, builder.getF64FloatAttr(p),
                                            builder.getI64IntegerAttr(cur->dropoutSites++));
  return LMValue::ofTensor(builder.create<ReshapeOp>(at, cast<RankedTensorType>(x.getType()), dropped).getResult());
}

void MLIRGen::finishFunction(FuncState &state, ArrayRef<Value> returned, ArrayRef<std::string> outputNames) {
  builder.setInsertionPointToEnd(state.entry);
  SmallVector<Value> results(returned.begin(), returned.end());
  for (const FuncState::Metric &m : state.metrics)
    results.push_back(m.value);
  builder.create<func::ReturnOp>(returned.front().getLoc(), results);
  state.op.setFunctionType(
      builder.getFunctionType(state.entry->getArgumentTypes(), ValueRange(results).getTypes()));
  state.op.setAllArgAttrs(state.argAttrs);
  for (auto [i, m] : llvm::enumerate(state.metrics))
    state.op.setResultAttr(returned.size() + i, "lm.metric", builder.getStringAttr(m.name));
  for (auto [i, name] : llvm::enumerate(outputNames))
    state.op.setResultAttr(i, "lm.output", builder.getStringAttr(name));
  cur = nullptr;
}

LogicalResult MLIRGen::emitObjective(const Function &fn) {
  if (fn.resultType)
    return error(fn.resultType->loc)
           << "objective '" << fn.name << "' has no result type: it assigns the scalar 'loss'";
  FuncState state;
  state.isObjective = true;
  beginFunction(state, fn);
  state.op->setAttr("lm.objective", builder.getUnitAttr());

  Env env;
  env.fn = &fn;
  for (const ast::Parameter &p : fn.params) {
    if (!p.type)
      return error(p.loc) << "input '" << p.name << "' of objective '" << fn.name
                          << "' needs a type, e.g. " << p.name << ": i32[batch, seq + 1]";
    FailureOr<RankedTensorType> type =
        resolveType(*p.type, env, "the inputs of objective '" + fn.name + "'");
    if (failed(type))
      return failure();
    env.vars[p.name] = LMValue::ofTensor(addInput(state, *type, p.name, p.loc));
  }

  std::optional<LMValue> returned;
  if (failed(emitStatements(fn, env, returned)))
    return failure();
  auto it = env.vars.find("loss");
  if (it == env.vars.end())
    return error(fn.closeLoc) << "objective '" << fn.name
                              << "' never assigns 'loss' (write: loss = <scalar expression>)";
  const LMValue &loss = it->second;
  if (!loss.isTensor() || !isa<FloatType>(loss.type().getElementType()) ||
      loss.type().getRank() != 0)
    return error(fn.closeLoc) << "'loss' of objective '" << fn.name
                              << "' must be a float scalar tensor, got " << describe(loss);
  finishFunction(state, {loss.tensor});
  return success();
}

LogicalResult MLIRGen::emitModel(const Function &fn, const ModelSpec *spec) {
  FuncState state;
  Env env;
  env.fn = &fn;
  std::vector<LMValue> args;
  std::vector<ast::Loc> argLocs;

  if (!spec) {
    // Not called by any objective: emitted only when its inputs have concrete
    // shapes (config constants); otherwise there is nothing to specialise on.
    auto skipped = [&]() {
      emitWarning(loc(fn.nameLoc)) << "model '" << fn.name
                                   << "' is not emitted: its input shapes are not concrete";
      return success();
    };
    for (const ast::Parameter &p : fn.params) {
      if (!p.type)
        return skipped();
      for (const ast::ExprPtr &d : p.type->dims) {
        bool isConst = false;
        if (d->kind == ast::Expr::Kind::Name && (lookupConfig(d->name, isConst), !isConst))
          return skipped();
      }
    }
  }

  beginFunction(state, fn);
  state.op->setAttr("lm.model", builder.getUnitAttr());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ast::Parameter &p = fn.params[i];
    argLocs.push_back(p.loc);
    if (spec) {
      if (spec->argTypes[i])
        args.push_back(LMValue::ofTensor(addInput(state, spec->argTypes[i], p.name, p.loc)));
      else
        args.push_back(spec->args[i]);
      continue;
    }
    FailureOr<RankedTensorType> type =
        resolveType(*p.type, env, "the inputs of model '" + fn.name + "'");
    if (failed(type))
      return failure();
    args.push_back(LMValue::ofTensor(addInput(state, *type, p.name, p.loc)));
  }
  Env callee;
  FailureOr<LMValue> result =
      inlineFunction(fn, std::move(args), argLocs, spec ? spec->callLoc : fn.loc, std::move(callee));
  if (failed(result))
    return failure();
  if (result->isTensor()) {
    finishFunction(state, {result->tensor});
    boundEmbeddingInputs(state.op);
    return success();
  }
  // Several results (`return mlm_logits, nsp_logits`): the plan's forward
  // program outputs each under the name it is returned as.
  const Stmt *ret = nullptr;
  for (const Stmt &s : fn.body)
    if (s.kind == Stmt::Kind::Return)
      ret = &s;
  ast::Loc retLoc = ret ? ret->loc : fn.closeLoc;
  if (result->kind != LMValue::Kind::List || !ret || ret->value->kind != ast::Expr::Kind::Tuple)
    return error(retLoc) << "model '" << fn.name << "' must return a tensor or several named tensors "
                         << "(return a, b), got " << describe(*result);
  SmallVector<Value> outs;
  std::vector<std::string> names;
  std::map<std::string, ast::Loc> seen;
  for (size_t i = 0; i < result->items.size(); ++i) {
    const ast::Expr &item = *ret->value->args[i];
    if (item.kind != ast::Expr::Kind::Name)
      return error(item.loc) << "model '" << fn.name << "' returns several values, so each is named by the "
                             << "identifier it is returned as (its output in the plan); assign '"
                             << ast::toString(item) << "' to a name and return that";
    const LMValue &v = result->items[i];
    if (!v.isTensor() || !isa<FloatType>(v.type().getElementType()))
      return error(item.loc) << "output '" << item.name << "' of model '" << fn.name
                             << "' must be a float tensor, got " << describe(v);
    auto [it, fresh] = seen.emplace(item.name, item.loc);
    if (!fresh)
      return error(item.loc) << "model '" << fn.name << "' returns '" << item.name << "' twice (first at "
                             << at(it->second) << "); its outputs need distinct names";
    outs.push_back(v.tensor);
    names.push_back(item.name);
  }
  finishFunction(state, outs, names);
  boundEmbeddingInputs(state.op);
  return success();
}

void MLIRGen::boundEmbeddingInputs(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!func.getArgAttr(arg.getArgNumber(), "lm.input") || !type || !type.getElementType().isInteger(32) ||
        arg.use_empty())
      continue;
    int64_t bound = 0;
    for (OpOperand &use : arg.getUses()) {
      auto embed = dyn_cast<EmbeddingOp>(use.getOwner());
      if (!embed || use.get() != embed.getIds()) {
        bound = 0;
        break;
      }
      int64_t rows = cast<RankedTensorType>(embed.getTable().getType()).getDimSize(0);
      bound = bound == 0 ? rows : std::min(bound, rows);
    }
    if (bound > 0)
      func.setArgAttr(arg.getArgNumber(), "lm.vocab", builder.getI64IntegerAttr(bound));
  }
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

FailureOr<std::vector<LMValue>> MLIRGen::matchArguments(const Function &fn,
                                                        const ast::Expr &call, Env &env,
                                                        std::vector<ast::Loc> &argLocs) {
  size_t n = fn.params.size();
  size_t given = call.args.size();
  for (const ast::KeywordArg &kw : call.kwargs)
    given += isScopeKeyword(kw.name) ? 0 : 1;
  if (call.args.size() > n)
    return error(call.loc) << kindName(fn.kind) << " '" << fn.name << "' takes " << n
                           << (n == 1 ? " argument" : " arguments") << ", got " << given;
  std::vector<std::optional<LMValue>> slots(n);
  argLocs.assign(n, call.loc);
  for (size_t i = 0; i < call.args.size(); ++i) {
    FailureOr<LMValue> v = eval(*call.args[i], env);
    if (failed(v))
      return failure();
    slots[i] = *v;
    argLocs[i] = call.args[i]->loc;
  }
  for (const ast::KeywordArg &kw : call.kwargs) {
    if (isScopeKeyword(kw.name)) {
      if (fn.kind != Function::Kind::Block)
        return error(kw.loc) << kw.name << " = ... applies to the parameters of a block call; a "
                             << kindName(fn.kind) << "'s parameters are its own";
      continue;
    }
    auto it = std::find_if(fn.params.begin(), fn.params.end(),
                           [&](const ast::Parameter &p) { return p.name == kw.name; });
    if (it == fn.params.end())
      return error(kw.loc) << kindName(fn.kind) << " '" << fn.name
                           << "' has no parameter named '" << kw.name << "'";
    size_t i = it - fn.params.begin();
    if (slots[i])
      return error(kw.loc) << "argument '" << kw.name << "' of '" << fn.name
                           << "' is given twice";
    FailureOr<LMValue> v = eval(*kw.value, env);
    if (failed(v))
      return failure();
    slots[i] = *v;
    argLocs[i] = kw.loc;
  }
  std::vector<LMValue> args;
  for (size_t i = 0; i < n; ++i) {
    if (!slots[i])
      return error(call.loc) << kindName(fn.kind) << " '" << fn.name << "' takes " << n
                             << (n == 1 ? " argument" : " arguments") << ", got " << given
                             << " (missing '" << fn.params[i].name << "')";
    args.push_back(*slots[i]);
  }
  return args;
}

/// Whether two arguments of a model call are the same compile-time value, so
/// that one specialisation serves both calls. Top-level tensors are compared
/// by type, in ModelSpec::argTypes; tensors inside lists here.
static bool sameConstant(const LMValue &a, const LMValue &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case LMValue::Kind::Tensor:
    return !a.tensor || !b.tensor || a.tensor.getType() == b.tensor.getType();
  case LMValue::Kind::Int:
    return a.intValue == b.intValue;
  case LMValue::Kind::Float:
    return a.floatValue == b.floatValue;
  case LMValue::Kind::Bool:
    return a.boolValue == b.boolValue;
  case LMValue::Kind::String:
    return a.str == b.str;
  case LMValue::Kind::Offset:
    return a.tensor == b.tensor && a.intValue == b.intValue;
  case LMValue::Kind::List:
    return a.items.size() == b.items.size() &&
           std::equal(a.items.begin(), a.items.end(), b.items.begin(), sameConstant);
  }
  return false;
}

FailureOr<LMValue> MLIRGen::emitUserCall(const Function &fn, const ast::Expr &call, Env &env) {
  if (fn.kind == Function::Kind::Objective)
    return error(call.loc) << "objective '" << fn.name
                           << "' cannot be called; call a model or block instead";
  std::vector<ast::Loc> argLocs;
  FailureOr<std::vector<LMValue>> args = matchArguments(fn, call, env, argLocs);
  if (failed(args))
    return failure();

  Env callee;
  if (fn.kind == Function::Kind::Block) {
    FailureOr<CallFlags> flags = callFlags(call, env);
    if (failed(flags))
      return failure();
    bool reuse = false;
    FailureOr<std::string> scope = callScope(env, call, fn.name, &callee, *flags, &reuse);
    if (failed(scope))
      return failure();
    callee.scope = *scope;
    callee.reuseParams = env.reuseParams || reuse;
    callee.shareExisting = env.shareExisting || flags->shared;
    callee.frozen = env.frozen || flags->frozen;
    if (env.unnamedRepeat)
      callee.unnamedRepeat = env.unnamedRepeat;
  } else {
    // A model owns its weights: they live at the top level of the parameter
    // namespace, and every further call in the same function shares them.
    callee.reuseParams = !cur->inlinedModels.insert(fn.name).second;
    if (cur->isObjective) {
      ModelSpec spec;
      spec.callLoc = call.loc;
      for (const LMValue &a : *args) {
        spec.argTypes.push_back(a.isTensor() ? a.type() : RankedTensorType());
        LMValue constant = a;
        constant.tensor = nullptr;
        spec.args.push_back(constant);
      }
      auto [it, inserted] = modelSpecs.emplace(fn.name, spec);
      const ModelSpec &first = it->second;
      for (size_t i = 0; !inserted && i < spec.argTypes.size(); ++i)
        if (first.argTypes[i] != spec.argTypes[i] ||
            (!spec.argTypes[i] && !sameConstant(first.args[i], spec.args[i])))
          return error(argLocs[i])
                 << "model '" << fn.name << "' is called with "
                 << (spec.argTypes[i] ? describe(spec.argTypes[i]) : describe(spec.args[i]))
                 << " for '" << fn.params[i].name << "' here but with "
                 << (first.argTypes[i] ? describe(first.argTypes[i]) : describe(first.args[i]))
                 << " at " << at(first.callLoc)
                 << "; a model is emitted for one set of input shapes and compile-time arguments";
    }
  }
  return inlineFunction(fn, std::move(*args), argLocs, call.loc, std::move(callee));
}

FailureOr<LMValue> MLIRGen::inlineFunction(const Function &fn, std::vector<LMValue> args,
                                           const std::vector<ast::Loc> &argLocs,
                                           ast::Loc callLoc, Env env) {
  if (std::find(callStack.begin(), callStack.end(), &fn) != callStack.end())
    return error(callLoc) << kindName(fn.kind) << " '" << fn.name
                          << "' calls itself (recursion cannot be unrolled)";
  callStack.push_back(&fn);
  callLocs.push_back(callLoc);
  auto pop = [&]() {
    callStack.pop_back();
    callLocs.pop_back();
  };
  env.fn = &fn;
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (failed(bindParameter(fn, fn.params[i], args[i], argLocs[i], env))) {
      pop();
      return failure();
    }

  std::optional<LMValue> returned;
  LogicalResult ok = emitStatements(fn, env, returned);
  pop();
  if (failed(ok))
    return failure();
  if (!returned)
    return error(fn.closeLoc) << kindName(fn.kind) << " '" << fn.name
                              << "' ends without a 'return'";
  if (fn.resultType) {
    FailureOr<RankedTensorType> want =
        resolveType(*fn.resultType, env, "the result type of '" + fn.name + "'");
    if (failed(want))
      return failure();
    if (!returned->isTensor() || returned->type() != *want) {
      ast::Loc retLoc = fn.closeLoc;
      for (const Stmt &s : fn.body)
        if (s.kind == Stmt::Kind::Return)
          retLoc = s.loc;
      return error(retLoc) << kindName(fn.kind) << " '" << fn.name << "' returns "
                           << describe(*returned) << " but declares " << describe(*want);
    }
  }
  return *returned;
}

/// Checks an argument against a typed parameter `x: f32[B, T, d]`: a bare
/// identifier that is not yet known binds a dimension variable, every other
/// dimension must evaluate to the argument's size.
LogicalResult MLIRGen::bindParameter(const Function &fn, const ast::Parameter &p,
                                     const LMValue &arg, ast::Loc argLoc, Env &env) {
  if (!p.type) {
    env.vars[p.name] = arg;
    return success();
  }
  const ast::TypeExpr &t = *p.type;
  auto mismatch = [&]() {
    std::string want = t.elementType + "[";
    for (size_t i = 0; i < t.dims.size(); ++i)
      want += (i ? ", " : "") + ast::toString(*t.dims[i]);
    want += "]";
    return error(argLoc) << "argument '" << p.name << "' of " << kindName(fn.kind) << " '"
                         << fn.name << "' must be " << want << ", got " << describe(arg);
  };
  FailureOr<Type> elem = elementType(t);
  if (failed(elem))
    return failure();
  if (!arg.isTensor() || arg.type().getElementType() != *elem ||
      arg.type().getRank() != static_cast<int64_t>(t.dims.size()))
    return mismatch();
  std::vector<int64_t> dims = arg.dims();
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const ast::Expr &d = *t.dims[i];
    bool isConst = false;
    lookupConfig(d.name, isConst);
    if (d.kind == ast::Expr::Kind::Name && !env.vars.count(d.name) && !isConst) {
      env.vars[d.name] = LMValue::ofInt(dims[i]);
      env.dimVars.insert(d.name);
      continue;
    }
    FailureOr<int64_t> want = evalDim(d, env, "a dimension of '" + p.name + "'");
    if (failed(want))
      return failure();
    if (*want != dims[i])
      return mismatch().attachNote(loc(d.loc))
             << "dimension " << i << " ('" << ast::toString(d) << "') is " << *want
             << ", the argument has " << dims[i];
  }
  env.vars[p.name] = arg;
  return success();
}

FailureOr<Type> MLIRGen::elementType(const ast::TypeExpr &type) {
  if (type.elementType == "f32")
    return Type(floatType);
  if (type.elementType == "i32")
    return Type(builder.getI32Type());
  return error(type.loc) << "unknown element type '" << type.elementType
                         << "' (expected f32 or i32)";
}

FailureOr<RankedTensorType> MLIRGen::resolveType(const ast::TypeExpr &type, Env &env,
                                                 const std::string &what) {
  FailureOr<Type> elem = elementType(type);
  if (failed(elem))
    return failure();
  std::vector<int64_t> dims;
  for (const ast::ExprPtr &d : type.dims) {
    FailureOr<int64_t> v = evalDim(*d, env, "a dimension in " + what);
    if (failed(v))
      return failure();
    dims.push_back(*v);
  }
  return checkedType(dims, *elem, type.loc);
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult MLIRGen::emitStatements(const Function &fn, Env &env,
                                      std::optional<LMValue> &returned) {
  for (const Stmt &s : fn.body) {
    if (returned)
      return error(s.loc) << "statement after 'return' in " << kindName(fn.kind) << " '"
                          << fn.name << "'";
    switch (s.kind) {
    case Stmt::Kind::Param:
      if (failed(emitParamStmt(s, env)))
        return failure();
      break;
    case Stmt::Kind::Return: {
      if (fn.kind == Function::Kind::Objective)
        return error(s.loc) << "an objective has no 'return'; assign the scalar to 'loss'";
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      returned = *v;
      break;
    }
    case Stmt::Kind::Metric: {
      if (fn.kind != Function::Kind::Objective)
        return error(s.loc) << "'metric' belongs in an objective, not in " << kindName(fn.kind) << " '"
                            << fn.name << "' (return the value and name the metric in the objective)";
      if (s.name == "loss")
        return error(s.nameLoc) << "a metric cannot be called 'loss': that name is the objective's loss";
      for (const FuncState::Metric &m : cur->metrics)
        if (m.name == s.name)
          return error(s.nameLoc) << "metric '" << s.name << "' is defined twice (first at " << at(m.loc) << ")";
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      if (!v->isTensor() || !isa<FloatType>(v->type().getElementType()) || v->type().getRank() != 0)
        return error(s.nameLoc) << "metric '" << s.name << "' must be a float scalar, got " << describe(*v);
      cur->metrics.push_back({s.name, v->tensor, s.nameLoc});
      break;
    }
    case Stmt::Kind::Assign: {
      std::vector<std::string> names = s.names.empty() ? std::vector<std::string>{s.name} : s.names;
      std::vector<ast::Loc> nameLocs = s.names.empty() ? std::vector<ast::Loc>{s.nameLoc} : s.nameLocs;
      for (size_t i = 0; i < names.size(); ++i) {
        bool isConst = false;
        lookupConfig(names[i], isConst);
        if (isConst && !env.vars.count(names[i]))
          return error(nameLocs[i]) << "cannot assign to config constant '" << names[i] << "'";
        if (env.dimVars.count(names[i]))
          return error(nameLocs[i]) << "cannot assign to '" << names[i]
                                    << "': it is a dimension bound by the arguments";
      }
      FailureOr<LMValue> v = eval(*s.value, env);
      if (failed(v))
        return failure();
      if (names.size() == 1) {
        env.vars[s.name] = *v;
        break;
      }
      if (v->kind != LMValue::Kind::List || v->items.size() != names.size())
        return error(s.value->loc) << "cannot unpack " << describe(*v) << " into " << names.size()
                                   << " names";
      for (size_t i = 0; i < names.size(); ++i)
        env.vars[names[i]] = v->items[i];
      break;
    }
    }
  }
  return success();
}

LogicalResult MLIRGen::emitParamStmt(const Stmt &stmt, Env &env) {
  auto prev = env.paramDecls.find(stmt.name);
  if (prev != env.paramDecls.end())
    return error(stmt.nameLoc) << "duplicate parameter '" << stmt.name << "' (first declared at "
                               << at(prev->second) << ")";
  if (env.vars.count(stmt.name))
    return error(stmt.nameLoc) << "'" << stmt.name
                               << "' is already defined here; a parameter needs a fresh name";
  if (!stmt.paramShape.elementType.empty() && stmt.paramShape.elementType != "f32")
    return error(stmt.paramShape.loc) << "parameters are float tensors (f32), not '"
                                      << stmt.paramShape.elementType << "'";
  std::vector<int64_t> dims;
  for (const ast::ExprPtr &d : stmt.paramShape.dims) {
    FailureOr<int64_t> v = evalDim(*d, env, "a dimension of parameter '" + stmt.name + "'");
    if (failed(v))
      return failure();
    dims.push_back(*v);
  }
  FailureOr<RankedTensorType> type = checkedType(dims, floatType, stmt.paramShape.loc);
  if (failed(type))
    return failure();
  FailureOr<DictionaryAttr> init =
      initializer(*stmt.value, env, dims.empty() ? 0 : dims.back(), static_cast<int64_t>(dims.size()));
  if (failed(init))
    return failure();
  env.paramDecls[stmt.name] = stmt.nameLoc;
  FailureOr<Value> v =
      createParam(env, join(env.scope, stmt.name), *type, *init, stmt.nameLoc, stmt.frozen);
  if (failed(v))
    return failure();
  env.vars[stmt.name] = LMValue::ofTensor(*v);
  return success();
}

FailureOr<Value> MLIRGen::createParam(Env &env, const std::string &fullName,
                                      RankedTensorType type, DictionaryAttr init, ast::Loc l,
                                      bool frozen, bool reuse, bool share) {
  frozen |= env.frozen;
  share |= env.shareExisting;
  if (env.unnamedRepeat) {
    const Env::UnnamedRepeat &u = *env.unnamedRepeat;
    return error(u.call) << "'" << u.callee << "' is called a second time in this scope (first at "
                         << at(u.first) << ") and declares parameters ('" << fullName
                         << "' here); name each call's parameters: " << u.callee
                         << "(..., name = \"...\")";
  }
  auto it = cur->params.find(fullName);
  // A shared call meeting a parameter another model declared under this path
  // (both models inlined into one objective) takes it, checked alike.
  if (env.reuseParams || reuse || (share && it != cur->params.end())) {
    // A model called again, or a shared call: the same parameter, declared
    // alike (shape and frozenness) on every use.
    if (it == cur->params.end() || it->second.arg.getType() != type)
      return error(l) << "parameter '" << fullName << "' is " << describe(type)
                      << " on this call but "
                      << (it == cur->params.end()
                              ? std::string("absent on the first call")
                              : describe(cast<RankedTensorType>(it->second.arg.getType())) +
                                    " on the first call (at " + at(it->second.loc) + ")")
                      << "; shared calls and the calls of a model share their parameters";
    if (it->second.frozen != frozen)
      return error(l) << "parameter '" << fullName << "' is "
                      << (frozen ? "frozen" : "trainable") << " on this call but "
                      << (it->second.frozen ? "frozen" : "trainable") << " on the first (at "
                      << at(it->second.loc) << "); a shared parameter is frozen on every use or on none";
    return Value(it->second.arg);
  }
  if (it != cur->params.end())
    return error(l) << "duplicate parameter name '" << fullName << "' (first declared at "
                    << at(it->second.loc) << "); two models share parameters through a call with "
                    << "shared = true";
  BlockArgument arg = cur->entry->addArgument(type, loc(l));
  cur->params[fullName] = {arg, l, frozen};
  SmallVector<NamedAttribute> attrs{builder.getNamedAttr("lm.param", builder.getStringAttr(fullName)),
                                    builder.getNamedAttr("lm.init", init)};
  // lm.frozen: no gradient, never updated (docs/language.md §5).
  if (frozen)
    attrs.push_back(builder.getNamedAttr("lm.frozen", builder.getUnitAttr()));
  cur->argAttrs.push_back(builder.getDictionaryAttr(attrs));
  return Value(arg);
}

/// `blocks(v0, v1, ...)`: the parameter's last dimension in equal parts, part
/// k the constant v_k (an LSTM's bias with its forget gate at 1, a highway's
/// with its gate at 1). `lastDim` is the parameter's last dimension (0 for a
/// scalar), which the parts must divide.
FailureOr<DictionaryAttr> MLIRGen::blocksInitializer(const ast::Expr &init, Env &env, int64_t lastDim) {
  if (init.kind != ast::Expr::Kind::Call || init.args.empty() || !init.kwargs.empty())
    return error(init.loc) << "initializer 'blocks' takes the parts' values, e.g. blocks(0, 1, 0, 0)";
  SmallVector<Attribute> values;
  for (const ast::ExprPtr &a : init.args) {
    FailureOr<double> v = evalNumber(*a, env, "a value of blocks(...)");
    if (failed(v))
      return failure();
    values.push_back(builder.getF64FloatAttr(*v));
  }
  int64_t n = static_cast<int64_t>(values.size());
  if (lastDim <= 0 || lastDim % n != 0)
    return error(init.loc) << "blocks: " << n << " parts do not divide the parameter's last dimension ("
                           << (lastDim <= 0 ? std::string("a scalar has none") : std::to_string(lastDim))
                           << ")";
  return builder.getDictionaryAttr({builder.getNamedAttr("kind", builder.getStringAttr("blocks")),
                                    builder.getNamedAttr("blocks", builder.getArrayAttr(values))});
}

/// `normal(std)`, `normal(mean, std)`, `uniform(low, high)`, `zeros`, `ones`
/// (the last two with or without parentheses); keywords work too.
FailureOr<DictionaryAttr> MLIRGen::initializer(const ast::Expr &init, Env &env, int64_t lastDim, int64_t rank) {
  std::string name;
  if (init.kind == ast::Expr::Kind::Name || init.kind == ast::Expr::Kind::Call)
    name = init.name;
  if (name == "blocks")
    return blocksInitializer(init, env, lastDim);
  struct Spec {
    const char *kind;
    std::vector<const char *> params; ///< in positional order
    std::vector<double> defaults;     ///< NaN: required
  };
  const double req = std::numeric_limits<double>::quiet_NaN();
  static const std::map<std::string, int> index = {
      {"normal", 0}, {"uniform", 1}, {"zeros", 2}, {"ones", 3}, {"orthogonal", 4}};
  const Spec specs[] = {{"normal", {"mean", "std"}, {0.0, req}},
                        {"uniform", {"low", "high"}, {req, req}},
                        {"zeros", {}, {}},
                        {"ones", {}, {}},
                        {"orthogonal", {"gain", "blocks"}, {1.0, 1.0}}};
  auto it = index.find(name);
  if (it == index.end())
    return error(init.loc) << "unknown initializer '"
                           << (name.empty() ? ast::toString(init) : name)
                           << "' (expected normal(std), normal(mean, std), uniform(low, high), "
                              "zeros, ones, blocks(v0, v1, ...) or orthogonal(gain [, blocks = k]))";
  const Spec &spec = specs[it->second];
  if (init.kind == ast::Expr::Kind::Name && name != "orthogonal") {
    if (!spec.params.empty())
      return error(init.loc) << "initializer '" << name << "' needs arguments, e.g. "
                             << (name == "normal" ? "normal(0.02)" : "uniform(-0.1, 0.1)");
    return initAttr(spec.kind, {});
  }
  std::vector<double> values = spec.defaults;
  std::vector<bool> given(values.size(), false);
  size_t npos = init.kind == ast::Expr::Kind::Call ? init.args.size() : 0;
  if (npos > spec.params.size())
    return error(init.loc) << "initializer '" << name << "' takes at most " << spec.params.size()
                           << " arguments, got " << npos;
  // normal(std): one positional argument is the standard deviation.
  size_t first = (name == "normal" && npos == 1) ? 1 : 0;
  for (size_t i = 0; i < npos; ++i) {
    FailureOr<double> v = evalNumber(*init.args[i], env, "an initializer argument");
    if (failed(v))
      return failure();
    values[first + i] = *v;
    given[first + i] = true;
  }
  for (const ast::KeywordArg &kw : init.kwargs) {
    auto p = std::find_if(spec.params.begin(), spec.params.end(),
                          [&](const char *s) { return kw.name == s; });
    if (p == spec.params.end())
      return error(kw.loc) << "initializer '" << name << "' has no argument '" << kw.name << "'";
    size_t i = p - spec.params.begin();
    if (given[i])
      return error(kw.loc) << "argument '" << kw.name << "' of '" << name << "' is given twice";
    FailureOr<double> v = evalNumber(*kw.value, env, "an initializer argument");
    if (failed(v))
      return failure();
    values[i] = *v;
    given[i] = true;
  }
  SmallVector<std::pair<StringRef, double>> args;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]))
      return error(init.loc) << "initializer '" << name << "' needs '" << spec.params[i] << "'";
    args.push_back({spec.params[i], values[i]});
  }
  if (name == "normal" && values[1] < 0)
    return error(init.loc) << "normal: std must be >= 0, got " << values[1];
  if (name == "uniform" && values[0] > values[1])
    return error(init.loc) << "uniform: low (" << values[0] << ") is above high (" << values[1]
                           << ")";
  if (name == "orthogonal") {
    // A matrix (torch.nn.init.orthogonal_ needs two dimensions); blocks split
    // the last dimension, each block orthogonal on its own.
    if (rank < 2)
      return error(init.loc) << "orthogonal: the parameter must be a matrix (rank >= 2), it has rank " << rank;
    double blocks = values[1];
    if (blocks < 1 || blocks != std::floor(blocks))
      return error(init.loc) << "orthogonal: blocks must be a whole number >= 1, got " << blocks;
    if (lastDim % static_cast<int64_t>(blocks) != 0)
      return error(init.loc) << "orthogonal: " << static_cast<int64_t>(blocks)
                             << " blocks do not divide the parameter's last dimension (" << lastDim << ")";
  }
  return initAttr(spec.kind, args);
}

} // namespace mlir::lm
