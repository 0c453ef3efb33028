//===- BuiltinsMath.cpp - The zoo's math builtins of the .lm language -----===//
//
// The builtins of the elementwise table (contract/elementwise.h, generated
// from the ODS: tanh, sigmoid, ..., stop_gradient, the comparisons and where,
// each emitting its op), the reductions sum, mean and max over axes, concat,
// rmsnorm, arange, take_along_axis (a gather along one axis) and index_constant
// (the i32 constant of a float expression evaluated at compile time: gather
// indices). Each maps to one lm op or a short composition: sum is lm.sum_to to
// the kept shape (then a reshape), mean is that sum times 1/n, concat of n
// tensors is n - 1 binary lm.concat ops. Signatures are in Builtins.cpp's table.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"
#include "contract/elementwise.h"
#include "contract/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

namespace elementwise = lmrt::elementwise;

bool MLIRGen::isMathBuiltin(const std::string &name) {
  return elementwise::findBuiltin(name) || name == "sum" || name == "mean" || name == "max" ||
         name == "rmsnorm" || name == "take_along_axis" || name == "index_constant" || name == "min";
}

/// Builds the elementwise op `op` on `operands` by its name, with the result
/// type its InferTypeOpInterface infers (as the op's own builders do), so a
/// builtin of the elementwise table needs no code of its own here. Null when
/// the op is not registered or its inference fails (and said why at `l`).
static Value buildElementwise(OpBuilder &builder, Location l, const elementwise::ElementwiseOp &op,
                              ValueRange operands) {
  OperationState state(l, "lm." + std::string(op.name));
  std::optional<RegisteredOperationName> info = state.name.getRegisteredInfo();
  auto *infer = info ? info->getInterface<InferTypeOpInterface>() : nullptr;
  SmallVector<Type, 1> types;
  if (!infer || failed(infer->inferReturnTypes(builder.getContext(), l, operands, DictionaryAttr(),
                                               OpaqueProperties(nullptr), RegionRange(), types)))
    return Value();
  state.addOperands(operands);
  state.addTypes(types);
  return builder.create(state)->getResult(0);
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

namespace {

/// The values of a float tensor built from constants at compile time, in f64
/// and row-major order, for index_constant: lm.constant (arange, numbers),
/// lm.reshape, the elementwise arithmetic and comparisons (with broadcasting),
/// lm.log (T5's logarithmic position buckets; log(0) is -inf, which a where
/// may discard) and lm.where. The first op it cannot evaluate is returned in
/// `blocker`.
struct ConstantEval {
  Operation *blocker = nullptr;

  static shapes::Dims dims(Value v) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
    return shapes::Dims(s.begin(), s.end());
  }

  /// v (of shape `from`) read at each position of `to` (which `from` broadcasts to).
  static std::vector<double> broadcastTo(const std::vector<double> &v, const shapes::Dims &from,
                                         const shapes::Dims &to) {
    int64_t n = 1;
    for (int64_t d : to)
      n *= d;
    std::vector<double> out(n);
    for (int64_t e = 0; e < n; ++e) {
      int64_t rem = e, src = 0, stride = 1;
      for (size_t k = 0; k < to.size(); ++k) {
        size_t d = to.size() - 1 - k;
        int64_t idx = rem % to[d];
        rem /= to[d];
        if (k < from.size()) {
          int64_t fd = from[from.size() - 1 - k];
          src += (fd == 1 ? 0 : idx) * stride;
          stride *= fd;
        }
      }
      out[e] = v[src];
    }
    return out;
  }

  std::optional<std::vector<double>> operator()(Value v) {
    Operation *op = v.getDefiningOp();
    if (!op) {
      blocker = nullptr;
      return std::nullopt;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense || !isa<FloatType>(dense.getElementType()))
        return fail(op);
      std::vector<double> out;
      for (const APFloat &x : dense.getValues<APFloat>())
        out.push_back(x.convertToDouble());
      return out;
    }
    if (auto r = dyn_cast<ReshapeOp>(op))
      return (*this)(r.getX());
    if (auto w = dyn_cast<WhereOp>(op)) {
      shapes::Dims to = dims(w.getResult());
      std::vector<std::vector<double>> xs;
      for (Value operand : op->getOperands()) {
        std::optional<std::vector<double>> x = (*this)(operand);
        if (!x)
          return std::nullopt;
        xs.push_back(broadcastTo(*x, dims(operand), to));
      }
      for (size_t e = 0; e < xs[0].size(); ++e)
        xs[0][e] = xs[0][e] != 0.0 ? xs[1][e] : xs[2][e];
      return xs[0];
    }
    if (auto neg = dyn_cast<NegOp>(op)) {
      std::optional<std::vector<double>> x = (*this)(neg.getX());
      if (x)
        for (double &e : *x)
          e = -e;
      return x;
    }
    if (auto lg = dyn_cast<LogOp>(op)) {
      std::optional<std::vector<double>> x = (*this)(lg.getX());
      if (x)
        for (double &e : *x)
          e = std::log(e);
      return x;
    }
    std::function<double(double, double)> f;
    if (isa<AddOp>(op)) f = [](double a, double b) { return a + b; };
    else if (isa<SubOp>(op)) f = [](double a, double b) { return a - b; };
    else if (isa<MulOp>(op)) f = [](double a, double b) { return a * b; };
    else if (isa<DivOp>(op)) f = [](double a, double b) { return a / b; };
    else if (isa<GtOp>(op)) f = [](double a, double b) { return double(a > b); };
    else if (isa<GeOp>(op)) f = [](double a, double b) { return double(a >= b); };
    else if (isa<LtOp>(op)) f = [](double a, double b) { return double(a < b); };
    else if (isa<LeOp>(op)) f = [](double a, double b) { return double(a <= b); };
    else if (isa<EqOp>(op)) f = [](double a, double b) { return double(a == b); };
    else if (isa<NeOp>(op)) f = [](double a, double b) { return double(a != b); };
    else return fail(op);
    shapes::Dims to = dims(op->getResult(0));
    std::optional<std::vector<double>> a = (*this)(op->getOperand(0));
    if (!a)
      return std::nullopt;
    std::optional<std::vector<double>> b = (*this)(op->getOperand(1));
    if (!b)
      return std::nullopt;
    std::vector<double> x = broadcastTo(*a, dims(op->getOperand(0)), to),
                        y = broadcastTo(*b, dims(op->getOperand(1)), to);
    for (size_t e = 0; e < x.size(); ++e)
      x[e] = f(x[e], y[e]);
    return x;
  }

private:
  std::nullopt_t fail(Operation *op) {
    blocker = op;
    return std::nullopt;
  }
};

} // namespace

