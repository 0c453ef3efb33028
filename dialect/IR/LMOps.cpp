//===- LMOps.cpp - lm op type inference and verifiers ----------*- C++ -*-===//
//
// Result type inference and verifiers of the lm ops. Every shape rule comes
// from contract/shape_rules.h, so the dialect, the frontend and the
// runtime accept exactly the same programs; this file only adapts types and
// diagnostics. An op with inferred result types (InferTypeOpInterface) is
// verified by comparing its results with the inferred ones
// (ResultsMatchInferred); the rest of its verifier checks operands only.
// Element types are checked by the ODS constraints and the dialect-wide
// SameFloatElementType trait.
//
//===----------------------------------------------------------------------===//

#include "dialect/IR/LMOps.h"
#include "contract/shape_rules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <cstring>

using namespace mlir;
using namespace mlir::lm;
namespace shapes = lmrt::shapes;
using shapes::Dims;

//===----------------------------------------------------------------------===//
// Dialect-wide trait
//===----------------------------------------------------------------------===//

LogicalResult mlir::OpTrait::lm::impl::verifySameFloatElementType(Operation *op) {
  if (op->hasTrait<MixesFloatTypes>())
    return success();
  Type first;
  auto check = [&](Type t) -> LogicalResult {
    auto shaped = llvm::dyn_cast<ShapedType>(t);
    if (!shaped || !llvm::isa<FloatType>(shaped.getElementType()))
      return success();
    if (!first) {
      first = shaped.getElementType();
      return success();
    }
    if (shaped.getElementType() == first)
      return success();
    return op->emitOpError("mixes float element types ")
           << first << " and " << shaped.getElementType()
           << "; all float operands and results of an lm op share one type";
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers bridging MLIR types and the shared shape rules
//===----------------------------------------------------------------------===//

namespace {

Dims dimsOf(Type type) {
  ArrayRef<int64_t> shape = llvm::cast<ShapedType>(type).getShape();
  return Dims(shape.begin(), shape.end());
}
Dims dimsOf(Value value) { return dimsOf(value.getType()); }
Dims dimsOf(ArrayRef<int64_t> values) { return Dims(values.begin(), values.end()); }

/// The rule messages start with the rule's name ("matmul: ..."); the op
/// diagnostic already names the op, so drop that prefix.
std::string ruleMessage(const std::string &err) {
  size_t colon = err.find(": ");
  return colon == std::string::npos ? err : err.substr(colon + 2);
}

/// Checks that `type` has the shape `expected` (inferred by a shape rule).
LogicalResult checkShape(Operation *op, StringRef what, Type type, const Dims &expected) {
  if (dimsOf(type) == expected)
    return success();
  return op->emitOpError() << what << " type " << type << " does not match the expected shape "
                           << shapes::str(expected);
}

/// Runs a shape rule's outcome through the op's diagnostics: the inferred
/// shape, or failure after reporting the rule's message at the op.
FailureOr<Dims> inferShape(Operation *op, std::optional<Dims> inferred, const std::string &err) {
  if (!inferred) {
    op->emitOpError() << ruleMessage(err);
    return failure();
  }
  return std::move(*inferred);
}

LogicalResult checkEpsilon(Operation *op, const APFloat &epsilon) {
  std::string bad = shapes::layerNormEpsilon(epsilon.convertToDouble());
  if (bad.empty())
    return success();
  return op->emitOpError() << ruleMessage(bad);
}

/// Reads operand shapes and element types for inferReturnTypes, and reports
/// its failures as the verifier would ("'lm.matmul' op ..."). inferReturnTypes
/// also runs inside builders, before any verifier, so an operand that is not a
/// statically shaped tensor is an error here rather than a crash.
class Inference {
public:
  Inference(StringRef opName, std::optional<Location> loc, SmallVectorImpl<Type> &types)
      : opName(opName), loc(loc), types(types) {}

  /// The static shape of `value`; when it has none, an empty shape, and `ok`
  /// cleared so that result() reports it.
  Dims dims(Value value) {
    auto type = llvm::dyn_cast_or_null<RankedTensorType>(value ? value.getType() : Type());
    if (!type || !type.hasStaticShape()) {
      ok = false;
      return {};
    }
    return dimsOf(type);
  }
  Type elementType(Value value) {
    auto type = llvm::dyn_cast_or_null<ShapedType>(value ? value.getType() : Type());
    return type ? type.getElementType() : Type();
  }

  /// A required attribute, as given. A builder may have been given none: the
  /// first missing one is remembered for result() to report, and the caller
  /// goes on with a neutral value.
  template <typename AttrT> AttrT require(AttrT attr, StringRef name) {
    if (!attr && missing.empty())
      missing = name.str();
    return attr;
  }
  Dims listOf(DenseI64ArrayAttr attr, StringRef name) {
    return require(attr, name) ? ::dimsOf(attr.asArrayRef()) : Dims{};
  }
  int64_t intOf(IntegerAttr attr, StringRef name) {
    return require(attr, name) ? attr.getValue().getSExtValue() : 0;
  }

  /// Adds one result of shape `shape` (a rule's outcome) and element type `elem`.
  LogicalResult result(const std::optional<Dims> &shape, const std::string &err, Type elem) {
    if (!missing.empty())
      return emitOptionalError(loc, "'", opName, "' op requires attribute '", missing, "'");
    if (!ok)
      return emitOptionalError(loc, "'", opName, "' op operands must be statically shaped tensors");
    if (!shape)
      return emitOptionalError(loc, "'", opName, "' op ", ruleMessage(err));
    types.push_back(RankedTensorType::get(*shape, elem));
    return success();
  }
  LogicalResult error(const std::string &message) {
    return emitOptionalError(loc, "'", opName, "' op ", message);
  }

private:
  StringRef opName;
  std::optional<Location> loc;
  SmallVectorImpl<Type> &types;
  bool ok = true;
  std::string missing;
};

/// The element type a GEMM of operands `a` and `b` accumulates and returns in:
/// their one type, or f32 for bf16 or f16 operands (-lm-mixed-precision's
/// GEMMs: lm.matmul, lm.linear_cross_entropy). Null after reporting operands
/// of two types (a null operand type is left to the shape checks).
Type gemmResultType(Inference &infer, MLIRContext *context, Value a, StringRef aName, Value b, StringRef bName) {
  Type elem = infer.elementType(a), other = infer.elementType(b);
  if (elem && other && elem != other) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "operands must share one element type, got " << aName << " " << elem << " and " << bName << " " << other;
    (void)infer.error(message);
    return Type();
  }
  if (elem && (elem.isBF16() || elem.isF16()))
    return Float32Type::get(context);
  return elem ? elem : Float32Type::get(context);
}

/// The op's properties with the ODS defaults of absent attributes filled in:
/// a builder infers result types before the op exists (an op gets its
/// defaults when it is created), and adaptors do not fall back on them.
template <typename OpTy>
typename OpTy::Properties withDefaults(MLIRContext *context, typename OpTy::Adaptor &adaptor) {
  typename OpTy::Properties properties = adaptor.getProperties();
  OpTy::populateDefaultProperties(OperationName(OpTy::getOperationName(), context), properties);
  return properties;
}

/// The attention family's shape inference (attention, masked_attention, their
/// grads, attention_stats, attention_grad_stats): q, k, v and, for the masked
/// ops, the mask through shapes::attention with the op's heads, key/value heads
/// and causal flag. `out` is q's shape, or nothing after an error in `err`.
struct AttentionShapes {
  std::optional<Dims> out;
  Dims q, k;
  int64_t heads;
  Type elem;
};
template <typename OpTy>
AttentionShapes inferAttention(Inference &infer, MLIRContext *context, typename OpTy::Adaptor &adaptor,
                               std::string &err, Value mask = nullptr) {
  AttentionShapes a;
  a.q = infer.dims(adaptor.getQ());
  a.k = infer.dims(adaptor.getK());
  Dims v = infer.dims(adaptor.getV()), maskDims = mask ? infer.dims(mask) : Dims{};
  a.heads = infer.intOf(adaptor.getNumHeadsAttr(), "num_heads");
  auto defaults = withDefaults<OpTy>(context, adaptor);
  int64_t kvHeads = infer.intOf(defaults.num_kv_heads, "num_kv_heads");
  bool causal = defaults.causal && defaults.causal.getValue();
  a.out = shapes::attention(a.q, a.k, v, a.heads, err, kvHeads, causal, mask ? &maskDims : nullptr);
  a.elem = infer.elementType(adaptor.getQ());
  return a;
}

/// biased_attention and its grad: q, k, v, mask, bias, segments and the dropout
/// key through shapes::biasedAttention with the op's heads, causal flag, scale
/// and dropout rate.
template <typename OpTy>
AttentionShapes inferBiasedAttention(Inference &infer, MLIRContext *context, typename OpTy::Adaptor &adaptor,
                                     std::string &err) {
  AttentionShapes a;
  a.q = infer.dims(adaptor.getQ());
  a.k = infer.dims(adaptor.getK());
  Dims v = infer.dims(adaptor.getV()), mask = infer.dims(adaptor.getMask()), bias = infer.dims(adaptor.getBias()),
       segments = infer.dims(adaptor.getSegments()), key = infer.dims(adaptor.getKey());
  a.heads = infer.intOf(adaptor.getNumHeadsAttr(), "num_heads");
  auto defaults = withDefaults<OpTy>(context, adaptor);
  int64_t kvHeads = infer.intOf(defaults.num_kv_heads, "num_kv_heads");
  bool causal = defaults.causal && defaults.causal.getValue();
  double scale = defaults.scale ? defaults.scale.getValueAsDouble() : 0.0;
  double dropout = defaults.dropout ? defaults.dropout.getValueAsDouble() : 0.0;
  a.elem = infer.elementType(adaptor.getQ());
  // The site picks the row key's dropout stream; as lm.dropout's, not negative.
  if (IntegerAttr site = adaptor.getSiteAttr(); site && site.getInt() < 0) {
    err = "site must be >= 0, got " + std::to_string(site.getInt());
    return a;
  }
  a.out = shapes::biasedAttention(a.q, a.k, v, mask, bias, segments, key, a.heads, scale, dropout, err, kvHeads,
                                  causal);
  return a;
}

/// The packed attention ops' shape inference: qkv through shapes::packedAttention
/// with the op's heads, key/value heads and causal flag. `out` is q's shape
/// [B, T, H*Dh] (that of y), or nothing after an error in `err`; `q` is qkv's.
template <typename OpTy>
AttentionShapes inferPackedAttention(Inference &infer, MLIRContext *context, typename OpTy::Adaptor &adaptor,
                                     std::string &err) {
  AttentionShapes a;
  a.q = infer.dims(adaptor.getQkv());
  a.heads = infer.intOf(adaptor.getNumHeadsAttr(), "num_heads");
  auto defaults = withDefaults<OpTy>(context, adaptor);
  int64_t kvHeads = infer.intOf(defaults.num_kv_heads, "num_kv_heads");
  bool causal = defaults.causal && defaults.causal.getValue();
  a.out = shapes::packedAttention(a.q, a.heads, err, kvHeads, causal);
  a.elem = infer.elementType(adaptor.getQkv());
  return a;
}

/// dq (q's shape), then dk and dv (the key/value shape) of an attention grad op.
LogicalResult inferAttentionGrads(Inference &infer, const AttentionShapes &a, const std::string &err) {
  if (failed(infer.result(a.out, err, a.elem)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (failed(infer.result(a.out ? std::optional<Dims>(a.k) : std::nullopt, err, a.elem)))
      return failure();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Inferred result types
//===----------------------------------------------------------------------===//

LogicalResult mlir::OpTrait::lm::impl::verifyResultsMatchInferred(Operation *op) {
  auto inferable = llvm::cast<InferTypeOpInterface>(op);
  SmallVector<Type> inferred;
  if (failed(inferable.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                        op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                        op->getRegions(), inferred)))
    return failure();
  // Multi-result ops name the result (dgamma); single results read "result".
  SmallVector<std::string> names(op->getNumResults(), "result");
  if (op->getNumResults() > 1)
    if (auto asmOp = llvm::dyn_cast<OpAsmOpInterface>(op))
      asmOp.getAsmResultNames([&](Value v, StringRef name) {
        names[llvm::cast<OpResult>(v).getResultNumber()] = name.str();
      });
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto want = llvm::cast<ShapedType>(inferred[i]);
    auto got = llvm::cast<ShapedType>(result.getType());
    if (got.getElementType() != want.getElementType())
      return op->emitOpError() << names[i] << " element type " << got.getElementType()
                               << " differs from the operand's " << want.getElementType();
    if (failed(checkShape(op, names[i], got, dimsOf(want))))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims table = infer.dims(adaptor.getTable()), ids = infer.dims(adaptor.getIds());
  return infer.result(shapes::embedding(table, ids, err), err, infer.elementType(adaptor.getTable()));
}

LogicalResult EmbeddingGradAddOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims base = infer.dims(adaptor.getBase()), ids = infer.dims(adaptor.getIds()), dy = infer.dims(adaptor.getDy());
  return infer.result(shapes::embeddingGradAdd(base, ids, dy, err), err, infer.elementType(adaptor.getBase()));
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims lhs = infer.dims(adaptor.getLhs()), rhs = infer.dims(adaptor.getRhs());
  Properties attrs = withDefaults<MatmulOp>(context, adaptor);
  bool tl = llvm::cast<BoolAttr>(attrs.transpose_lhs).getValue();
  bool tr = llvm::cast<BoolAttr>(attrs.transpose_rhs).getValue();
  Type elem = gemmResultType(infer, context, adaptor.getLhs(), "lhs", adaptor.getRhs(), "rhs");
  if (!elem)
    return failure();
  return infer.result(shapes::matmul(lhs, rhs, tl, tr, err), err, elem);
}

// The elementwise classes of LMOps.td (LM_BinaryOp, LM_UnaryOp) define their
// ops' inferReturnTypes with these two.

LogicalResult mlir::lm::detail::inferBroadcast(StringRef opName, std::optional<Location> loc, Value lhs,
                                               Value rhs, SmallVectorImpl<Type> &types) {
  Inference infer(opName, loc, types);
  std::string err;
  std::string name = opName.drop_front(strlen("lm.")).str();
  Dims l = infer.dims(lhs), r = infer.dims(rhs);
  return infer.result(shapes::broadcast(l, r, err, name.c_str()), err, infer.elementType(lhs));
}

LogicalResult mlir::lm::detail::inferElementwise(StringRef opName, std::optional<Location> loc, Value x,
                                                 StringRef what, int64_t minRank, SmallVectorImpl<Type> &types) {
  Inference infer(opName, loc, types);
  Dims dims = infer.dims(x);
  if (x && llvm::isa<RankedTensorType>(x.getType()) && static_cast<int64_t>(dims.size()) < minRank)
    return infer.error((what + " must have rank >= 1 (softmax runs over the last dimension)").str());
  return infer.result(dims, "", infer.elementType(x));
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), gamma = infer.dims(adaptor.getGamma()),
       beta = infer.dims(adaptor.getBeta());
  return infer.result(shapes::layerNorm(x, gamma, beta, err), err, infer.elementType(adaptor.getX()));
}
LogicalResult LayerNormOp::verify() { return checkEpsilon(*this, getEpsilon()); }

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferAttention<AttentionOp>(infer, context, adaptor, err);
  return infer.result(a.out, err, a.elem);
}

LogicalResult MaskedAttentionOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferAttention<MaskedAttentionOp>(infer, context, adaptor, err, adaptor.getMask());
  return infer.result(a.out, err, a.elem);
}

