//===- BuiltinsSequence.cpp - conv1d and lstm builtins of the .lm language ===//
//
// ELMo's sequence layers, written as compositions of existing lm ops (no new
// op, kernel or VJP: their gradients are those of slice, concat, matmul and
// the elementwise ops, checked by test/GradCheck/sequence.lm):
//
//  - conv1d(x, w [, b]): a valid 1-D convolution over the sequence axis,
//    x [N, L, Cin], w [width, Cin, Cout] -> [N, L - width + 1, Cout], as
//    im2col: `width` shifted slices of x joined along the channels, times w
//    seen as [width * Cin, Cout]: one GEMM per filter bank.
//  - lstm(x, w_input, w_state, b, w_proj [, cell_clip, proj_clip, reverse]):
//    AllenNLP's LstmCellWithProjection (ELMo's LSTMP) over the whole
//    sequence, unrolled in time from a zero state. The input projection of
//    every step is one GEMM before the loop; each step then costs one GEMM of
//    the state, the gate math (fused), and one GEMM of the projection.
//
// Why a composition and not an lm.lstm op: it is correct by construction
// (each piece has a checked VJP), fuses, and runs on every backend; the cost
// is plan size (about 26 ops a step and direction) and the per-step launch
// overhead, fine for ELMo's training windows (20 tokens). docs/language.md
// states the trade.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"
#include "contract/shape_rules.h"

#include <sstream>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

bool MLIRGen::isSequenceBuiltin(const std::string &name) { return name == "conv1d" || name == "lstm"; }

namespace {

shapes::Dims dimsOf(Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return shapes::Dims(s.begin(), s.end());
}

Type elemTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// x[..., a:b, ...] along `axis` (every other axis whole).
Value sliceAxis(OpBuilder &builder, Location l, Value x, int64_t axis, int64_t a, int64_t b) {
  ArrayRef<int64_t> dims = cast<RankedTensorType>(x.getType()).getShape();
  SmallVector<int64_t> start(dims.size(), 0), limit(dims.begin(), dims.end()), stride(dims.size(), 1);
  start[axis] = a;
  limit[axis] = b;
  return builder.create<SliceOp>(l, x, start, limit, stride);
}

/// Joins `parts` along `axis` as a balanced tree of binary concats, so that
/// T parts copy O(T log T) elements rather than a chain's O(T^2).
Value concatTree(OpBuilder &builder, Location l, ArrayRef<Value> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts[0];
  size_t half = parts.size() / 2;
  return builder.create<ConcatOp>(l, concatTree(builder, l, parts.take_front(half), axis),
                                  concatTree(builder, l, parts.drop_front(half), axis), axis);
}

} // namespace

