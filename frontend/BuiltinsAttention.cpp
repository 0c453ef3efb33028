//===- BuiltinsAttention.cpp - attention with a bias and segments ---------===//
//
// attention(q, k, v, heads = H, bias = b, segments = s, scale = c [, causal,
// mask, kv_heads, dropout]) emits lm.biased_attention: the fused kernels add
// `b` (f32, broadcast to [B, H, Tq, Tk]) to the scaled scores, hide keys of
// another segment and drop probabilities, so T5's relative-position bias,
// ALiBi, packed rows and attention dropout keep the flash kernel. The operands
// it is not given are rank-0 constants (mask 1, bias 0, segments 0, key 0:
// none), the op's convention for "absent".
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "contract/shape_rules.h"
#include "dialect/IR/LMOps.h"

#include <cmath>

namespace mlir::lm {

namespace shapes = lmrt::shapes;

namespace {
shapes::Dims dimsOfValue(Value v) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  return {shape.begin(), shape.end()};
}
} // namespace

FailureOr<LMValue> MLIRGen::emitBiasedAttention(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                                Env &env, Value qkv[3], int64_t heads, bool causal, int64_t kvHeads,
                                                Value mask, double dropout) {
  Location l = loc(call.loc);
  Type elem = cast<RankedTensorType>(qkv[0].getType()).getElementType();
  auto scalar = [&](Type type, Attribute value) -> Value {
    auto t = RankedTensorType::get({}, type);
    return builder.create<ConstantOp>(l, TypeRange{t}, ValueRange{},
                                      ArrayRef<NamedAttribute>{builder.getNamedAttr(
                                          "value", DenseElementsAttr::get(t, value))});
  };
  Value bias, segments;
  if (arg[7]) {
    FailureOr<LMValue> b = eval(*arg[7], env);
    if (failed(b))
      return failure();
    FailureOr<Value> t = floatTensor(*b, arg[7]->loc, "argument 'bias' of 'attention'");
    if (failed(t))
      return failure();
    if (cast<RankedTensorType>(t->getType()).getElementType() != elem)
      return error(arg[7]->loc) << "argument 'bias' of 'attention' must have the element type of q, got "
                                << describe(*b);
    bias = *t;
  }
  if (arg[8]) {
    FailureOr<LMValue> s = eval(*arg[8], env);
    if (failed(s))
      return failure();
    if (!s->isTensor() || !s->type().getElementType().isInteger(32))
      return error(arg[8]->loc) << "argument 'segments' of 'attention' must be an i32 tensor [B, T] (a document "
                                   "id a token), got "
                                << describe(*s);
    segments = s->tensor;
  }
  double scale = 0; // 1/sqrt(head size)
  if (arg[9]) {
    FailureOr<double> c = evalNumber(*arg[9], env, "the score scale 'scale' of 'attention'");
    if (failed(c))
      return failure();
    if (!(*c > 0) || !std::isfinite(*c))
      return error(arg[9]->loc) << "scale must be a finite number > 0, got " << *c;
    scale = *c;
  }
  // A number (T5's decoder passes mask 1.0) is a rank-0 tensor: no key mask.
  auto ranked = [](Value v) { return v && cast<RankedTensorType>(v.getType()).getRank() > 0; };
  const bool hasMask = ranked(mask), hasSegments = ranked(segments);
  if (!mask)
    mask = scalar(elem, FloatAttr::get(elem, 1.0));
  if (!bias)
    bias = scalar(elem, FloatAttr::get(elem, 0.0));
  if (!segments)
    segments = scalar(builder.getI32Type(), builder.getI32IntegerAttr(0));
  Value key; // decoding never drops (the caller passes dropout 0)
  if (dropout > 0) {
    FailureOr<Value> k = dropoutKey(dimsOfValue(qkv[0]), call.loc);
    if (failed(k))
      return failure();
    key = *k;
  } else {
    key = scalar(builder.getI32Type(), builder.getI32IntegerAttr(0));
  }
  // In a decode or encode function the keys and values may be a cache or the
  // encoder's states, which that function checks the shapes of.
  if (decode) {
    FailureOr<Value> r = emitDecodedBiasedAttention(env, call.loc, qkv, mask, hasMask, bias, segments, hasSegments,
                                                    key, heads, causal, kvHeads, scale);
    return failed(r) ? FailureOr<LMValue>(failure()) : LMValue::ofTensor(*r);
  }
  std::string err;
  if (!shapes::biasedAttention(dimsOfValue(qkv[0]), dimsOfValue(qkv[1]), dimsOfValue(qkv[2]), dimsOfValue(mask),
                               dimsOfValue(bias), dimsOfValue(segments), dimsOfValue(key), heads, scale, dropout, err,
                               kvHeads, causal))
    return error(call.loc) << err;
  return LMValue::ofTensor(builder.create<BiasedAttentionOp>(l, qkv[0], qkv[1], qkv[2], mask, bias, segments, key,
                                                             heads, causal, kvHeads, llvm::APFloat(scale),
                                                             llvm::APFloat(dropout),
                                                             dropout > 0 ? cur->dropoutSites++ : 0));
}

} // namespace mlir::lm