/// where(cond, a, b) with i32 values: `a` and `b` i32 tensors, or one of them an
/// integer number in i32's range (an i32 scalar that broadcasts: `where(masked,
/// ids, -100)`); mixing an i32 and a float value is an error (nothing converts ids
/// implicitly). `cond` is a float mask as for the float where. The result is i32
/// and carries no gradient (lm.where_int has no VJP).
FailureOr<LMValue> MLIRGen::emitWhereInt(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                         ArrayRef<LMValue> vs) {
  auto isI32 = [](const LMValue &v) {
    return v.isTensor() && cast<RankedTensorType>(v.tensor.getType()).getElementType().isInteger(32);
  };
  Value values[2];
  for (size_t i = 1; i < 3; ++i) {
    const char *self = i == 1 ? "a" : "b", *other = i == 1 ? "b" : "a";
    if (isI32(vs[i])) {
      values[i - 1] = vs[i].tensor;
      continue;
    }
    std::optional<int64_t> n = vs[i].isNumber() ? vs[i].asInt() : std::nullopt;
    if (!n)
      return error(arg[i]->loc) << "argument '" << self << "' of 'where' must be an i32 tensor or an integer "
                                << "like argument '" << other << "' (where selects i32 values only from i32 "
                                << "values; to_float converts ids), got " << describe(vs[i]);
    if (*n < INT32_MIN || *n > INT32_MAX)
      return error(arg[i]->loc) << "argument '" << self << "' of 'where' is " << *n
                                << ", outside the range of i32 [" << INT32_MIN << ", " << INT32_MAX << "]";
    auto type = tensorType({}, builder.getI32Type());
    auto value = DenseElementsAttr::get(type, ArrayRef<int32_t>{static_cast<int32_t>(*n)});
    values[i - 1] = builder.create<ConstantOp>(loc(arg[i]->loc), TypeRange{type}, ValueRange{},
                                               ArrayRef<NamedAttribute>{builder.getNamedAttr("value", value)});
  }
  FailureOr<Value> cond = floatTensor(vs[0], arg[0]->loc, "argument 'cond' of 'where'");
  if (failed(cond))
    return failure();
  auto dimsOf = [](Value v) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
    return shapes::Dims(s.begin(), s.end());
  };
  std::string err;
  std::optional<shapes::Dims> out = shapes::where(dimsOf(*cond), dimsOf(values[0]), dimsOf(values[1]), err);
  if (!out)
    return error(call.loc) << err;
  if (failed(checkElementCount(*out, call.loc)))
    return failure();
  return LMValue::ofTensor(
      builder.create<WhereIntOp>(loc(call.loc), *cond, values[0], values[1]).getResult());
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

  if (const elementwise::ElementwiseOp *op = elementwise::findBuiltin(name)) {
    auto built = [&](ValueRange operands) -> FailureOr<LMValue> {
      Value r = buildElementwise(builder, l, *op, operands);
      if (!r)
        return error(call.loc) << "internal error: 'lm." << op->name << "' could not be built";
      return LMValue::ofTensor(r);
    };
    if (op->arity == 1) {
      const char *what = op->builtinParams[0];
      if (!first.isTensor())
        return error(arg[0]->loc) << "argument '" << what << "' of '" << name << "' must be a tensor, got "
                                  << describe(first);
      FailureOr<Value> x = operand(first, *arg[0], what);
      if (failed(x))
        return failure();
      return built({*x});
    }
    // Several operands: numbers become scalars; at least one must be a tensor.
    size_t n = op->arity;
    SmallVector<LMValue> vs;
    for (size_t i = 0; i < n; ++i) {
      FailureOr<LMValue> v = i == 0 ? FailureOr<LMValue>(first) : eval(*arg[i], env);
      if (failed(v))
        return failure();
      vs.push_back(*v);
    }
    // where on i32 values (ids): lm.where_int, both values i32 tensors.
    auto isI32 = [](const LMValue &v) {
      return v.isTensor() && cast<RankedTensorType>(v.tensor.getType()).getElementType().isInteger(32);
    };
    if (name == "where" && (isI32(vs[1]) || isI32(vs[2])))
      return emitWhereInt(call, arg, vs);
    SmallVector<Value> xs;
    bool anyTensor = false;
    for (size_t i = 0; i < n; ++i) {
      anyTensor |= vs[i].isTensor();
      FailureOr<Value> x = operand(vs[i], *arg[i], op->builtinParams[i]);
      if (failed(x))
        return failure();
      xs.push_back(*x);
    }
    if (!anyTensor)
      return error(call.loc) << "'" << name << "' needs a tensor operand";
    // The op's shape rule (elementwise.h), checked here to point at the call.
    std::optional<shapes::Dims> out = dimsOf(xs[0]);
    if (op->broadcasts && n == 2)
      out = shapes::broadcast(dimsOf(xs[0]), dimsOf(xs[1]), err, name.c_str());
    else if (op->broadcasts && n == 3)
      out = shapes::where(dimsOf(xs[0]), dimsOf(xs[1]), dimsOf(xs[2]), err);
    else if (op->broadcasts)
      return error(call.loc) << "internal error: no shape rule for '" << name << "' of " << n << " operands";
    for (size_t i = 1; i < n && !op->broadcasts; ++i)
      if (dimsOf(xs[i]) != *out)
        return error(arg[i]->loc) << "argument '" << op->builtinParams[i] << "' of '" << name
                                  << "' must have the shape of argument '" << op->builtinParams[0] << "', "
                                  << describe(vs[0]) << ", got " << describe(vs[i]);
    if (!out)
      return error(call.loc) << err;
    if (failed(checkElementCount(*out, call.loc)))
      return failure();
    return built(xs);
  }

  // min(a, b) and max(a, b) of two numbers are compile-time (DeBERTa's
  // min(T, k)); max of a tensor is the reduction below. Integers stay integers.
  if (name == "min" || (name == "max" && first.isNumber())) {
    FailureOr<LMValue> b = eval(*arg[1], env);
    if (failed(b))
      return failure();
    if (!first.isNumber() || !b->isNumber() || (name == "max" && arg[2]))
      return error(call.loc) << "'" << name << "(a, b)' takes two numbers (max(x [, axis, keepdim]) "
                                                "reduces a tensor), got "
                             << describe(first) << " and " << describe(*b);
    bool takeA = name == "min" ? first.asDouble() <= b->asDouble() : first.asDouble() >= b->asDouble();
    if (first.kind == LMValue::Kind::Int && b->kind == LMValue::Kind::Int)
      return takeA ? first : *b;
    return LMValue::ofFloat(takeA ? first.asDouble() : b->asDouble());
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
                                         initAttr("ones", {}), call.loc, flags->frozen, reuse, flags->shared);
    if (failed(gamma))
      return failure();
    return LMValue::ofTensor(builder.create<RmsNormOp>(l, *x, *gamma, builder.getF64FloatAttr(eps)));
  }

  if (name == "arange") {
    // arange(n) is 0 .. n - 1; arange(start, stop) is start .. stop - 1.
    auto constant = [&](int64_t start, int64_t n, const ast::Expr &at) -> FailureOr<Value> {
      if (n > (int64_t(1) << 24))
        return error(at.loc) << "arange of " << n << " values is too long for a constant (at most 2^24)";
      auto type = tensorType({n}, floatType);
      SmallVector<Attribute> values;
      for (int64_t i = 0; i < n; ++i)
        values.push_back(FloatAttr::get(floatType, double(start + i)));
      auto value = DenseElementsAttr::get(type, values);
      return Value(builder.create<ConstantOp>(l, TypeRange{type}, ValueRange{},
                                              ArrayRef<NamedAttribute>{builder.getNamedAttr("value", value)}));
    };
    if (!arg[1]) {
      FailureOr<int64_t> n = evalDim(*arg[0], env, "the length of 'arange'");
      if (failed(n))
        return failure();
      FailureOr<Value> r = constant(0, *n, *arg[0]);
      return failed(r) ? FailureOr<LMValue>(failure()) : LMValue::ofTensor(*r);
    }
    FailureOr<LMValue> start = eval(*arg[0], env), stop = eval(*arg[1], env);
    if (failed(start) || failed(stop))
      return failure();
    bool offsetStart = start->kind == LMValue::Kind::Offset, offsetStop = stop->kind == LMValue::Kind::Offset;
    if (offsetStart || offsetStop) {
      // In a decode program: pos + a .. pos + b - 1, a dynamic slice of the
      // constant 0 .. a + maxOffset + (b - a) - 1 at the run-time offset.
      if (!offsetStart || !offsetStop)
        return error(call.loc) << "arange at the position offset runs from pos + a to pos + b, got "
                               << describe(*start) << " and " << describe(*stop);
      int64_t a = start->intValue, n = stop->intValue - start->intValue;
      if (a < 0 || n < 1)
        return error(call.loc) << "arange(pos + " << a << ", pos + " << stop->intValue
                               << ") must start at pos + a with a >= 0 and be non-empty";
      FailureOr<Value> table = constant(0, a + decode->maxOffset + n, call);
      if (failed(table))
        return failure();
      return LMValue::ofTensor(builder.create<DynamicSliceOp>(l, *table, start->tensor, 0, a, n));
    }
    std::optional<int64_t> a = start->asInt(), b = stop->asInt();
    if (!a || !b)
      return error(call.loc) << "arange(start, stop) takes compile-time integers (or pos + a, pos + b), got "
                             << describe(*start) << " and " << describe(*stop);
    if (*b <= *a)
      return error(call.loc) << "arange(" << *a << ", " << *b << ") is empty";
    FailureOr<Value> r = constant(*a, *b - *a, call);
    return failed(r) ? FailureOr<LMValue>(failure()) : LMValue::ofTensor(*r);
  }
  if (name == "take_along_axis") {
    if (!first.isTensor())
      return error(arg[0]->loc) << "argument 'x' of 'take_along_axis' must be a tensor, got "
                                << describe(first);
    FailureOr<Value> x = operand(first, *arg[0], "x");
    if (failed(x))
      return failure();
    FailureOr<LMValue> ids = eval(*arg[1], env);
    if (failed(ids))
      return failure();
    if (!ids->isTensor() || !ids->type().getElementType().isInteger(32))
      return error(arg[1]->loc) << "argument 'indices' of 'take_along_axis' must be an i32 tensor "
                                   "(index_constant(...) makes one), got "
                                << describe(*ids);
    FailureOr<int64_t> a = evalInt(*arg[2], env, "axis");
    if (failed(a))
      return failure();
    int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
    int64_t axis = *a < 0 ? *a + rank : *a;
    if (axis < 0 || axis >= rank)
      return error(arg[2]->loc) << "axis " << *a << " is outside a tensor of rank " << rank;
    if (!shapes::takeAlongAxis(dimsOf(*x), ids->dims(), axis, err))
      return error(call.loc) << err;
    // Constant indices (index_constant's) are checked here, not at run time.
    if (auto c = ids->tensor.getDefiningOp<ConstantOp>()) {
      int64_t n = dimsOf(*x)[axis], pos = 0;
      for (const APInt &v : cast<DenseElementsAttr>(c.getValue()).getValues<APInt>()) {
        if (v.getSExtValue() < 0 || v.getSExtValue() >= n)
          return error(arg[1]->loc) << "take_along_axis: index " << v.getSExtValue()
                                    << " at flat position " << pos << " is outside axis " << axis
                                    << " of x (size " << n << ")";
        ++pos;
      }
    }
    return LMValue::ofTensor(builder.create<TakeAlongAxisOp>(l, *x, ids->tensor, axis));
  }

  if (name == "index_constant") {
    if (!first.isTensor() || !isa<FloatType>(first.type().getElementType()))
      return error(arg[0]->loc) << "argument 'x' of 'index_constant' must be a float tensor, got "
                                << describe(first);
    ConstantEval evaluate;
    std::optional<std::vector<double>> values = evaluate(first.tensor);
    if (!values) {
      InFlightDiagnostic d = error(arg[0]->loc)
                             << "the argument of 'index_constant' must be computable at compile "
                                "time (from arange, numbers, reshape, + - * /, log, comparisons and "
                                "where)";
      if (evaluate.blocker)
        d << ", but it depends on '" << evaluate.blocker->getName().getStringRef() << "'";
      return failure();
    }
    // floor = true rounds each value down (PyTorch's .to(torch.long) of the
    // non-negative bucket values in T5's _relative_position_bucket); without
    // it a value that is not an integer is an error.
    bool roundDown = false;
    if (arg[1]) {
      FailureOr<LMValue> f = eval(*arg[1], env);
      if (failed(f))
        return failure();
      if (f->kind != LMValue::Kind::Bool)
        return error(arg[1]->loc) << "'floor' of 'index_constant' must be true or false, got " << describe(*f);
      roundDown = f->boolValue;
    }
    auto type = tensorType(first.dims(), builder.getI32Type());
    SmallVector<int32_t> ints;
    for (size_t e = 0; e < values->size(); ++e) {
      double v = roundDown ? std::floor((*values)[e]) : (*values)[e];
      if (!(v == std::floor(v) && std::fabs(v) < 2147483648.0))
        return error(arg[0]->loc) << "index_constant: the value " << (std::ostringstream() << v).str()
                                  << " at flat position " << e << " is not an integer in i32's range";
      ints.push_back(static_cast<int32_t>(v));
    }
    auto value = DenseElementsAttr::get(type, ArrayRef<int32_t>(ints));
    return LMValue::ofTensor(builder.create<ConstantOp>(
        l, TypeRange{type}, ValueRange{}, ArrayRef<NamedAttribute>{builder.getNamedAttr("value", value)}));
  }
  return error(call.loc) << "builtin '" << name << "' has no emitter";
}

} // namespace mlir::lm
