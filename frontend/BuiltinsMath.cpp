//===- BuiltinsMath.cpp - The zoo's math builtins of the .lm language -----===//
//
// Elementwise math (tanh, sigmoid, log_sigmoid, relu, silu, exp, log, sqrt,
// rsqrt, sin, cos), stop_gradient, comparisons and where, the reductions sum,
// mean and max over axes, concat, rmsnorm and arange. Each maps to one lm op
// or a short composition: sum is lm.sum_to to the kept shape (then a
// reshape), mean is that sum times 1/n, concat of n tensors is n - 1 binary
// lm.concat ops. Signatures are in Builtins.cpp's table.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"
#include "runtime/kernels/shape_rules.h"

#include <algorithm>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

namespace {

const char *const kUnary[] = {"tanh", "sigmoid", "log_sigmoid", "relu", "silu", "exp",
                              "log",  "sqrt",    "rsqrt",       "sin",  "cos",  "stop_gradient"};
const char *const kCompare[] = {"gt", "ge", "lt", "le", "eq", "ne"};

template <size_t N> bool among(const std::string &name, const char *const (&list)[N]) {
  return std::any_of(std::begin(list), std::end(list), [&](const char *s) { return name == s; });
}

} // namespace

bool MLIRGen::isMathBuiltin(const std::string &name) {
  return among(name, kUnary) || among(name, kCompare) || name == "where" || name == "sum" ||
         name == "mean" || name == "max" || name == "rmsnorm";
}

