//===- EmitExpr.cpp - Expressions: arithmetic, matmul, indexing -----------===//
//
// Evaluates expressions to LMValues. Numbers fold at compile time; tensors
// become lm ops whose shapes are checked with the shared rules of
// contract/shape_rules.h before the op is built, so a bad program gets
// a message at its own line rather than a verifier error on generated IR.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"
#include "contract/shape_rules.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

std::string describe(RankedTensorType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type.getElementType() << "[";
  for (int64_t i = 0; i < type.getRank(); ++i)
    os << (i ? ", " : "") << type.getDimSize(i);
  os << "]";
  return s;
}

std::string describe(const LMValue &v) {
  std::ostringstream os;
  switch (v.kind) {
  case LMValue::Kind::Tensor:
    return v.tensor ? describe(v.type()) : "a tensor";
  case LMValue::Kind::Int:
    os << "integer " << v.intValue;
    return os.str();
  case LMValue::Kind::Float:
    os << "number " << v.floatValue;
    return os.str();
  case LMValue::Kind::Bool:
    return std::string("bool ") + (v.boolValue ? "true" : "false");
  case LMValue::Kind::List:
    os << "list of " << v.items.size();
    return os.str();
  case LMValue::Kind::String:
    return "string \"" + v.str + "\"";
  case LMValue::Kind::Offset:
    os << "the position offset pos";
    if (v.intValue)
      os << (v.intValue > 0 ? " + " : " - ") << std::llabs(v.intValue);
    return os.str();
  }
  return "value";
}

LMValue MLIRGen::lookupConfig(const std::string &name, bool &found) const {
  for (const auto &[n, v] : config)
    if (n == name) {
      found = true;
      return v;
    }
  found = false;
  return {};
}

Value MLIRGen::constantScalar(double v, ast::Loc l) {
  auto type = tensorType({}, floatType);
  auto value = DenseElementsAttr::get(type, ArrayRef<Attribute>{FloatAttr::get(floatType, v)});
  return builder.create<ConstantOp>(loc(l), TypeRange{type}, ValueRange{},
                                    ArrayRef<NamedAttribute>{builder.getNamedAttr("value", value)});
}

FailureOr<Value> MLIRGen::floatTensor(const LMValue &v, ast::Loc l, const std::string &what) {
  if (v.isNumber())
    return constantScalar(v.asDouble(), l);
  if (v.isTensor() && isa<FloatType>(v.type().getElementType()))
    return v.tensor;
  return error(l) << what << " must be a float tensor, got " << describe(v);
}

FailureOr<int64_t> MLIRGen::evalInt(const ast::Expr &e, Env &env, const std::string &what) {
  FailureOr<LMValue> v = eval(e, env);
  if (failed(v))
    return failure();
  if (std::optional<int64_t> i = v->asInt())
    return *i;
  return error(e.loc) << what << " must be a compile-time integer, got " << describe(*v);
}

FailureOr<double> MLIRGen::evalNumber(const ast::Expr &e, Env &env, const std::string &what) {
  FailureOr<LMValue> v = eval(e, env);
  if (failed(v))
    return failure();
  if (!v->isNumber())
    return error(e.loc) << what << " must be a compile-time number, got " << describe(*v);
  return v->asDouble();
}

FailureOr<int64_t> MLIRGen::evalDim(const ast::Expr &e, Env &env, const std::string &what) {
  FailureOr<int64_t> v = evalInt(e, env, what);
  if (failed(v))
    return failure();
  if (*v < 1)
    return error(e.loc) << what << " must be positive, got " << *v << " ('" << ast::toString(e)
                        << "')";
  return *v;
}

LogicalResult MLIRGen::checkElementCount(ArrayRef<int64_t> dims, ast::Loc l) {
  int64_t count = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(count, d, &count) || count > kMaxElements) {
      std::string shape;
      for (int64_t x : dims)
        shape += (shape.empty() ? "" : ", ") + std::to_string(x);
      return error(l) << "a tensor of shape [" << shape << "] has more than 2^40 elements";
    }
  return success();
}