LogicalResult BiasedAttentionOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferBiasedAttention<BiasedAttentionOp>(infer, context, adaptor, err);
  return infer.result(a.out, err, a.elem);
}

LogicalResult BiasedAttentionGradOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferBiasedAttention<BiasedAttentionGradOp>(infer, context, adaptor, err);
  if (failed(inferAttentionGrads(infer, a, err)))
    return failure();
  // dbias: the bias's shape.
  return infer.result(a.out ? std::optional<Dims>(infer.dims(adaptor.getBias())) : std::nullopt, err, a.elem);
}
LogicalResult BiasedAttentionGradOp::verify() {
  return checkShape(*this, "dy", getDy().getType(), dimsOf(getQ()));
}

LogicalResult DynamicSliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), offset = infer.dims(adaptor.getOffset());
  int64_t axis = infer.intOf(adaptor.getAxisAttr(), "axis"), start = infer.intOf(adaptor.getStartAttr(), "start"),
          size = infer.intOf(adaptor.getSizeAttr(), "size");
  return infer.result(shapes::dynamicSlice(x, offset, axis, start, size, err), err, infer.elementType(adaptor.getX()));
}

LogicalResult CacheWriteOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims cache = infer.dims(adaptor.getCache()), x = infer.dims(adaptor.getX()),
       offset = infer.dims(adaptor.getOffset());
  return infer.result(shapes::cacheWrite(cache, x, offset, err), err, infer.elementType(adaptor.getCache()));
}

