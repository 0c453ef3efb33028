//===- Passes.h - lm passes -------------------------------------*- C++ -*-===//
//
// Declarations of the lm passes (generated from Passes.td) and the logic they
// export for reuse.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::lm {

/// Adds `@<name>_train_step` next to the objective `func` (see the pass
/// description). Emits an error at the offending op or function and fails when
/// the objective cannot be differentiated.
FailureOr<func::FuncOp> buildTrainStep(func::FuncOp objective, bool lossScaleInput = false);

/// The name (`lm.input`) of the train step's loss-scale argument: the seed of
/// the backward under fp16's dynamic loss scaling.
inline constexpr llvm::StringLiteral kLossScaleInput = "loss_scale";

/// The fusion rules of -lm-fuse (docs/fusion.md), shared with codegen, which
/// lowers what they admit: an elementwise op a kernel computes per element; a
/// sum_to over leading dimensions; a matmul whose product an epilogue reads.
bool isFusibleElementwise(Operation *op);
bool isFusibleReduction(Operation *op);
bool isEpilogueMatmul(Operation *op);

/// The GEMM operand type of a precision policy (docs/mixed-precision.md):
/// bf16 for "bf16", a null Type for "fp32" (no casts), nullopt for any other
/// name.
std::optional<Type> gemmOperandType(MLIRContext *context, StringRef precision);

/// Rematerialization policies (docs/remat.md): none; full (keep each layer's
/// input, recompute the rest of the layer in the backward); selective (keep
/// GEMM outputs, recompute attention, norms and elementwise chains); auto
/// (the min-cut save/recompute partition with the fewest recomputed FLOPs
/// whose activations fit a budget, then greedy values, then whole layers).
enum class RematPolicy { None, Full, Selective, Auto };
std::optional<RematPolicy> parseRematPolicy(StringRef name);
StringRef stringifyRematPolicy(RematPolicy policy);

/// The layer an op belongs to: the name of the outermost NameLoc in its
/// location (the frontend wraps each copy of a `repeat` in one), or null.
StringAttr getLayerName(Location loc);

/// What -lm-remat decides for one op of a layer's forward.
struct RematDecision {
  enum Kind { Recompute, Keep, ForwardOnly };
  Operation *op;
  StringAttr layer;
  Kind kind;
  StringRef reason; ///< why recomputed or kept
};

struct RematAnalysis {
  /// Every forward op of a layer, in block order.
  SmallVector<RematDecision> decisions;
  /// The ops to clone into the backward, and the values of theirs the backward
  /// reads recomputed (not the kept results of a multi-result op).
  llvm::SetVector<Operation *> recompute;
  llvm::DenseSet<Value> values;
  /// The backward ops that read a recomputed value, in block order.
  SmallVector<Operation *> readers;
  /// auto only: the estimated activation peak before and after, how many
  /// ops its min-cut phase recomputes and at which bytes per FLOP (docs/remat.md,
  /// "auto"), how many values its greedy phase adds, how many layers it
  /// falls back to recomputing whole (full), and how many recomputed ops it
  /// then gives back (keeps) because the budget can spare them.
  int64_t peakBefore = 0, peakAfter = 0;
  unsigned cutOps = 0, greedyValues = 0, fullLayers = 0, givenBack = 0;
  double lambda = 0;
};

/// The decisions of `policy` for a train step (nothing under none). `budget`
/// is auto's: the bytes the train step's activations may peak at, as
/// estimateActivationPeak counts them (ignored by the other policies).
FailureOr<RematAnalysis> analyzeRemat(func::FuncOp trainStep, RematPolicy policy, int64_t budget = 0);
/// Clones the recomputed forward ops into the backward of `trainStep`.
LogicalResult applyRemat(func::FuncOp trainStep, RematPolicy policy, int64_t budget = 0);

/// One value's live interval in a train step, as estimateActivationPeak
/// counts it: from its op (`first`, the op's index in the body) to the last op
/// that reads it or a reshape view of it (`last`). Arguments, returned values
/// and views are not intervals of their own.
struct LiveInterval {
  Value value;
  int64_t first, last, bytes;
};
/// The intervals of a train step's values, in the order of their ops.
SmallVector<LiveInterval> computeLiveIntervals(func::FuncOp trainStep);

/// The peak, over the ops of a train step's body in order, of the bytes of the
/// values live there: a value lives from its op to its last reader; function
/// arguments (parameters, inputs) and returned values (the gradients, which
/// the plan keeps in their own buffers) are not counted, and a reshape is a
/// view of its operand. The plan's arena (first fit over the same live ranges)
/// is at least this; lmc checks the real figure (docs/remat.md, "auto").
int64_t estimateActivationPeak(func::FuncOp trainStep);

/// Entry `name` (data, tensor, zero) of the module's lm.mesh, or `absent` when
/// the module has no mesh or the mesh no such entry. The mesh passes take a
/// pass option first and fall back to it.
inline int64_t meshEntry(ModuleOp module, StringRef name, int64_t absent = 0) {
  if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
    if (auto v = dyn_cast_or_null<IntegerAttr>(mesh.get(name)))
      return v.getInt();
  return absent;
}

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::lm