FailureOr<RankedTensorType> MLIRGen::checkedType(ArrayRef<int64_t> dims, Type elem,
                                                 ast::Loc l) {
  if (failed(checkElementCount(dims, l)))
    return failure();
  return tensorType(dims, elem);
}

FailureOr<LMValue> MLIRGen::eval(const ast::Expr &e, Env &env) {
  switch (e.kind) {
  case ast::Expr::Kind::Int:
    return LMValue::ofInt(e.intValue);
  case ast::Expr::Kind::Float:
    return LMValue::ofFloat(e.floatValue);
  case ast::Expr::Kind::Bool:
    return LMValue::ofBool(e.boolValue);
  case ast::Expr::Kind::String:
    return LMValue::ofString(e.name);
  case ast::Expr::Kind::Name:
    return evalName(e, env);
  case ast::Expr::Kind::Unary:
    return evalUnary(e, env);
  case ast::Expr::Kind::Binary:
    return e.op == '@' ? evalMatmul(e, env) : evalBinary(e, env);
  case ast::Expr::Kind::Call:
    return evalCall(e, env);
  case ast::Expr::Kind::Index:
    return evalIndex(e, env);
  case ast::Expr::Kind::List:
  case ast::Expr::Kind::Tuple: {
    LMValue list;
    list.kind = LMValue::Kind::List;
    for (const ast::ExprPtr &item : e.args) {
      FailureOr<LMValue> v = eval(*item, env);
      if (failed(v))
        return failure();
      list.items.push_back(*v);
    }
    return list;
  }
  }
  return error(e.loc) << "unsupported expression";
}

FailureOr<LMValue> MLIRGen::evalName(const ast::Expr &e, Env &env) {
  auto it = env.vars.find(e.name);
  if (it != env.vars.end())
    return it->second;
  bool found = false;
  LMValue c = lookupConfig(e.name, found);
  if (found)
    return c;
  if (const ast::Function *fn = ast.lookup(e.name))
    return error(e.loc) << "'" << e.name << "' is a " << kindName(fn->kind)
                        << "; call it: " << e.name << "(...)";
  if (isBuiltin(e.name))
    return error(e.loc) << "'" << e.name << "' is a builtin; call it: " << e.name << "(...)";
  // The position offset of the tokens (docs/language.md): 0 when training and in
  // the forward program, the run-time offset when elaborating a decode program.
  if (e.name == "pos") {
    if (!decode)
      return LMValue::ofInt(0);
    decode->usedPos = true;
    return LMValue::ofOffset(decode->offset, 0);
  }
  std::vector<std::string> visible;
  for (const auto &[name, v] : env.vars)
    visible.push_back(name);
  for (const auto &[name, v] : config)
    visible.push_back(name);
  return error(e.loc) << "unknown identifier '" << e.name << "'" << suggest(e.name, visible);
}

std::string MLIRGen::suggest(const std::string &name, const std::vector<std::string> &candidates) {
  // Allow about one typo per three characters, as clang's typo correction does.
  unsigned limit = std::max<unsigned>(1, name.size() / 3), best = limit + 1;
  std::string choice;
  for (const std::string &c : candidates) {
    unsigned d = StringRef(name).edit_distance(c, /*AllowReplacements=*/true, limit);
    if (d < best) {
      best = d;
      choice = c;
    }
  }
  return choice.empty() ? "" : "; did you mean '" + choice + "'?";
}

FailureOr<LMValue> MLIRGen::evalUnary(const ast::Expr &e, Env &env) {
  FailureOr<LMValue> v = eval(*e.lhs, env);
  if (failed(v))
    return failure();
  if (v->kind == LMValue::Kind::Int) {
    int64_t r = v->intValue;
    if (e.op == '-' && __builtin_sub_overflow(int64_t(0), v->intValue, &r))
      return error(e.loc) << "integer overflow in '" << ast::toString(e) << "'";
    return LMValue::ofInt(r);
  }
  if (v->kind == LMValue::Kind::Float)
    return LMValue::ofFloat(e.op == '-' ? -v->floatValue : v->floatValue);
  FailureOr<Value> x = floatTensor(*v, e.lhs->loc, std::string("the operand of unary '") + e.op + "'");
  if (failed(x))
    return failure();
  if (e.op == '+')
    return *v;
  return LMValue::ofTensor(builder.create<NegOp>(loc(e.loc), *x));
}