LogicalResult CachedAttentionOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims q = infer.dims(adaptor.getQ()), k = infer.dims(adaptor.getK()), v = infer.dims(adaptor.getV()),
       offset = infer.dims(adaptor.getOffset());
  int64_t heads = infer.intOf(adaptor.getNumHeadsAttr(), "num_heads");
  int64_t kvHeads = infer.intOf(withDefaults<CachedAttentionOp>(context, adaptor).num_kv_heads, "num_kv_heads");
  return infer.result(shapes::cachedAttention(q, k, v, offset, heads, err, kvHeads), err,
                      infer.elementType(adaptor.getQ()));
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), gamma = infer.dims(adaptor.getGamma());
  return infer.result(shapes::rmsNorm(x, gamma, err), err, infer.elementType(adaptor.getX()));
}
LogicalResult RmsNormOp::verify() { return checkEpsilon(*this, getEpsilon()); }

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims c = infer.dims(adaptor.getCond()), a = infer.dims(adaptor.getLhs()), b = infer.dims(adaptor.getRhs());
  return infer.result(shapes::where(c, a, b, err), err, infer.elementType(adaptor.getLhs()));
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims a = infer.dims(adaptor.getLhs()), b = infer.dims(adaptor.getRhs());
  int64_t axis = infer.intOf(adaptor.getAxisAttr(), "axis");
  return infer.result(shapes::concat(a, b, axis, err), err, infer.elementType(adaptor.getLhs()));
}

