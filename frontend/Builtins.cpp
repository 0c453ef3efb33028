//===- Builtins.cpp - Builtin functions of the .lm language ---------------===//
//
// embed, layernorm, gelu, softmax, attention, transpose, reshape,
// cross_entropy, sample, to_float, repeat (with extra arguments for the block), and the
// compile-time sqrt/exp/log/floor/ceil; the zoo's math builtins are in
// BuiltinsMath.cpp (their signatures are in the one table here). Each builtin has
// a signature (ordered parameter names, how many are required) so that
// arity and keyword errors read the same for all of them. The builtins that
// emit one elementwise op (tanh, gt, where, ...) take their names and
// signatures from the elementwise table (contract/elementwise.h, generated
// from the ODS), so a new one needs no line here.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"
#include "contract/elementwise.h"
#include "contract/shape_rules.h"

#include <cmath>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

namespace {

struct Signature {
  const char *name;
  std::vector<const char *> params;
  size_t required;
};

const std::vector<Signature> &signatures() {
  static const std::vector<Signature> table = [] {
    std::vector<Signature> sigs = {
        {"embed", {"table", "ids"}, 2},
        {"layernorm", {"x", "eps", "bias"}, 1},
        {"gelu", {"x", "approximate"}, 1},
        {"softmax", {"x"}, 1},
        {"attention", {"q", "k", "v", "heads", "causal", "kv_heads", "mask", "bias", "segments", "scale",
                       "dropout"},
         4},
        {"transpose", {"x", "perm"}, 1},
        {"reshape", {"x", "shape"}, 2},
        {"cross_entropy", {"logits", "targets", "ignore_index"}, 2},
        {"accuracy", {"logits", "targets", "ignore_index"}, 2},
        {"sample", {"logits", "bits"}, 2},
        {"dropout", {"x", "p", "shared"}, 2},
        {"to_float", {"x"}, 1},
        {"repeat", {"n", "block", "x"}, 3},
        {"floor", {"x"}, 1},
        {"ceil", {"x"}, 1},
        // The zoo's math (BuiltinsMath.cpp) besides the elementwise table's.
        {"sum", {"x", "axis", "keepdim"}, 1},
        {"mean", {"x", "axis", "keepdim"}, 1},
        {"max", {"x", "axis", "keepdim"}, 1},
        {"concat", {"xs", "axis"}, 1},
        {"rmsnorm", {"x", "eps"}, 1},
        {"take_along_axis", {"x", "indices", "axis"}, 3},
        {"index_constant", {"x", "floor"}, 1},
        {"min", {"a", "b"}, 2},
        {"arange", {"n", "stop"}, 1},
        {"cache_len", {"T"}, 1},
        // ELMo's sequence layers (BuiltinsSequence.cpp).
        {"conv1d", {"x", "w", "b"}, 2},
        {"lstm", {"x", "w_input", "w_state", "b", "w_proj", "cell_clip", "proj_clip", "reverse"}, 5},
    };
    // The elementwise table's, each with the op's operand count (all required).
    for (const lmrt::elementwise::ElementwiseOp &op : lmrt::elementwise::allOps())
      if (op.builtin)
        sigs.push_back({op.builtin, {op.builtinParams, op.builtinParams + op.arity},
                        static_cast<size_t>(op.arity)});
    return sigs;
  }();
  return table;
}

const Signature *findSignature(const std::string &name) {
  for (const Signature &s : signatures())
    if (name == s.name)
      return &s;
  return nullptr;
}

std::string spell(const Signature &sig) {
  std::string s = std::string(sig.name) + "(";
  for (size_t i = 0; i < sig.params.size(); ++i) {
    if (i == sig.required)
      s += i ? " [, " : "[";
    else if (i)
      s += ", ";
    s += sig.params[i];
  }
  if (sig.required < sig.params.size())
    s += "]";
  return s + ")";
}

} // namespace