/// Folds arithmetic on two compile-time numbers. Integers stay integers
/// except under `/`, which divides like Python's true division.
static std::optional<LMValue> foldNumbers(char op, const LMValue &a, const LMValue &b,
                                          std::string &err) {
  if (op != '/' && a.kind == LMValue::Kind::Int && b.kind == LMValue::Kind::Int) {
    int64_t r = 0;
    bool overflow = op == '+'   ? __builtin_add_overflow(a.intValue, b.intValue, &r)
                    : op == '-' ? __builtin_sub_overflow(a.intValue, b.intValue, &r)
                                : __builtin_mul_overflow(a.intValue, b.intValue, &r);
    if (overflow) {
      err = "integer overflow";
      return std::nullopt;
    }
    return LMValue::ofInt(r);
  }
  double x = a.asDouble(), y = b.asDouble();
  if (op == '/' && y == 0.0) {
    err = "division by zero";
    return std::nullopt;
  }
  double r = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
  // Operands are finite (literals, -D values and folds all are), so only
  // overflow gets here; inf would reach shapes and initializers otherwise.
  if (!std::isfinite(r)) {
    err = "floating-point overflow";
    return std::nullopt;
  }
  return LMValue::ofFloat(r);
}

/// `pos + k`, `k + pos`, `pos - k` stay offsets; `(pos + b) - (pos + a)` is
/// the integer b - a. Nothing else is defined on the run-time offset.
FailureOr<LMValue> MLIRGen::offsetArithmetic(const ast::Expr &e, const LMValue &a, const LMValue &b) {
  std::optional<int64_t> ia = a.asInt(), ib = b.asInt();
  bool oa = a.kind == LMValue::Kind::Offset, ob = b.kind == LMValue::Kind::Offset;
  int64_t r = 0;
  if (e.op == '+' && oa && ib && !__builtin_add_overflow(a.intValue, *ib, &r))
    return LMValue::ofOffset(a.tensor, r);
  if (e.op == '+' && ob && ia && !__builtin_add_overflow(*ia, b.intValue, &r))
    return LMValue::ofOffset(b.tensor, r);
  if (e.op == '-' && oa && ib && !__builtin_sub_overflow(a.intValue, *ib, &r))
    return LMValue::ofOffset(a.tensor, r);
  if (e.op == '-' && oa && ob && !__builtin_sub_overflow(a.intValue, b.intValue, &r))
    return LMValue::ofInt(r);
  return error(e.loc) << "cannot apply '" << ast::opSpelling(e.op) << "' to " << describe(a) << " and "
                      << describe(b) << " in a decode program: the position offset 'pos' is known only at run "
                      << "time, and takes only + and - of integers (for slices like wpe[pos:pos + T] and "
                      << "arange(pos, pos + T))";
}