FailureOr<LMValue> MLIRGen::emitSequence(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                         const LMValue &first, Env &env) {
  const std::string name = call.name;
  Location l = loc(call.loc);
  // The tensor arguments, each a float tensor of a stated rank.
  auto tensorArg = [&](size_t i, const char *what, int64_t rank) -> FailureOr<Value> {
    FailureOr<LMValue> v = i == 0 ? FailureOr<LMValue>(first) : eval(*arg[i], env);
    if (failed(v))
      return failure();
    if (!v->isTensor() || !isa<FloatType>(v->type().getElementType()) || v->type().getRank() != rank)
      return error(arg[i]->loc) << "argument '" << what << "' of '" << name << "' must be a float tensor of rank "
                                << rank << ", got " << describe(*v);
    return v->tensor;
  };
  auto shapeError = [&](size_t i, const char *what, const std::string &want, Value got) {
    return error(arg[i]->loc) << "argument '" << what << "' of '" << name << "' must be " << want << ", got "
                              << describe(LMValue::ofTensor(got));
  };
  auto dimsStr = [](ArrayRef<int64_t> d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i)
      s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
  };

  if (name == "conv1d") {
    FailureOr<Value> x = tensorArg(0, "x", 3), w = tensorArg(1, "w", 3);
    if (failed(x) || failed(w))
      return failure();
    shapes::Dims xd = dimsOf(*x), wd = dimsOf(*w);
    int64_t len = xd[1], cin = xd[2], width = wd[0], cout = wd[2];
    if (wd[1] != cin)
      return shapeError(1, "w", "[width, Cin, Cout] with Cin = " + std::to_string(cin) + " (x's channels)", *w);
    if (width > len)
      return error(call.loc) << "conv1d: filter width " << width << " is longer than the sequence (" << len
                             << "): valid padding leaves no output";
    int64_t out = len - width + 1;
    // The patches are the one tensor that grows (width times x).
    if (failed(checkElementCount({xd[0], out, width * cin}, call.loc)))
      return failure();
    SmallVector<Value> shifted;
    for (int64_t k = 0; k < width; ++k)
      shifted.push_back(sliceAxis(builder, l, *x, 1, k, k + out));
    // Column k * Cin + c of the patches is channel c at offset k: w's row-major order.
    Value patches = concatTree(builder, l, shifted, 2);
    Value w2 = builder.create<ReshapeOp>(l, tensorType({width * cin, cout}, elemTypeOf(*w)), *w);
    Value y = builder.create<MatmulOp>(l, patches, w2, false, false);
    if (arg[2]) {
      FailureOr<Value> b = tensorArg(2, "b", 1);
      if (failed(b))
        return failure();
      if (dimsOf(*b)[0] != cout)
        return shapeError(2, "b", "[Cout] = [" + std::to_string(cout) + "] (w's last dim)", *b);
      y = builder.create<AddOp>(l, y, *b);
    }
    return LMValue::ofTensor(y);
  }

  // lstm: x [B, T, In], w_input [In, 4C], w_state [H, 4C], b [4C], w_proj [C, H].
  FailureOr<Value> x = tensorArg(0, "x", 3), wIn = tensorArg(1, "w_input", 2), wState = tensorArg(2, "w_state", 2),
                   bias = tensorArg(3, "b", 1), wProj = tensorArg(4, "w_proj", 2);
  if (failed(x) || failed(wIn) || failed(wState) || failed(bias) || failed(wProj))
    return failure();
  shapes::Dims xd = dimsOf(*x);
  int64_t batch = xd[0], steps = xd[1], in = xd[2];
  shapes::Dims pd = dimsOf(*wProj);
  int64_t cells = pd[0], hidden = pd[1];
  if (dimsOf(*wIn) != shapes::Dims{in, 4 * cells})
    return shapeError(1, "w_input", "[In, 4 * cells] = " + dimsStr({in, 4 * cells}) + " (x's last dim; w_proj's rows)",
                      *wIn);
  if (dimsOf(*wState) != shapes::Dims{hidden, 4 * cells})
    return shapeError(2, "w_state", "[hidden, 4 * cells] = " + dimsStr({hidden, 4 * cells}) + " (w_proj's shape)",
                      *wState);
  if (dimsOf(*bias) != shapes::Dims{4 * cells})
    return shapeError(3, "b", "[4 * cells] = " + dimsStr({4 * cells}), *bias);
  double clip[2] = {0, 0};
  const char *clipName[2] = {"cell_clip", "proj_clip"};
  for (int i = 0; i < 2; ++i) {
    if (!arg[5 + i])
      continue;
    FailureOr<double> v = evalNumber(*arg[5 + i], env, clipName[i]);
    if (failed(v))
      return failure();
    if (!(*v >= 0))
      return error(arg[5 + i]->loc) << "'" << clipName[i] << "' of 'lstm' must be >= 0 (0: no clipping), got "
                                    << (std::ostringstream() << *v).str();
    clip[i] = *v;
  }
  bool reverse = false;
  if (arg[7]) {
    FailureOr<LMValue> r = eval(*arg[7], env);
    if (failed(r))
      return failure();
    if (r->kind != LMValue::Kind::Bool)
      return error(arg[7]->loc) << "'reverse' of 'lstm' must be true or false, got " << describe(*r);
    reverse = r->boolValue;
  }

  // torch.clamp(v, -c, c): the gradient passes where -c <= v <= c. The
  // bounds are made once, before the loop.
  Value bounds[2][2];
  for (int i = 0; i < 2; ++i)
    if (clip[i] > 0)
      bounds[i][0] = constantScalar(-clip[i], call.loc), bounds[i][1] = constantScalar(clip[i], call.loc);
  auto clamp = [&](Value v, int which) -> Value {
    Value lo = bounds[which][0], hi = bounds[which][1];
    Value inner = builder.create<WhereOp>(l, builder.create<LtOp>(l, v, lo), lo, v);
    return builder.create<WhereOp>(l, builder.create<GtOp>(l, v, hi), hi, inner);
  };
  // Every step's input projection in one GEMM, with the bias.
  Value projected = builder.create<AddOp>(l, builder.create<MatmulOp>(l, *x, *wIn, false, false), *bias);
  Value h, c;
  SmallVector<Value> outputs(steps);
  for (int64_t s = 0; s < steps; ++s) {
    int64_t t = reverse ? steps - 1 - s : s;
    Value gates = builder.create<ReshapeOp>(l, tensorType({batch, 4 * cells}, elemTypeOf(projected)),
                                            sliceAxis(builder, l, projected, 1, t, t + 1));
    // The zero initial state adds nothing at the first step.
    if (h)
      gates = builder.create<AddOp>(l, gates, builder.create<MatmulOp>(l, h, *wState, false, false));
    // AllenNLP's gate order: input, forget, memory (candidate), output.
    auto gate = [&](int64_t k) { return sliceAxis(builder, l, gates, 1, k * cells, (k + 1) * cells); };
    Value ig = builder.create<SigmoidOp>(l, gate(0));
    Value mem = builder.create<TanhOp>(l, gate(2));
    Value og = builder.create<SigmoidOp>(l, gate(3));
    Value next = builder.create<MulOp>(l, ig, mem);
    if (c)
      next = builder.create<AddOp>(l, next, builder.create<MulOp>(l, builder.create<SigmoidOp>(l, gate(1)), c));
    c = clip[0] > 0 ? clamp(next, 0) : next;
    h = builder.create<MatmulOp>(l, builder.create<MulOp>(l, og, builder.create<TanhOp>(l, c)), *wProj, false, false);
    if (clip[1] > 0)
      h = clamp(h, 1);
    outputs[t] = builder.create<ReshapeOp>(l, tensorType({batch, 1, hidden}, elemTypeOf(h)), h);
  }
  return LMValue::ofTensor(concatTree(builder, l, outputs, 1));
}

} // namespace mlir::lm