bool MLIRGen::isBuiltin(const std::string &name) { return findSignature(name) != nullptr; }

std::vector<std::string> MLIRGen::builtinNames() {
  std::vector<std::string> names;
  for (const Signature &s : signatures())
    names.push_back(s.name);
  return names;
}

bool MLIRGen::isPlainTranspose(const ast::Expr &e) {
  return e.kind == ast::Expr::Kind::Call && e.name == "transpose" && e.args.size() == 1 &&
         e.kwargs.empty();
}

FailureOr<LMValue> MLIRGen::emitBuiltin(const ast::Expr &call, Env &env) {
  const Signature &sig = *findSignature(call.name);
  // repeat takes extra arguments for the block; it matches them itself.
  if (call.name == "repeat")
    return emitRepeat(call, env);
  // `name = "..."` names the parameters of the builtins that declare some.
  const bool takesName = call.name == "layernorm" || call.name == "rmsnorm";
  size_t given = call.args.size();
  for (const ast::KeywordArg &kw : call.kwargs)
    given += takesName && isScopeKeyword(kw.name) ? 0 : 1;
  if (call.args.size() > sig.params.size())
    return error(call.loc) << "'" << sig.name << "' takes at most " << sig.params.size()
                           << (sig.params.size() == 1 ? " argument" : " arguments") << ", got "
                           << given << "; usage: " << spell(sig);
  // Match arguments to the signature: positional first, then keywords.
  std::vector<const ast::Expr *> arg(sig.params.size(), nullptr);
  for (size_t i = 0; i < call.args.size(); ++i)
    arg[i] = call.args[i].get();
  for (const ast::KeywordArg &kw : call.kwargs) {
    if (takesName && isScopeKeyword(kw.name))
      continue;
    size_t i = 0;
    while (i < sig.params.size() && kw.name != sig.params[i])
      ++i;
    if (i == sig.params.size())
      return error(kw.loc) << "'" << sig.name << "' has no argument '" << kw.name
                           << "'; usage: " << spell(sig);
    if (arg[i])
      return error(kw.loc) << "argument '" << kw.name << "' of '" << sig.name
                           << "' is given twice";
    arg[i] = kw.value.get();
  }
  for (size_t i = 0; i < sig.required; ++i)
    if (!arg[i])
      return error(call.loc) << "'" << sig.name << "' takes " << sig.required
                             << (sig.required == 1 ? " argument" : " arguments")
                             << (sig.required < sig.params.size() ? " or more" : "") << ", got "
                             << given << " (missing '" << sig.params[i] << "'); usage: "
                             << spell(sig);

  const std::string name = call.name;
  Location l = loc(call.loc);

  // Compile-time math on numbers; on tensors sqrt, exp and log are ops (emitMath).
  if (name == "sqrt" || name == "exp" || name == "log" || name == "floor" || name == "ceil") {
    FailureOr<LMValue> v = eval(*arg[0], env);
    if (failed(v))
      return failure();
    if (v->isTensor() && name != "floor" && name != "ceil")
      return emitMath(call, arg, *v, env);
    FailureOr<double> x = evalNumber(*arg[0], env, "the argument of '" + name + "'");
    if (failed(x))
      return failure();
    // floor and ceil give integers: LLaMA's d_ff = multiple_of * ceil(...).
    if (name == "floor" || name == "ceil") {
      double r = name == "floor" ? std::floor(*x) : std::ceil(*x);
      if (!(std::fabs(r) < 9.0e15))
        return error(call.loc) << "'" << ast::toString(call) << "' is too large for an integer";
      return LMValue::ofInt(static_cast<int64_t>(r));
    }
    if (name == "sqrt" && *x < 0)
      return error(call.loc) << "sqrt of a negative number (" << *x << ")";
    if (name == "log" && *x <= 0)
      return error(call.loc) << "log of a non-positive number (" << *x << ")";
    double r = name == "sqrt" ? std::sqrt(*x) : name == "exp" ? std::exp(*x) : std::log(*x);
    if (!std::isfinite(r))
      return error(call.loc) << "'" << ast::toString(call) << "' overflows";
    return LMValue::ofFloat(r);
  }

  // The keys a causal attention over T new positions sees (docs/language.md
  // §12): T where pos is 0, the window of the caches in a decode function.
  if (name == "cache_len") {
    FailureOr<int64_t> n = evalDim(*arg[0], env, "the new positions T of 'cache_len'");
    if (failed(n))
      return failure();
    return LMValue::ofInt(*n + (decode ? decode->maxOffset : 0));
  }
  if (name == "concat" || name == "arange")
    return emitMath(call, arg, LMValue(), env);
  // The first argument of every other builtin is a tensor.
  FailureOr<LMValue> first = eval(*arg[0], env);
  if (failed(first))
    return failure();
  if (isMathBuiltin(name))
    return emitMath(call, arg, *first, env);
  if (isSequenceBuiltin(name))
    return emitSequence(call, arg, *first, env);
  if (!first->isTensor())
    return error(arg[0]->loc) << "argument '" << sig.params[0] << "' of '" << name
                              << "' must be a tensor, got " << describe(*first);
  RankedTensorType t0 = first->type();
  shapes::Dims d0 = first->dims();
  auto requireFloat = [&](const LMValue &v, const ast::Expr &e, const char *what) {
    return floatTensor(v, e.loc, std::string("argument '") + what + "' of '" + name + "'");
  };
  std::string err;

  if (name == "gelu" || name == "softmax") {
    FailureOr<Value> x = requireFloat(*first, *arg[0], "x");
    if (failed(x))
      return failure();
    if (name == "softmax" && t0.getRank() == 0)
      return error(call.loc) << "softmax needs a tensor of rank >= 1, got " << describe(t0);
    if (name == "softmax")
      return LMValue::ofTensor(builder.create<SoftmaxOp>(l, *x).getResult());
    // PyTorch's spelling: approximate = "tanh" (lm.gelu, the default here, as
    // GPT-2) or "none" (lm.gelu_erf, the exact form: HF's "gelu").
    std::string form = "tanh";
    if (arg[1]) {
      FailureOr<LMValue> a = eval(*arg[1], env);
      if (failed(a))
        return failure();
      if (a->kind != LMValue::Kind::String || (a->str != "tanh" && a->str != "none"))
        return error(arg[1]->loc) << "'approximate' of 'gelu' must be \"tanh\" or \"none\" (the exact "
                                  << "erf form), got " << describe(*a);
      form = a->str;
    }
    Value r = form == "none" ? builder.create<GeluErfOp>(l, *x).getResult()
                             : builder.create<GeluOp>(l, *x).getResult();
    return LMValue::ofTensor(r);
  }

  if (name == "layernorm") {
    FailureOr<Value> x = requireFloat(*first, *arg[0], "x");
    if (failed(x))
      return failure();
    if (t0.getRank() == 0)
      return error(call.loc) << "layernorm needs a tensor of rank >= 1, got " << describe(t0);
    double eps = 1e-5;
    if (arg[1]) {
      FailureOr<double> v = evalNumber(*arg[1], env, "eps");
      if (failed(v))
        return failure();
      if (std::string bad = shapes::layerNormEpsilon(*v); !bad.empty())
        return error(arg[1]->loc) << bad;
      eps = *v;
    }
    bool bias = true;
    if (arg[2]) {
      FailureOr<LMValue> c = eval(*arg[2], env);
      if (failed(c))
        return failure();
      if (c->kind != LMValue::Kind::Bool)
        return error(arg[2]->loc) << "bias must be true or false, got " << describe(*c);
      bias = c->boolValue;
    }
    // Its parameters live in a scope of their own: layernorm.gamma, or the call's name.
    FailureOr<CallFlags> flags = callFlags(call, env);
    if (failed(flags))
      return failure();
    bool reuse = false;
    FailureOr<std::string> scopeOr = callScope(env, call, "layernorm", nullptr, *flags, &reuse);
    if (failed(scopeOr))
      return failure();
    std::string scope = *scopeOr;
    auto pt = tensorType({d0.back()}, floatType);
    FailureOr<Value> gamma = createParam(env, scope + ".gamma", pt, initAttr("ones", {}),
                                         call.loc, flags->frozen, reuse, flags->shared);
    if (failed(gamma))
      return failure();
    // Without a bias, beta is a constant 0 (no parameter): the kernel is the same.
    FailureOr<Value> beta =
        bias ? createParam(env, scope + ".beta", pt, initAttr("zeros", {}), call.loc,
                           flags->frozen, reuse, flags->shared)
             : FailureOr<Value>(Value(builder.create<ConstantOp>(
                   l, TypeRange{pt}, ValueRange{},
                   ArrayRef<NamedAttribute>{builder.getNamedAttr(
                       "value", DenseElementsAttr::get(pt, FloatAttr::get(floatType, 0.0)))})));
    if (failed(beta))
      return failure();
    Value r = builder.create<LayerNormOp>(l, *x, *gamma, *beta, builder.getF64FloatAttr(eps));
    return LMValue::ofTensor(r);
  }

  if (name == "embed") {
    FailureOr<Value> table = requireFloat(*first, *arg[0], "table");
    if (failed(table))
      return failure();
    FailureOr<LMValue> ids = eval(*arg[1], env);
    if (failed(ids))
      return failure();
    if (!ids->isTensor() || !ids->type().getElementType().isInteger(32))
      return error(arg[1]->loc) << "argument 'ids' of 'embed' must be an i32 tensor, got "
                                << describe(*ids);
    std::optional<shapes::Dims> out = shapes::embedding(d0, ids->dims(), err);
    if (!out)
      return error(call.loc) << err;
    if (failed(checkElementCount(*out, call.loc)))
      return failure();
    return LMValue::ofTensor(builder.create<EmbeddingOp>(l, *table, ids->tensor));
  }

  if (name == "attention") {
    Value qkv[3];
    shapes::Dims dims[3];
    for (int i = 0; i < 3; ++i) {
      FailureOr<LMValue> v = i == 0 ? first : eval(*arg[i], env);
      if (failed(v))
        return failure();
      FailureOr<Value> t = requireFloat(*v, *arg[i], sig.params[i]);
      if (failed(t))
        return failure();
      qkv[i] = *t;
      auto shape = cast<RankedTensorType>(t->getType()).getShape();
      dims[i] = {shape.begin(), shape.end()};
    }
    FailureOr<int64_t> heads = evalInt(*arg[3], env, "heads");
    if (failed(heads))
      return failure();
    if (*heads < 1)
      return error(arg[3]->loc) << "heads must be >= 1, got " << *heads;
    bool causal = false;
    if (arg[4]) {
      FailureOr<LMValue> c = eval(*arg[4], env);
      if (failed(c))
        return failure();
      if (c->kind != LMValue::Kind::Bool)
        return error(arg[4]->loc) << "causal must be true or false, got " << describe(*c);
      causal = c->boolValue;
    }
    int64_t kvHeads = 0;
    if (arg[5]) {
      FailureOr<int64_t> v = evalInt(*arg[5], env, "kv_heads");
      if (failed(v))
        return failure();
      if (*v < 1)
        return error(arg[5]->loc) << "kv_heads must be >= 1, got " << *v;
      kvHeads = *v == *heads ? 0 : *v;
    }
    // The key padding mask [B, Tk] (1: attend, 0: padding): a float tensor, like q.
    Value mask;
    shapes::Dims maskDims;
    if (arg[6]) {
      FailureOr<LMValue> m = eval(*arg[6], env);
      if (failed(m))
        return failure();
      FailureOr<Value> t = requireFloat(*m, *arg[6], "mask");
      if (failed(t))
        return failure();
      mask = *t;
      auto shape = cast<RankedTensorType>(t->getType()).getShape();
      maskDims = {shape.begin(), shape.end()};
    }
    // dropout = p: the probabilities' dropout, in the fused kernel of
    // lm.biased_attention. Like dropout(), only an objective's training graph
    // keeps it (-lm-eval-mode sets p to 0 elsewhere); p = 0, a model's own
    // programs and decoding emit the op they would without it.
    double dropout = 0;
    if (arg[10]) {
      FailureOr<double> p = evalNumber(*arg[10], env, "the attention dropout rate 'dropout' of 'attention'");
      if (failed(p))
        return failure();
      std::string bad = shapes::dropoutRate(*p, "attention");
      if (!bad.empty())
        return error(arg[10]->loc) << bad;
      if (cur->isObjective && !decode)
        dropout = *p;
    }
    if (arg[7] || arg[8] || arg[9] || dropout > 0)
      return emitBiasedAttention(call, arg, env, qkv, *heads, causal, kvHeads, mask, dropout);
    if (!shapes::attention(dims[0], dims[1], dims[2], *heads, err, kvHeads, causal, mask ? &maskDims : nullptr))
      return error(call.loc) << err;
    if (mask) { // padded or cross-attention: no key/value cache, so no decode program
      if (decode) {
        decode->notCausal = true;
        return failure();
      }
      return LMValue::ofTensor(builder.create<MaskedAttentionOp>(l, qkv[0], qkv[1], qkv[2], mask, *heads, causal,
                                                                 kvHeads));
    }
    if (decode) {
      if (!causal) { // not a causal model: it gets no decode program (no error shown)
        decode->notCausal = true;
        return failure();
      }
      FailureOr<Value> r = emitCachedAttention(env, call.loc, qkv[0], qkv[1], qkv[2], *heads, kvHeads);
      return failed(r) ? FailureOr<LMValue>(failure()) : LMValue::ofTensor(*r);
    }
    Value r = builder.create<AttentionOp>(l, qkv[0], qkv[1], qkv[2], *heads, causal, kvHeads);
    return LMValue::ofTensor(r);
  }

  if (name == "transpose") {
    FailureOr<Value> x = requireFloat(*first, *arg[0], "x");
    if (failed(x))
      return failure();
    shapes::Dims perm;
    if (arg[1]) {
      FailureOr<LMValue> p = eval(*arg[1], env);
      if (failed(p))
        return failure();
      if (p->kind != LMValue::Kind::List)
        return error(arg[1]->loc) << "perm must be a list of dimensions like [0, 2, 1], got "
                                  << describe(*p);
      for (const LMValue &item : p->items) {
        std::optional<int64_t> i = item.asInt();
        if (!i)
          return error(arg[1]->loc) << "perm must list integers, got " << describe(item);
        perm.push_back(*i);
      }
    } else {
      if (t0.getRank() < 2)
        return error(call.loc) << "transpose needs a tensor of rank >= 2, got " << describe(t0);
      for (int64_t i = 0; i < t0.getRank(); ++i)
        perm.push_back(i);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    }
    if (!shapes::transpose(d0, perm, err))
      return error(call.loc) << err;
    Value r = builder.create<TransposeOp>(l, *x, perm);
    return LMValue::ofTensor(r);
  }

  if (name == "reshape") {
    FailureOr<Value> x = requireFloat(*first, *arg[0], "x");
    if (failed(x))
      return failure();
    FailureOr<LMValue> s = eval(*arg[1], env);
    if (failed(s))
      return failure();
    if (s->kind != LMValue::Kind::List)
      return error(arg[1]->loc) << "shape must be a list like [B, T, d], got " << describe(*s);
    // One dimension may be -1: it takes whatever the element count leaves.
    // Entries are >= 1, so `known` never reaches 0; it can overflow, though,
    // and the input's count cannot (types are bounded by checkedType).
    shapes::Dims to;
    int inferred = -1;
    int64_t known = 1, total = 1;
    for (int64_t d : d0)
      total *= d;
    for (const LMValue &item : s->items) {
      std::optional<int64_t> d = item.asInt();
      if (!d || (*d < 1 && *d != -1))
        return error(arg[1]->loc) << "shape entries must be positive integers or one -1, got "
                                  << describe(item);
      if (*d == -1) {
        if (inferred >= 0)
          return error(arg[1]->loc) << "only one dimension of a reshape can be -1";
        inferred = to.size();
      } else if (__builtin_mul_overflow(known, *d, &known)) {
        return error(arg[1]->loc) << "cannot reshape " << describe(t0) << " (" << total
                                  << " elements) into " << ast::toString(*arg[1])
                                  << ": the product of its dimensions overflows";
      }
      to.push_back(*d);
    }
    if (inferred >= 0) {
      if (total % known != 0)
        return error(arg[1]->loc) << "cannot reshape " << describe(t0) << " ("
                                  << total << " elements) into a multiple of " << known;
      to[inferred] = total / known;
    }
    std::optional<shapes::Dims> out = shapes::reshape(d0, to, err);
    if (!out)
      return error(call.loc) << err;
    return LMValue::ofTensor(builder.create<ReshapeOp>(l, tensorType(*out, floatType), *x));
  }

  if (name == "cross_entropy" || name == "accuracy") {
    FailureOr<Value> logits = requireFloat(*first, *arg[0], "logits");
    if (failed(logits))
      return failure();
    FailureOr<LMValue> targets = eval(*arg[1], env);
    if (failed(targets))
      return failure();
    if (!targets->isTensor() || !targets->type().getElementType().isInteger(32))
      return error(arg[1]->loc) << "argument 'targets' of '" << name << "' must be an i32 tensor, got "
                                << describe(*targets);
    int64_t ignore = -100;
    if (arg[2]) {
      FailureOr<int64_t> v = evalInt(*arg[2], env, "ignore_index");
      if (failed(v))
        return failure();
      ignore = *v;
    }
    if (!shapes::crossEntropy(d0, targets->dims(), err))
      return error(call.loc) << err;
    if (name == "accuracy")
      return LMValue::ofTensor(builder.create<AccuracyOp>(l, *logits, targets->tensor, ignore));
    Value r = builder.create<CrossEntropyOp>(l, *logits, targets->tensor, ignore);
    return LMValue::ofTensor(r);
  }
  // sample(logits, bits): i32 ids drawn from softmax(logits) with the given random
  // bits (lm.sample); integers carry no gradient, so nothing flows back through it.
  if (name == "sample") {
    FailureOr<Value> logits = requireFloat(*first, *arg[0], "logits");
    if (failed(logits))
      return failure();
    FailureOr<LMValue> bits = eval(*arg[1], env);
    if (failed(bits))
      return failure();
    if (!bits->isTensor() || !bits->type().getElementType().isInteger(32))
      return error(arg[1]->loc) << "argument 'bits' of 'sample' must be an i32 tensor (random bits, "
                                   "such as the mlm transform's random_bits input), got "
                                << describe(*bits);
    if (!shapes::sample(d0, bits->dims(), err))
      return error(call.loc) << err;
    return LMValue::ofTensor(builder.create<SampleOp>(l, *logits, bits->tensor).getResult());
  }
  // dropout(x, p): lm.dropout in an objective (kept by the training step only,
  // -lm-eval-mode), the identity in a model's own programs (forward, decode)
  // and wherever p = 0, so a dropout-free model compiles to the plan it had.
  if (name == "dropout") {
    FailureOr<Value> x = requireFloat(*first, *arg[0], "x");
    if (failed(x))
      return failure();
    FailureOr<double> p = evalNumber(*arg[1], env, "the rate 'p' of 'dropout'");
    if (failed(p))
      return failure();
    std::string bad = shapes::dropoutRate(*p);
    if (!bad.empty())
      return error(arg[1]->loc) << bad;
    bool shared = false;
    if (arg[2]) {
      FailureOr<LMValue> v = eval(*arg[2], env);
      if (failed(v))
        return failure();
      if (v->kind != LMValue::Kind::Bool)
        return error(arg[2]->loc) << "shared must be true or false, got " << describe(*v);
      shared = v->boolValue;
    }
    if (*p == 0 || !cur->isObjective || decode)
      return *first;
    if (shared)
      return emitSharedDropout(*x, d0, *p, call.loc);
    FailureOr<Value> key = dropoutKey(d0, call.loc);
    if (failed(key))
      return failure();
    return LMValue::ofTensor(
        builder.create<DropoutOp>(l, *x, *key, builder.getF64FloatAttr(*p),
                                                      builder.getI64IntegerAttr(cur->dropoutSites++))
            .getResult());
  }
  if (name == "to_float") {
    if (!t0.getElementType().isInteger(32))
      return error(arg[0]->loc) << "argument 'x' of 'to_float' must be an i32 tensor, got "
                                << describe(*first);
    auto type = RankedTensorType::get(t0.getShape(), floatType);
    return LMValue::ofTensor(builder.create<ToFloatOp>(l, type, first->tensor).getResult());
  }
  return error(call.loc) << "builtin '" << name << "' has no emitter";
}