FailureOr<LMValue> MLIRGen::evalBinary(const ast::Expr &e, Env &env) {
  FailureOr<LMValue> a = eval(*e.lhs, env);
  if (failed(a))
    return failure();
  FailureOr<LMValue> b = eval(*e.rhs, env);
  if (failed(b))
    return failure();
  if (a->kind == LMValue::Kind::Offset || b->kind == LMValue::Kind::Offset)
    return offsetArithmetic(e, *a, *b);
  if (a->isNumber() && b->isNumber() && ast::isComparison(e.op)) {
    // Compile-time comparison: a bool (for `causal = seq > 1` and the like).
    double x = a->asDouble(), y = b->asDouble();
    bool r = e.op == '<' ? x < y : e.op == '>' ? x > y : e.op == 'l' ? x <= y
           : e.op == 'g' ? x >= y : e.op == 'e' ? x == y : x != y;
    return LMValue::ofBool(r);
  }
  if (a->isNumber() && b->isNumber()) {
    std::string err;
    std::optional<LMValue> r = foldNumbers(e.op, *a, *b, err);
    if (!r)
      return error(e.loc) << err << " in '" << ast::toString(e) << "'";
    return *r;
  }
  std::string opText = ast::opSpelling(e.op);
  FailureOr<Value> x = floatTensor(*a, e.lhs->loc, "the left operand of '" + opText + "'");
  if (failed(x))
    return failure();
  FailureOr<Value> y = floatTensor(*b, e.rhs->loc, "the right operand of '" + opText + "'");
  if (failed(y))
    return failure();
  auto tx = cast<RankedTensorType>(x->getType()), ty = cast<RankedTensorType>(y->getType());
  const char *name = e.op == '+' ? "add" : e.op == '-' ? "sub" : e.op == '*' ? "mul" : e.op == '/' ? "div"
                   : e.op == '<' ? "lt" : e.op == '>' ? "gt" : e.op == 'l' ? "le" : e.op == 'g' ? "ge"
                   : e.op == 'e' ? "eq" : "ne";
  std::string err;
  std::optional<shapes::Dims> dims =
      shapes::broadcast({tx.getShape().begin(), tx.getShape().end()},
                        {ty.getShape().begin(), ty.getShape().end()}, err, name);
  if (!dims)
    return error(e.loc) << "cannot apply '" << opText << "' to " << describe(tx) << " and "
                        << describe(ty) << ": " << err;
  if (failed(checkElementCount(*dims, e.loc)))
    return failure();
  Location l = loc(e.loc);
  Value r;
  switch (e.op) {
  case '+':
    r = builder.create<AddOp>(l, *x, *y);
    break;
  case '-':
    r = builder.create<SubOp>(l, *x, *y);
    break;
  case '*':
    r = builder.create<MulOp>(l, *x, *y);
    break;
  case '/':
    r = builder.create<DivOp>(l, *x, *y);
    break;
  // Comparisons give 0/1 masks (lm.lt ...), as the builtins gt(a, b) ... do.
  case '<':
    r = builder.create<LtOp>(l, *x, *y);
    break;
  case '>':
    r = builder.create<GtOp>(l, *x, *y);
    break;
  case 'l':
    r = builder.create<LeOp>(l, *x, *y);
    break;
  case 'g':
    r = builder.create<GeOp>(l, *x, *y);
    break;
  case 'e':
    r = builder.create<EqOp>(l, *x, *y);
    break;
  default:
    r = builder.create<NeOp>(l, *x, *y);
    break;
  }
  return LMValue::ofTensor(r);
}

/// `a @ b`. An operand written `transpose(w)` is not materialised: it sets
/// the matmul's transpose flag instead (the tied output projection
/// `h @ transpose(wte)` reads wte in place).
FailureOr<LMValue> MLIRGen::evalMatmul(const ast::Expr &e, Env &env) {
  bool transposed[2] = {false, false};
  Value operand[2];
  const ast::Expr *side[2] = {e.lhs.get(), e.rhs.get()};
  for (int i = 0; i < 2; ++i) {
    const ast::Expr *src = side[i];
    if (isPlainTranspose(*src)) {
      transposed[i] = true;
      src = src->args[0].get();
    }
    FailureOr<LMValue> v = eval(*src, env);
    if (failed(v))
      return failure();
    std::string what = i == 0 ? "the left operand of '@'" : "the right operand of '@'";
    if (!v->isTensor())
      return error(src->loc) << what << " must be a float tensor, got " << describe(*v);
    FailureOr<Value> t = floatTensor(*v, src->loc, what);
    if (failed(t))
      return failure();
    if (transposed[i] && v->type().getRank() < 2)
      return error(side[i]->loc) << "transpose needs a tensor of rank >= 2, got "
                                 << describe(*v);
    operand[i] = *t;
  }
  auto tl = cast<RankedTensorType>(operand[0].getType());
  auto tr = cast<RankedTensorType>(operand[1].getType());
  std::string err;
  std::optional<shapes::Dims> dims =
      shapes::matmul({tl.getShape().begin(), tl.getShape().end()},
                     {tr.getShape().begin(), tr.getShape().end()}, transposed[0], transposed[1], err);
  if (!dims)
    return error(e.loc) << "cannot apply '@' to " << (transposed[0] ? "transpose of " : "")
                        << describe(tl) << " and " << (transposed[1] ? "transpose of " : "")
                        << describe(tr) << ": " << err;
  if (failed(checkElementCount(*dims, e.loc)))
    return failure();
  Value r = builder.create<MatmulOp>(loc(e.loc), operand[0], operand[1], transposed[0], transposed[1]);
  return LMValue::ofTensor(r);
}