LogicalResult TakeAlongAxisOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), indices = infer.dims(adaptor.getIndices());
  int64_t axis = infer.intOf(adaptor.getAxisAttr(), "axis");
  return infer.result(shapes::takeAlongAxis(x, indices, axis, err), err, infer.elementType(adaptor.getX()));
}

LogicalResult ReduceMaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  Dims axes = infer.listOf(adaptor.getAxesAttr(), "axes");
  return infer.result(shapes::reduceAxes(x, axes, err), err, infer.elementType(adaptor.getX()));
}

LogicalResult ReshapeOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(*this, shapes::reshape(dimsOf(getX()), dimsOf(getType()), err), err);
  return success(succeeded(shape));
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  return infer.result(shapes::collective("all_reduce", x, infer.intOf(adaptor.getMeshAxisAttr(), "mesh_axis"),
                                         infer.intOf(adaptor.getGroupSizeAttr(), "group_size"), 0, err), err,
                      infer.elementType(adaptor.getX()));
}

LogicalResult ReduceScatterOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  return infer.result(shapes::collective("reduce_scatter", x, infer.intOf(adaptor.getMeshAxisAttr(), "mesh_axis"),
                                         infer.intOf(adaptor.getGroupSizeAttr(), "group_size"),
                                         infer.intOf(adaptor.getDimAttr(), "dim"), err),
                      err, infer.elementType(adaptor.getX()));
}