/// Wraps the location of every op from after `before` (the block's start when
/// null) up to `end` in a NameLoc named `layer`: one copy of a repeated block,
/// a layer. -lm-remat (passes/Remat.cpp) reads it to keep each layer's input
/// and recompute the rest. A location, not an attribute: CSE and the
/// canonicalizer ignore locations, so the plans of every compilation stay
/// byte-identical, and the plan writer looks through a NameLoc for file:line:col.
/// An op of a nested repeat ends up with the outer layer's name outermost.
void MLIRGen::tagLayer(Block *block, Operation *before, Block::iterator end, const std::string &layer) {
  StringAttr name = builder.getStringAttr(layer);
  Block::iterator it = before ? std::next(before->getIterator()) : block->begin();
  for (; it != end; ++it)
    it->setLoc(NameLoc::get(name, it->getLoc()));
}

/// `repeat(n, block, x, extra...)` = block(block(...block(x, extra...), extra...)),
/// n copies, the i-th with its parameters under `<name>.<i>` (`name` the
/// call's `name = "..."`, else the block's name). The block must map x to a
/// value of the same type, or the copies could not chain; the extra arguments
/// (RoPE tables, masks, numbers) reach every copy unchanged.
FailureOr<LMValue> MLIRGen::emitRepeat(const ast::Expr &call, Env &env) {
  const char *usage =
      "repeat(n, block, x, extra arguments... [, name = \"...\", shared = false, frozen = false])";
  const ast::Expr *pos[3] = {nullptr, nullptr, nullptr};
  const char *names[3] = {"n", "block", "x"};
  for (size_t i = 0; i < 3 && i < call.args.size(); ++i)
    pos[i] = call.args[i].get();
  for (const ast::KeywordArg &kw : call.kwargs) {
    if (isScopeKeyword(kw.name))
      continue;
    size_t i = 0;
    while (i < 3 && kw.name != names[i])
      ++i;
    if (i == 3)
      return error(kw.loc) << "'repeat' has no argument '" << kw.name << "'; usage: " << usage;
    if (pos[i])
      return error(kw.loc) << "argument '" << kw.name << "' of 'repeat' is given twice";
    pos[i] = kw.value.get();
  }
  for (size_t i = 0; i < 3; ++i)
    if (!pos[i])
      return error(call.loc) << "'repeat' needs '" << names[i] << "'; usage: " << usage;
  const ast::Expr *nExpr = pos[0], *blockExpr = pos[1], *xExpr = pos[2];
  FailureOr<int64_t> n = evalInt(*nExpr, env, "the repeat count");
  if (failed(n))
    return failure();
  // Every copy is inlined, so a huge count would only hang the compiler.
  constexpr int64_t maxRepeat = 10000;
  if (*n < 1 || *n > maxRepeat)
    return error(nExpr->loc) << "the repeat count must be between 1 and " << maxRepeat << ", got "
                             << *n;
  const ast::Function *fn =
      blockExpr->kind == ast::Expr::Kind::Name ? ast.lookup(blockExpr->name) : nullptr;
  if (!fn || fn->kind != ast::Function::Kind::Block)
    return error(blockExpr->loc) << "the second argument of 'repeat' must name a block, got '"
                                 << ast::toString(*blockExpr) << "'";
  size_t extras = call.args.size() > 3 ? call.args.size() - 3 : 0;
  if (fn->params.size() != 1 + extras)
    return error(blockExpr->loc) << "repeat passes block '" << fn->name << "' " << 1 + extras
                                 << (extras ? " arguments (x and " + std::to_string(extras) +
                                                  " extra)"
                                            : std::string(" argument"))
                                 << ", but it takes " << fn->params.size();
  FailureOr<LMValue> x = eval(*xExpr, env);
  if (failed(x))
    return failure();
  std::vector<LMValue> extra;
  std::vector<ast::Loc> argLocs{xExpr->loc};
  for (size_t i = 3; i < call.args.size(); ++i) {
    FailureOr<LMValue> v = eval(*call.args[i], env);
    if (failed(v))
      return failure();
    extra.push_back(*v);
    argLocs.push_back(call.args[i]->loc);
  }

  FailureOr<CallFlags> flags = callFlags(call, env);
  if (failed(flags))
    return failure();
  Env proto; // what every copy inherits
  bool reuse = false;
  FailureOr<std::string> scope = callScope(env, call, fn->name, &proto, *flags, &reuse);
  if (failed(scope))
    return failure();
  if (env.unnamedRepeat)
    proto.unnamedRepeat = env.unnamedRepeat;
  for (int64_t i = 0; i < *n; ++i) {
    Env callee;
    // shared = true (ALBERT's cross-layer sharing): one set of parameters at
    // <scope>.*, declared by the first copy and reused by the others.
    callee.scope = flags->shared ? *scope : *scope + "." + std::to_string(i);
    callee.reuseParams = env.reuseParams || reuse || (flags->shared && i > 0);
    callee.shareExisting = env.shareExisting || flags->shared;
    callee.frozen = env.frozen || flags->frozen;
    callee.unnamedRepeat = proto.unnamedRepeat;
    std::vector<LMValue> args{*x};
    args.insert(args.end(), extra.begin(), extra.end());
    Block *block = builder.getInsertionBlock();
    Block::iterator end = builder.getInsertionPoint();
    Operation *before = end == block->begin() ? nullptr : &*std::prev(end);
    FailureOr<LMValue> y = inlineFunction(*fn, std::move(args), argLocs, call.loc, std::move(callee));
    if (failed(y))
      return failure();
    // Named after the copy's parameter scope; with shared parameters every copy
    // is still its own layer.
    tagLayer(block, before, builder.getInsertionPoint(), *scope + "." + std::to_string(i));
    bool same = y->kind == x->kind &&
                (!y->isTensor() || y->tensor.getType() == x->tensor.getType());
    if (!same)
      return error(call.loc) << "repeat needs block '" << fn->name
                             << "' to return the type it takes, but it maps " << describe(*x)
                             << " to " << describe(*y);
    x = y;
  }
  return *x;
}

} // namespace mlir::lm