/// `x[a:b, :, i]`: Python-style subscripts. Negative bounds count from the
/// end, omitted ones span the dimension, missing trailing subscripts take the
/// whole dimension; an integer index selects one position and drops the
/// dimension. Bounds outside the dimension are errors, not clamped: with
/// static shapes they are always a mistake (e.g. seq longer than ctx).
FailureOr<LMValue> MLIRGen::evalIndex(const ast::Expr &e, Env &env) {
  FailureOr<LMValue> base = eval(*e.lhs, env);
  if (failed(base))
    return failure();
  if (!base->isTensor())
    return error(e.lhs->loc) << "only tensors can be indexed, got " << describe(*base);
  shapes::Dims dims = base->dims();
  int64_t rank = dims.size();
  if (static_cast<int64_t>(e.subscripts.size()) > rank)
    return error(e.loc) << e.subscripts.size() << " subscripts for a tensor of rank " << rank
                        << " (" << describe(*base) << ")";
  FailureOr<int64_t> dynamicAxis = dynamicSlice(e, env, *base);
  if (failed(dynamicAxis))
    return failure();
  dims = base->dims();
  shapes::Dims start(rank, 0), limit = dims, stride(rank, 1), kept;
  std::vector<bool> dropped(rank, false);
  for (size_t i = 0; i < e.subscripts.size(); ++i) {
    const ast::Subscript &s = e.subscripts[i];
    if (static_cast<int64_t>(i) == *dynamicAxis)
      continue; // taken by the dynamic slice
    int64_t size = dims[i];
    auto bound = [&](const ast::Expr &x, const char *what, int64_t &out) -> LogicalResult {
      FailureOr<int64_t> v = evalInt(x, env, std::string("a slice ") + what);
      if (failed(v))
        return failure();
      int64_t n = *v < 0 ? *v + size : *v;
      if (n < 0 || n > size)
        return error(x.loc) << "slice " << what << " " << *v << " is out of range for dimension "
                            << i << " of size " << size << " (" << describe(*base) << ")";
      out = n;
      return success();
    };
    if (!s.isSlice) {
      FailureOr<int64_t> v = evalInt(*s.index, env, "an index");
      if (failed(v))
        return failure();
      int64_t n = *v < 0 ? *v + size : *v;
      if (n < 0 || n >= size)
        return error(s.index->loc) << "index " << *v << " is out of range for dimension " << i
                                   << " of size " << size << " (" << describe(*base) << ")";
      start[i] = n;
      limit[i] = n + 1;
      dropped[i] = true;
      continue;
    }
    if (s.start && failed(bound(*s.start, "start", start[i])))
      return failure();
    if (s.limit && failed(bound(*s.limit, "limit", limit[i])))
      return failure();
    if (s.step) {
      FailureOr<int64_t> v = evalInt(*s.step, env, "a slice step");
      if (failed(v))
        return failure();
      if (*v < 1)
        return error(s.step->loc) << "slice step must be >= 1, got " << *v;
      stride[i] = *v;
    }
    if (start[i] >= limit[i])
      return error(s.loc) << "empty slice " << start[i] << ":" << limit[i] << " of dimension "
                          << i << " (size " << size << ")";
  }
  std::string err;
  std::optional<shapes::Dims> out = shapes::slice(dims, start, limit, stride, err);
  if (!out)
    return error(e.loc) << err;
  Value v = base->tensor;
  Type elem = base->type().getElementType();
  if (*out != dims) {
    v = builder.create<SliceOp>(loc(e.loc), v, start, limit, stride);
  }
  for (int64_t i = 0; i < rank; ++i)
    if (!dropped[i])
      kept.push_back((*out)[i]);
  if (static_cast<int64_t>(kept.size()) != rank) {
    if (!isa<FloatType>(elem))
      return error(e.loc) << "an integer index drops a dimension, which needs a reshape, and "
                             "reshape takes float tensors; slice with i:i+1 instead";
    v = builder.create<ReshapeOp>(loc(e.loc), tensorType(kept, elem), v);
  }
  return LMValue::ofTensor(v);
}