LogicalResult AllGatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  return infer.result(shapes::collective("all_gather", x, infer.intOf(adaptor.getMeshAxisAttr(), "mesh_axis"),
                                         infer.intOf(adaptor.getGroupSizeAttr(), "group_size"),
                                         infer.intOf(adaptor.getDimAttr(), "dim"), err),
                      err, infer.elementType(adaptor.getX()));
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  Dims permutation = infer.listOf(adaptor.getPermutationAttr(), "permutation");
  return infer.result(shapes::transpose(x, permutation, err), err, infer.elementType(adaptor.getX()));
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX());
  Dims start = infer.listOf(adaptor.getStartAttr(), "start"),
       limit = infer.listOf(adaptor.getLimitAttr(), "limit"),
       stride = infer.listOf(adaptor.getStrideAttr(), "stride");
  return infer.result(shapes::slice(x, start, limit, stride, err), err, infer.elementType(adaptor.getX()));
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims logits = infer.dims(adaptor.getLogits()), targets = infer.dims(adaptor.getTargets());
  return infer.result(shapes::crossEntropy(logits, targets, err), err, infer.elementType(adaptor.getLogits()));
}

LogicalResult AccuracyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims logits = infer.dims(adaptor.getLogits()), targets = infer.dims(adaptor.getTargets());
  return infer.result(shapes::crossEntropy(logits, targets, err), err, infer.elementType(adaptor.getLogits()));
}

