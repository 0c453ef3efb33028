//===- PlanConvert.h - MLIR types and attributes in plan form ---*- C++ -*-===//
//
// The leaf conversions of the plan writer: tensor types, constant payloads,
// step attributes, source locations and parameter initialisers, each from its
// MLIR form to its plan.proto form (sizes of plan types: lmrt::typeBytes and
// friends of contract/contract.h). Failures that break the plan contract are
// reported through the caller's `emit`, which names the value concerned.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"
#include "contract/plan.pb.h"
#include "contract/contract.h"
#include <optional>
#include <string>

namespace mlir::lm {

/// A statically shaped f32/f64/i32 ranked tensor type in plan form, small enough
/// for the runtime; anything else is reported through `emit` ("<value> has type ...").
FailureOr<lmrt::plan::TensorType> convertType(Type type, function_ref<InFlightDiagnostic()> emit);

/// Raw little-endian bytes of a dense f32/f64/i32 constant, splats expanded;
/// failure for other element types.
FailureOr<std::string> constantBytes(DenseElementsAttr attr);

/// A step attribute in plan form (docs/dialect.md: integers are i64, floats
/// f64, lists DenseI64ArrayAttr, flags BoolAttr; also strings, unit attributes
/// as true, integer arrays and dense constants); failure for anything else.
FailureOr<lmrt::plan::Attr> convertAttr(Attribute attr);

/// The value of a float or integer attribute as a double (config and init values
/// may be written either way); std::nullopt for anything else.
std::optional<double> numberValue(Attribute attr);

/// `value` as printf's %g writes it ("0.001", "-1", "nan"), for messages.
std::string formatNumber(double value);

/// "file:line:col" of the innermost source position of `loc` ("" if it has none).
std::string formatLoc(Location loc);

/// The parameter initialiser from `lm.init = {kind = "normal", mean = .., std = ..}`
/// (kinds zeros, ones, normal, uniform), held to the plan contract's bounds
/// (contract/contract.h, checkInit); errors go through `emit`.
LogicalResult convertInit(DictionaryAttr init, lmrt::plan::Init &out, function_ref<InFlightDiagnostic()> emit);

/// A tensor-parallel parameter's slice from `lm.sharding = {split_axes = [[], [1]],
/// segments = S}` (-lm-spmd, docs/distributed.md) over the `shards` ranks of the
/// mesh's tensor axis: one dimension split over mesh axis 1; errors go through `emit`.
LogicalResult convertSharding(DictionaryAttr sharding, int64_t shards, lmrt::plan::ParamSharding &out,
                              function_ref<InFlightDiagnostic()> emit);

} // namespace mlir::lm