/// In a decode program, a subscript `pos + a : pos + b` becomes an
/// lm.dynamic_slice of b - a positions of `base` (replaced by the slice); its
/// axis is returned, or -1 when no subscript is at the position offset. The
/// offset reaches at most DecodeState::maxOffset, which the slice must fit.
FailureOr<int64_t> MLIRGen::dynamicSlice(const ast::Expr &e, Env &env, LMValue &base) {
  if (!decode)
    return int64_t(-1);
  int64_t axis = -1;
  for (size_t i = 0; i < e.subscripts.size(); ++i) {
    const ast::Subscript &s = e.subscripts[i];
    std::optional<LMValue> a, b;
    for (auto [bound, out] : {std::pair{s.isSlice ? s.start.get() : s.index.get(), &a},
                              std::pair{s.isSlice ? s.limit.get() : nullptr, &b}}) {
      if (!bound)
        continue;
      FailureOr<LMValue> v = eval(*bound, env);
      if (failed(v))
        return failure();
      *out = *v;
    }
    bool isA = a && a->kind == LMValue::Kind::Offset, isB = b && b->kind == LMValue::Kind::Offset;
    if (!isA && !isB)
      continue;
    if (!s.isSlice || !isA || !isB || s.step)
      return error(s.loc) << "a subscript at the position offset must be a slice pos + a : pos + b "
                             "(both bounds at the offset, no step)";
    if (axis >= 0)
      return error(s.loc) << "only one subscript may be at the position offset";
    int64_t size = b->intValue - a->intValue, dim = base.dims()[i];
    if (a->intValue < 0 || size < 1 || a->intValue + decode->maxOffset + size > dim)
      return error(s.loc) << "slice pos + " << a->intValue << " : pos + " << b->intValue << " of dimension " << i
                          << " (size " << dim << ") must start at pos + a with a >= 0, be non-empty and fit "
                          << "the largest offset of the decode program, " << decode->maxOffset << " (window "
                          << decode->window << ")";
    Value r = builder.create<DynamicSliceOp>(loc(s.loc), base.tensor, a->tensor, static_cast<int64_t>(i),
                                             a->intValue, size);
    base = LMValue::ofTensor(r);
    axis = static_cast<int64_t>(i);
  }
  return axis;
}

FailureOr<LMValue> MLIRGen::evalCall(const ast::Expr &e, Env &env) {
  // config and train are evaluated before any function exists: only the
  // compile-time math builtins can run there (a block or model would need a
  // function to declare its parameters and ops in).
  bool compileTimeMath = e.name == "sqrt" || e.name == "exp" || e.name == "log" || e.name == "floor" ||
                         e.name == "ceil";
  if (!cur && !compileTimeMath && (isBuiltin(e.name) || ast.lookup(e.name)))
    return error(e.loc) << "config/train values must be compile-time numbers; cannot call '"
                        << e.name << "' here";
  if (isBuiltin(e.name))
    return emitBuiltin(e, env);
  if (const ast::Function *fn = ast.lookup(e.name))
    return emitUserCall(*fn, e, env);
  if (env.vars.count(e.name))
    return error(e.loc) << "'" << e.name << "' is a value, not a block, model or builtin";
  std::vector<std::string> callees = builtinNames();
  for (const ast::Function &fn : ast.functions)
    if (fn.kind != ast::Function::Kind::Objective)
      callees.push_back(fn.name);
  return error(e.loc) << "unknown block or builtin '" << e.name << "'" << suggest(e.name, callees);
}

} // namespace mlir::lm