LogicalResult SampleOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims logits = infer.dims(adaptor.getLogits()), bits = infer.dims(adaptor.getBits());
  return infer.result(shapes::sample(logits, bits, err), err, IntegerType::get(ctx, 32));
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), key = infer.dims(adaptor.getKey());
  return infer.result(shapes::dropout(x, key, err), err, infer.elementType(adaptor.getX()));
}
LogicalResult DropoutOp::verify() {
  std::string bad = shapes::dropoutRate(getP().convertToDouble());
  if (!bad.empty())
    return emitOpError() << ruleMessage(bad);
  if (getSiteAttr().getInt() < 0)
    return emitOpError() << "site must be >= 0, got " << getSiteAttr().getInt();
  return success();
}

LogicalResult WhereIntOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims c = infer.dims(adaptor.getCond()), a = infer.dims(adaptor.getLhs()), b = infer.dims(adaptor.getRhs());
  return infer.result(shapes::where(c, a, b, err), err, IntegerType::get(ctx, 32));
}

LogicalResult CastOp::verify() {
  if (failed(checkShape(*this, "result", getType(), dimsOf(getX()))))
    return failure();
  Type from = getX().getType().getElementType(), to = getType().getElementType();
  auto reduced = [](Type t) { return t.isBF16() || t.isF16(); };
  if ((from.isF32() && reduced(to)) || (reduced(from) && to.isF32()))
    return success();
  return emitOpError("converts between f32 and bf16 or f16, not ") << from << " to " << to;
}

LogicalResult ToFloatOp::verify() { return checkShape(*this, "result", getType(), dimsOf(getX())); }

LogicalResult ToIntOp::verify() { return checkShape(*this, "result", getType(), dimsOf(getX())); }

LogicalResult AxisIndexOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(*this, shapes::axisIndex(getMeshAxis(), getGroupSize(), err), err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "result", getType(), *shape);
}

LogicalResult SumToOp::verify() {
  std::string err;
  Dims to = dimsOf(getType());
  bool ok = shapes::sumTo(dimsOf(getX()), to, err);
  return inferShape(*this, ok ? std::optional<Dims>(to) : std::nullopt, err);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult GeluGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  return detail::inferElementwise(getOperationName(), loc, adaptor.getX(), "x", 0, types);
}
LogicalResult GeluGradOp::verify() { return checkShape(*this, "dy", getDy().getType(), dimsOf(getX())); }
LogicalResult GeluErfGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return detail::inferElementwise(getOperationName(), loc, adaptor.getX(), "x", 0, types);
}
LogicalResult GeluErfGradOp::verify() { return checkShape(*this, "dy", getDy().getType(), dimsOf(getX())); }

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), gamma = infer.dims(adaptor.getGamma());
  Type elem = infer.elementType(adaptor.getX());
  std::optional<Dims> ok = shapes::layerNorm(x, gamma, gamma, err);
  if (failed(infer.result(ok, err, elem)))
    return failure();
  // dgamma and dbeta have gamma's shape [D].
  if (failed(infer.result(gamma, err, elem)))
    return failure();
  return infer.result(gamma, err, elem);
}
LogicalResult LayerNormGradOp::verify() {
  if (failed(checkEpsilon(*this, getEpsilon())))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), dimsOf(getX()));
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  return inferAttentionGrads(infer, inferAttention<AttentionGradOp>(infer, context, adaptor, err), err);
}

LogicalResult AttentionStatsOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferAttention<AttentionStatsOp>(infer, context, adaptor, err);
  // y has q's shape; lse is [B, H, Tq].
  if (failed(infer.result(a.out, err, a.elem)))
    return failure();
  return infer.result(a.out ? std::optional<Dims>(shapes::attentionLse(a.q, a.heads)) : std::nullopt, err, a.elem);
}

LogicalResult AttentionGradStatsOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                     Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  return inferAttentionGrads(infer, inferAttention<AttentionGradStatsOp>(infer, context, adaptor, err), err);
}
LogicalResult AttentionGradStatsOp::verify() {
  if (failed(checkShape(*this, "y", getY().getType(), dimsOf(getQ()))) ||
      failed(checkShape(*this, "dy", getDy().getType(), dimsOf(getQ()))))
    return failure();
  return checkShape(*this, "lse", getLse().getType(), shapes::attentionLse(dimsOf(getQ()), getNumHeads()));
}

LogicalResult PackedAttentionOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferPackedAttention<PackedAttentionOp>(infer, context, adaptor, err);
  return infer.result(a.out, err, a.elem);
}

