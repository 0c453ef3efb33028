//===- PlanConvert.cpp - MLIR types and attributes in plan form -----------===//

#include "codegen/PlanConvert.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::lm;
namespace plan = lmrt::plan;

FailureOr<plan::TensorType> mlir::lm::convertType(Type type, function_ref<InFlightDiagnostic()> emit) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emit() << "has type " << type << "; plans hold ranked tensors only", failure();
  if (!tensor.hasStaticShape())
    return emit() << "has type " << type
                  << " with a dynamic dimension; plans need static shapes (fix the size in the source or with -D)",
           failure();
  plan::TensorType result;
  Type elt = tensor.getElementType();
  if (elt.isF32())
    result.set_dtype(plan::F32);
  else if (elt.isF64())
    result.set_dtype(plan::F64);
  else if (elt.isInteger(32))
    result.set_dtype(plan::I32);
  else if (elt.isBF16())
    result.set_dtype(plan::BF16);
  else if (elt.isF16())
    result.set_dtype(plan::F16);
  else
    return emit() << "has element type " << elt << "; the runtime supports f32, f64, i32, bf16 and f16", failure();
  // The contract rejects a type of more than 2^50 bytes at 8 bytes an element
  // (checkPlanType); checking the element count here, before the dims reach a
  // plan type, also keeps typeBytes and every size sum in the writer far from
  // int64 overflow.
  int64_t numel = 1;
  for (int64_t d : tensor.getShape()) {
    if (llvm::MulOverflow(numel, d, numel) || numel > lmrt::kMaxArenaBytes / 8)
      return emit() << "has type " << type << ", which is too large for the runtime (at most 2^47 elements)",
             failure();
    result.add_shape(d);
  }
  return result;
}

FailureOr<std::string> mlir::lm::constantBytes(DenseElementsAttr attr) {
  std::string bytes;
  auto append = [&](uint64_t bits, unsigned width) {
    for (unsigned i = 0; i < width / 8; ++i)
      bytes.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  };
  Type elt = attr.getElementType();
  if (elt.isF32() || elt.isF64()) {
    for (const APFloat &v : attr.getValues<APFloat>())
      append(v.bitcastToAPInt().getZExtValue(), elt.getIntOrFloatBitWidth());
  } else if (elt.isInteger(32)) {
    for (const APInt &v : attr.getValues<APInt>())
      append(v.getZExtValue(), 32);
  } else {
    return failure();
  }
  return bytes;
}

FailureOr<plan::Attr> mlir::lm::convertAttr(Attribute attr) {
  plan::Attr result;
  if (auto b = dyn_cast<BoolAttr>(attr))
    result.set_b(b.getValue());
  else if (isa<UnitAttr>(attr))
    result.set_b(true);
  else if (auto i = dyn_cast<IntegerAttr>(attr))
    result.set_i(i.getValue().getSExtValue());
  else if (auto f = dyn_cast<FloatAttr>(attr))
    result.set_f(f.getValueAsDouble());
  else if (auto s = dyn_cast<StringAttr>(attr))
    result.set_s(s.str());
  else if (auto list = dyn_cast<DenseI64ArrayAttr>(attr))
    for (int64_t v : list.asArrayRef())
      result.mutable_ints()->add_v(v);
  else if (auto array = dyn_cast<ArrayAttr>(attr)) {
    result.mutable_ints(); // an empty list is still a list
    for (Attribute element : array) {
      auto i = dyn_cast<IntegerAttr>(element);
      if (!i)
        return failure();
      result.mutable_ints()->add_v(i.getValue().getSExtValue());
    }
  } else if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    FailureOr<std::string> bytes = constantBytes(dense);
    if (failed(bytes))
      return failure();
    result.set_data(*bytes);
  } else {
    return failure();
  }
  return result;
}

std::string mlir::lm::formatLoc(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().strref() + ":" + Twine(file.getLine()) + ":" + Twine(file.getColumn())).str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return formatLoc(name.getChildLoc());
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return formatLoc(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string s = formatLoc(inner);
      if (!s.empty())
        return s;
    }
  return "";
}

std::string mlir::lm::formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::optional<double> mlir::lm::numberValue(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return static_cast<double>(i.getValue().getSExtValue());
  return std::nullopt;
}