/// The axes of `sum(x, axis = ...)`: an integer or a list of them, negative
/// ones counting from the end; none means every axis. Sorted, distinct.
static FailureOr<SmallVector<int64_t>> reductionAxes(MLIRGen &gen, const ast::Expr *axisExpr,
                                                     Env &env, int64_t rank) {
  SmallVector<int64_t> axes;
  if (!axisExpr) {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return axes;
  }
  FailureOr<LMValue> v = gen.eval(*axisExpr, env);
  if (failed(v))
    return failure();
  std::vector<LMValue> items = v->kind == LMValue::Kind::List ? v->items : std::vector<LMValue>{*v};
  for (const LMValue &item : items) {
    std::optional<int64_t> a = item.asInt();
    if (!a)
      return gen.error(axisExpr->loc) << "axis must be an integer or a list of integers, got "
                                      << describe(item);
    int64_t norm = *a < 0 ? *a + rank : *a;
    if (norm < 0 || norm >= rank)
      return gen.error(axisExpr->loc) << "axis " << *a << " is outside a tensor of rank " << rank;
    if (std::find(axes.begin(), axes.end(), norm) != axes.end())
      return gen.error(axisExpr->loc) << "axis " << *a << " is listed twice";
    axes.push_back(norm);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

FailureOr<LMValue> MLIRGen::emitMath(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                     const LMValue &first, Env &env) {
  const std::string &name = call.name;
  Location l = loc(call.loc);
  std::string err;
  auto operand = [&](const LMValue &v, const ast::Expr &e, const std::string &what) {
    return floatTensor(v, e.loc, "argument '" + what + "' of '" + name + "'");
  };
  auto dimsOf = [](Value v) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
    return shapes::Dims(s.begin(), s.end());
  };

  if (among(name, kUnary)) {
    if (!first.isTensor())
      return error(arg[0]->loc) << "argument 'x' of '" << name << "' must be a tensor, got "
                                << describe(first);
    FailureOr<Value> x = operand(first, *arg[0], "x");
    if (failed(x))
      return failure();
    Value r;
    if (name == "tanh") r = builder.create<TanhOp>(l, *x);
    else if (name == "sigmoid") r = builder.create<SigmoidOp>(l, *x);
    else if (name == "log_sigmoid") r = builder.create<LogSigmoidOp>(l, *x);
    else if (name == "relu") r = builder.create<ReluOp>(l, *x);
    else if (name == "silu") r = builder.create<SiluOp>(l, *x);
    else if (name == "exp") r = builder.create<ExpOp>(l, *x);
    else if (name == "log") r = builder.create<LogOp>(l, *x);
    else if (name == "sqrt") r = builder.create<SqrtOp>(l, *x);
    else if (name == "rsqrt") r = builder.create<RsqrtOp>(l, *x);
    else if (name == "sin") r = builder.create<SinOp>(l, *x);
    else if (name == "cos") r = builder.create<CosOp>(l, *x);
    else r = builder.create<StopGradientOp>(l, *x);
    return LMValue::ofTensor(r);
  }

  if (among(name, kCompare) || name == "where") {
    // Operands: numbers become scalars; at least one must be a tensor.
    size_t n = name == "where" ? 3 : 2;
    SmallVector<Value> xs;
    bool anyTensor = false;
    for (size_t i = 0; i < n; ++i) {
      FailureOr<LMValue> v = i == 0 ? FailureOr<LMValue>(first) : eval(*arg[i], env);
      if (failed(v))
        return failure();
      anyTensor |= v->isTensor();
      const char *what = name == "where" ? (i == 0 ? "cond" : i == 1 ? "a" : "b") : (i == 0 ? "a" : "b");
      FailureOr<Value> x = operand(*v, *arg[i], what);
      if (failed(x))
        return failure();
      xs.push_back(*x);
    }
    if (!anyTensor)
      return error(call.loc) << "'" << name << "' needs a tensor operand (it builds a mask)";
    std::optional<shapes::Dims> out =
        n == 3 ? shapes::where(dimsOf(xs[0]), dimsOf(xs[1]), dimsOf(xs[2]), err)
               : shapes::broadcast(dimsOf(xs[0]), dimsOf(xs[1]), err, name.c_str());
    if (!out)
      return error(call.loc) << err;
    if (failed(checkElementCount(*out, call.loc)))
      return failure();
    Value r;
    if (name == "gt") r = builder.create<GtOp>(l, xs[0], xs[1]);
    else if (name == "ge") r = builder.create<GeOp>(l, xs[0], xs[1]);
    else if (name == "lt") r = builder.create<LtOp>(l, xs[0], xs[1]);
    else if (name == "le") r = builder.create<LeOp>(l, xs[0], xs[1]);
    else if (name == "eq") r = builder.create<EqOp>(l, xs[0], xs[1]);
    else if (name == "ne") r = builder.create<NeOp>(l, xs[0], xs[1]);
    else r = builder.create<WhereOp>(l, xs[0], xs[1], xs[2]);
    return LMValue::ofTensor(r);
  }

  if (name == "sum" || name == "mean" || name == "max") {
    if (!first.isTensor())
      return error(arg[0]->loc) << "argument 'x' of '" << name << "' must be a tensor, got "
                                << describe(first);
    FailureOr<Value> x = operand(first, *arg[0], "x");
    if (failed(x))
      return failure();
    shapes::Dims dims = dimsOf(*x);
    if (dims.empty())
      return error(call.loc) << "'" << name << "' needs a tensor of rank >= 1, got "
                             << describe(first);
    FailureOr<SmallVector<int64_t>> axes = reductionAxes(*this, arg[1], env, dims.size());
    if (failed(axes))
      return failure();
    bool keepdim = false;
    if (arg[2]) {
      FailureOr<LMValue> k = eval(*arg[2], env);
      if (failed(k))
        return failure();
      if (k->kind != LMValue::Kind::Bool)
        return error(arg[2]->loc) << "keepdim must be true or false, got " << describe(*k);
      keepdim = k->boolValue;
    }
    shapes::Dims axesDims(axes->begin(), axes->end());
    std::optional<shapes::Dims> kept = shapes::reduceAxes(dims, axesDims, err, name.c_str());
    if (!kept)
      return error(call.loc) << err;
    Value r;
    if (name == "max") {
      r = builder.create<ReduceMaxOp>(l, *x, axesDims);
    } else {
      r = builder.create<SumToOp>(l, tensorType(*kept, floatType), *x);
      if (name == "mean") {
        int64_t count = 1;
        for (int64_t a : *axes)
          count *= dims[a];
        r = builder.create<MulOp>(l, r, constantScalar(1.0 / double(count), call.loc));
      }
    }
    if (!keepdim) {
      shapes::Dims dropped;
      for (size_t i = 0; i < dims.size(); ++i)
        if (!std::count(axes->begin(), axes->end(), int64_t(i)))
          dropped.push_back(dims[i]);
      r = builder.create<ReshapeOp>(l, tensorType(dropped, floatType), r);
    }
    return LMValue::ofTensor(r);
  }

  if (name == "concat") {
    FailureOr<LMValue> list = eval(*arg[0], env);
    if (failed(list))
      return failure();
    if (list->kind != LMValue::Kind::List || list->items.empty())
      return error(arg[0]->loc) << "the first argument of 'concat' must be a list of tensors like "
                                   "[a, b], got "
                                << describe(*list);
    int64_t axis = 0;
    for (const LMValue &item : list->items)
      if (!item.isTensor() || !isa<FloatType>(item.type().getElementType()))
        return error(arg[0]->loc) << "'concat' takes float tensors, got " << describe(item);
    int64_t rank = list->items[0].type().getRank();
    if (arg[1]) {
      FailureOr<int64_t> a = evalInt(*arg[1], env, "axis");
      if (failed(a))
        return failure();
      axis = *a < 0 ? *a + rank : *a;
      if (axis < 0 || axis >= rank)
        return error(arg[1]->loc) << "axis " << *a << " is outside a tensor of rank " << rank;
    }
    Value r = list->items[0].tensor;
    for (size_t i = 1; i < list->items.size(); ++i) {
      Value next = list->items[i].tensor;
      if (!shapes::concat(dimsOf(r), dimsOf(next), axis, err))
        return error(call.loc) << err;
      r = builder.create<ConcatOp>(l, r, next, axis);
    }
    return LMValue::ofTensor(r);
  }

  if (name == "rmsnorm") {
    FailureOr<Value> x = operand(first, *arg[0], "x");
    if (failed(x))
      return failure();
    shapes::Dims dims = dimsOf(*x);
    if (dims.empty())
      return error(call.loc) << "rmsnorm needs a tensor of rank >= 1, got " << describe(first);
    double eps = 1e-6;
    if (arg[1]) {
      FailureOr<double> v = evalNumber(*arg[1], env, "eps");
      if (failed(v))
        return failure();
      if (std::string bad = shapes::layerNormEpsilon(*v, "rmsnorm"); !bad.empty())
        return error(arg[1]->loc) << bad;
      eps = *v;
    }
    FailureOr<CallFlags> flags = callFlags(call, env);
    if (failed(flags))
      return failure();
    bool reuse = false;
    FailureOr<std::string> scope = callScope(env, call, "rmsnorm", nullptr, *flags, &reuse);
    if (failed(scope))
      return failure();
    FailureOr<Value> gamma = createParam(env, *scope + ".gamma", tensorType({dims.back()}, floatType),
                                         initAttr("ones", {}), call.loc, flags->frozen, reuse);
    if (failed(gamma))
      return failure();
    return LMValue::ofTensor(builder.create<RmsNormOp>(l, *x, *gamma, builder.getF64FloatAttr(eps)));
  }

  if (name == "arange") {
    FailureOr<int64_t> n = evalDim(*arg[0], env, "the length of 'arange'");
    if (failed(n))
      return failure();
    if (*n > (int64_t(1) << 24))
      return error(arg[0]->loc) << "arange(" << *n << ") is too long for a constant (at most 2^24)";
    auto type = tensorType({*n}, floatType);
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < *n; ++i)
      values.push_back(FloatAttr::get(floatType, double(i)));
    auto value = DenseElementsAttr::get(type, values);
    return LMValue::ofTensor(builder.create<ConstantOp>(
        l, TypeRange{type}, ValueRange{}, ArrayRef<NamedAttribute>{builder.getNamedAttr("value", value)}));
  }
  return error(call.loc) << "builtin '" << name << "' has no emitter";
}

} // namespace mlir::lm