LogicalResult PackedAttentionStatsOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferPackedAttention<PackedAttentionStatsOp>(infer, context, adaptor, err);
  // y: [B, T, H*Dh]; lse: [B, H, T].
  if (failed(infer.result(a.out, err, a.elem)))
    return failure();
  return infer.result(a.out ? std::optional<Dims>(shapes::attentionLse(*a.out, a.heads)) : std::nullopt, err, a.elem);
}

LogicalResult PackedAttentionGradStatsOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  AttentionShapes a = inferPackedAttention<PackedAttentionGradStatsOp>(infer, context, adaptor, err);
  // dqkv has qkv's shape.
  return infer.result(a.out ? std::optional<Dims>(a.q) : std::nullopt, err, a.elem);
}
LogicalResult PackedAttentionGradStatsOp::verify() {
  std::string err;
  std::optional<Dims> q = shapes::packedAttention(dimsOf(getQkv()), getNumHeads(), err, getNumKvHeads(), getCausal());
  if (!q) // the result type inference reports it
    return success();
  const Dims &y = *q;
  if (failed(checkShape(*this, "y", getY().getType(), y)) || failed(checkShape(*this, "dy", getDy().getType(), y)))
    return failure();
  return checkShape(*this, "lse", getLse().getType(), shapes::attentionLse(y, getNumHeads()));
}

LogicalResult MaskedAttentionGradOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  // Nothing for the mask: it is data.
  return inferAttentionGrads(infer,
                             inferAttention<MaskedAttentionGradOp>(infer, context, adaptor, err, adaptor.getMask()),
                             err);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims x = infer.dims(adaptor.getX()), gamma = infer.dims(adaptor.getGamma());
  Type elem = infer.elementType(adaptor.getX());
  if (failed(infer.result(shapes::rmsNorm(x, gamma, err), err, elem)))
    return failure();
  return infer.result(gamma, err, elem); // dgamma: [D]
}
LogicalResult RmsNormGradOp::verify() {
  if (failed(checkEpsilon(*this, getEpsilon())))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), dimsOf(getX()));
}
LogicalResult AttentionGradOp::verify() {
  return checkShape(*this, "dy", getDy().getType(), dimsOf(getQ()));
}
LogicalResult MaskedAttentionGradOp::verify() {
  return checkShape(*this, "dy", getDy().getType(), dimsOf(getQ()));
}

LogicalResult SoftmaxGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return detail::inferElementwise(getOperationName(), loc, adaptor.getY(), "y", 1, types);
}
LogicalResult SoftmaxGradOp::verify() { return checkShape(*this, "dy", getDy().getType(), dimsOf(getY())); }

LogicalResult CrossEntropyWithGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                       SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims logits = infer.dims(adaptor.getLogits()), targets = infer.dims(adaptor.getTargets());
  // dlogits has the logits' shape; the loss is the rule's scalar.
  std::optional<Dims> loss = shapes::crossEntropy(logits, targets, err);
  Type elem = infer.elementType(adaptor.getLogits());
  if (failed(infer.result(loss ? std::optional<Dims>(logits) : std::nullopt, err, elem)))
    return failure();
  return infer.result(loss, err, elem);
}

// h and w of one type; bf16 or f16 ones (-lm-mixed-precision) give f32 results.
LogicalResult LinearCrossEntropyOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                     Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims h = infer.dims(adaptor.getH()), w = infer.dims(adaptor.getW()), targets = infer.dims(adaptor.getTargets());
  Type elem = gemmResultType(infer, context, adaptor.getH(), "h", adaptor.getW(), "w");
  if (!elem)
    return failure();
  return infer.result(shapes::linearCrossEntropy(h, w, targets, adaptor.getTransposeRhs(), err), err, elem);
}

LogicalResult LinearCrossEntropyWithGradOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims h = infer.dims(adaptor.getH()), w = infer.dims(adaptor.getW()), targets = infer.dims(adaptor.getTargets());
  // dh and dw have the operands' shapes once the rule accepts them; the loss is its scalar.
  std::optional<Dims> loss = shapes::linearCrossEntropy(h, w, targets, adaptor.getTransposeRhs(), err);
  Type elem = gemmResultType(infer, context, adaptor.getH(), "h", adaptor.getW(), "w");
  if (!elem)
    return failure();
  if (Type seed = infer.elementType(adaptor.getDloss()); seed && seed != elem) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "dloss must be " << elem << " (the type of the loss), got " << seed;
    return infer.error(message);
  }
  if (failed(infer.result(loss ? std::optional<Dims>(h) : std::nullopt, err, elem)) ||
      failed(infer.result(loss ? std::optional<Dims>(w) : std::nullopt, err, elem)))
    return failure();
  return infer.result(loss, err, elem);
}