LogicalResult mlir::lm::convertInit(DictionaryAttr init, plan::Init &out, function_ref<InFlightDiagnostic()> emit) {
  if (!init)
    return emit() << "has no lm.init initialiser";
  auto kind = init.getAs<StringAttr>("kind");
  if (!kind)
    return emit() << "has an lm.init without a string 'kind'";
  auto number = [&](StringRef key, double fallback) -> FailureOr<double> {
    Attribute a = init.get(key);
    if (!a)
      return fallback;
    if (std::optional<double> v = numberValue(a))
      return *v;
    return emit() << "has lm.init." << key << " = " << a << ", not a number", failure();
  };
  StringRef k = kind.getValue();
  if (k == "zeros") {
    out.set_kind(plan::Init::ZEROS);
  } else if (k == "ones") {
    out.set_kind(plan::Init::ONES);
  } else if (k == "normal") {
    FailureOr<double> mean = number("mean", 0.0), std = number("std", 1.0);
    if (failed(mean) || failed(std))
      return failure();
    out.set_kind(plan::Init::NORMAL);
    out.set_mean(*mean);
    out.set_std(*std);
  } else if (k == "uniform") {
    FailureOr<double> low = number("low", 0.0), high = number("high", 1.0);
    if (failed(low) || failed(high))
      return failure();
    out.set_kind(plan::Init::UNIFORM);
    out.set_low(*low);
    out.set_high(*high);
  } else if (k == "orthogonal") {
    FailureOr<double> gain = number("gain", 1.0), blocks = number("blocks", 1.0);
    if (failed(gain) || failed(blocks))
      return failure();
    if (*blocks != std::floor(*blocks))
      return emit() << "has lm.init.blocks = " << *blocks << ", not a whole number";
    out.set_kind(plan::Init::ORTHOGONAL);
    out.set_gain(*gain);
    out.set_orthogonal_blocks((int64_t)*blocks);
  } else if (k == "blocks") {
    auto parts = init.getAs<ArrayAttr>("blocks");
    if (!parts)
      return emit() << "has a blocks lm.init without a 'blocks' array";
    out.set_kind(plan::Init::BLOCKS);
    for (Attribute a : parts) {
      std::optional<double> v = numberValue(a);
      if (!v)
        return emit() << "has lm.init.blocks holding " << a << ", not a number";
      out.add_blocks(*v);
    }
  } else {
    return emit() << "has unknown initialiser kind '" << k << "' (expected zeros, ones, normal, uniform, blocks or orthogonal)";
  }
  if (std::optional<lmrt::contract::InitViolation> bad = lmrt::contract::checkInit(out))
    return emit() << "has a " << bad->kind << " lm.init with " << bad->values << "; " << bad->rule;
  return success();
}

LogicalResult mlir::lm::convertSharding(DictionaryAttr sharding, int64_t shards, plan::ParamSharding &out,
                                        function_ref<InFlightDiagnostic()> emit) {
  auto axes = sharding.getAs<ArrayAttr>("split_axes");
  if (!axes)
    return emit() << "has an lm.sharding without split_axes: " << sharding;
  int64_t dim = -1;
  for (auto [d, a] : llvm::enumerate(axes)) {
    auto list = dyn_cast<ArrayAttr>(a);
    if (!list)
      return emit() << "has lm.sharding split_axes " << axes << "; each entry must be a list of mesh axes";
    if (list.empty())
      continue;
    auto axis = list.size() == 1 ? dyn_cast<IntegerAttr>(list[0]) : IntegerAttr();
    if (!axis || axis.getInt() != 1 || dim >= 0)
      return emit() << "has lm.sharding split_axes " << axes
                    << "; a parameter is split along one dimension over mesh axis 1 (tensor)";
    dim = d;
  }
  if (dim < 0)
    return emit() << "has an lm.sharding that splits nothing: " << sharding;
  auto segments = sharding.getAs<IntegerAttr>("segments");
  if (shards < 2)
    return emit() << "has an lm.sharding, and the module's lm.mesh has no tensor axis";
  out.set_dim(dim);
  out.set_segments(segments ? segments.getInt() : 1);
  out.set_mesh_axis(1);
  out.set_shards(shards);
  // A padded split (a vocabulary the axis does not divide): the logical size.
  if (auto size = sharding.getAs<IntegerAttr>("logical_size")) {
    if (size.getInt() < 1 || out.segments() != 1)
      return emit() << "has lm.sharding logical_size " << size.getInt() << "; a padded split has one segment and a "
                    << "logical size of at least 1";
    out.set_logical_size(size.getInt());
  }
  return success();
}