// lse, target_logit, max and argmax are one value per row: targets' shape, of h's type.
LogicalResult LinearCrossEntropyStatsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims h = infer.dims(adaptor.getH()), w = infer.dims(adaptor.getW()), targets = infer.dims(adaptor.getTargets()),
       bias = infer.dims(adaptor.getBias());
  std::optional<Dims> rows = shapes::linearCrossEntropyStats(h, w, targets, bias, adaptor.getTransposeRhs(), err);
  Type elem = infer.elementType(adaptor.getH());
  for (int i = 0; i < 4; ++i)
    if (failed(infer.result(rows, err, elem)))
      return failure();
  return success();
}

// dh, dw and dbias have the shapes of h, w and bias once the rule accepts the operands.
LogicalResult LinearCrossEntropyStatsGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                              Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims h = infer.dims(adaptor.getH()), w = infer.dims(adaptor.getW()), targets = infer.dims(adaptor.getTargets()),
       bias = infer.dims(adaptor.getBias());
  Dims lse = infer.dims(adaptor.getLse()), dlse = infer.dims(adaptor.getDlse()),
       dtarget = infer.dims(adaptor.getDtarget());
  std::optional<Dims> rows = shapes::linearCrossEntropyStats(h, w, targets, bias, adaptor.getTransposeRhs(), err,
                                                             "linear_cross_entropy_stats_grad",
                                                             {{"lse", &lse}, {"dlse", &dlse}, {"dtarget", &dtarget}});
  Type elem = infer.elementType(adaptor.getH());
  for (const Dims *shape : {&h, &w, &bias})
    if (failed(infer.result(rows ? std::optional<Dims>(*shape) : std::nullopt, err, elem)))
      return failure();
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  Inference infer(getOperationName(), loc, types);
  std::string err;
  Dims logits = infer.dims(adaptor.getLogits()), targets = infer.dims(adaptor.getTargets());
  // The rule checks logits against targets; dlogits has the logits' shape.
  std::optional<Dims> ok = shapes::crossEntropy(logits, targets, err);
  return infer.result(ok ? std::optional<Dims>(logits) : std::nullopt, err,
                      infer.elementType(adaptor.getLogits()));
}

LogicalResult EmbeddingGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape =
      inferShape(*this, shapes::embedding(dimsOf(getType()), dimsOf(getIds()), err), err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), *shape);
}

LogicalResult SliceGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(*this,
                                     shapes::slice(dimsOf(getType()), dimsOf(getStart()),
                                                   dimsOf(getLimit()), dimsOf(getStride()), err),
                                     err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), *shape);
}

/// dx has the forward x's shape (the result type): dy must be what
/// take_along_axis gives for it.
LogicalResult TakeAlongAxisGradOp::verify() {
  std::string err;
  FailureOr<Dims> shape = inferShape(
      *this, shapes::takeAlongAxis(dimsOf(getType()), dimsOf(getIndices()), getAxis(), err), err);
  if (failed(shape))
    return failure();
  return checkShape(*this, "dy", getDy().getType(), *shape);
}

#define GET_OP_CLASSES
#include "dialect/IR/LMOps.cpp.inc"

#include "dialect/IR/LMInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

void FusionOp::build(OpBuilder &builder, OperationState &state, TypeRange resultTypes, ValueRange inputs) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult FusionOp::verify() {
  if (getResults().empty())
    return emitOpError("must have at least one result");
  return success();
}

LogicalResult FusionOp::verifyRegions() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("region has ") << block.getNumArguments() << " arguments for " << getInputs().size()
                                      << " inputs";
  for (auto [i, arg, input] : llvm::enumerate(block.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("region argument ") << i << " has type " << arg.getType() << ", but input " << i
                                              << " has type " << input.getType();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("region must end in lm.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("lm.yield returns ") << yield.getValues().getTypes() << " but the results are "
                                            << getResultTypes();
  for (Operation &op : block.without_terminator())
    if (op.getDialect() != (*this)->getDialect() || isa<FusionOp>(op))
      return op.emitOpError("cannot be inside an lm.fusion region (only lm ops, not nested fusions)");
  return success();
}
