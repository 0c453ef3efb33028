//===- Autodiff.cpp - Reverse-mode autodiff of objectives -------*- C++ -*-===//
//
// -lm-autodiff: for every objective (`func.func` with `lm.objective`) adds a
// train step that recomputes the forward and then runs the reverse sweep:
// ops are visited in reverse order and each differentiable op emits its VJP
// through GradientOpInterface (the rules live with the dialect, in
// dialect/IR/GradientRules/). The pass itself knows no op: it only tracks
// which values depend on parameters, seeds the loss adjoint with 1, and
// accumulates adjoints with lm.add where a value has several uses.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMAUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

constexpr llvm::StringLiteral kObjectiveAttr = "lm.objective";
constexpr llvm::StringLiteral kTrainStepAttr = "lm.train_step";
constexpr llvm::StringLiteral kParamAttr = "lm.param";
constexpr llvm::StringLiteral kGradOfAttr = "lm.grad_of";
constexpr llvm::StringLiteral kFrozenAttr = "lm.frozen";
constexpr llvm::StringLiteral kInputAttr = "lm.input";

/// Adjoints of the values of one function, summed over their uses.
class AdjointMap {
public:
  explicit AdjointMap(OpBuilder &builder) : builder(builder) {}

  /// Adds `grad` to the adjoint of `primal` (an lm.add after the first use).
  void accumulate(Value primal, Value grad, Location loc) {
    auto [it, inserted] = adjoints.try_emplace(primal, grad);
    if (!inserted)
      it->second = builder.create<AddOp>(loc, it->second, grad);
  }

  /// The accumulated adjoint, or null when no use contributed one.
  Value lookup(Value primal) const { return adjoints.lookup(primal); }

private:
  OpBuilder &builder;
  llvm::DenseMap<Value, Value> adjoints;
};

/// What the legality check learns about an objective.
struct ObjectiveInfo {
  /// The scalar float loss type.
  RankedTensorType lossType;
  /// The lm.param arguments that are not lm.frozen, in argument order, and their names.
  SmallVector<unsigned> paramIndices;
  SmallVector<StringAttr> paramNames;
};

/// Checks that every lm.param argument of `objective` is named by a string and
/// is a statically shaped float tensor (its gradient is a splat-seeded float
/// tensor of the same type), and collects them in `info`.
LogicalResult checkParams(func::FuncOp objective, ObjectiveInfo &info) {
  for (unsigned i = 0, e = objective.getNumArguments(); i < e; ++i) {
    Attribute attr = objective.getArgAttr(i, kParamAttr);
    if (!attr)
      continue;
    auto paramName = llvm::dyn_cast<StringAttr>(attr);
    if (!paramName)
      return objective.emitError("argument #")
             << i << " of '@" << objective.getSymName() << "': " << kParamAttr
             << " must be a string (the parameter name), got " << attr;
    Type type = objective.getArgumentTypes()[i];
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() || !llvm::isa<FloatType>(tensor.getElementType()))
      return objective.emitError("argument #")
             << i << " of '@" << objective.getSymName() << "' (parameter " << paramName
             << ") must be a statically shaped float tensor to be differentiated, got " << type;
    // A frozen parameter (lm.frozen) is read like data: no gradient, and the
    // reverse sweep does not flow into it.
    if (objective.getArgAttr(i, kFrozenAttr))
      continue;
    info.paramIndices.push_back(i);
    info.paramNames.push_back(paramName);
  }
  return success();
}

/// The legality check, run before anything is built: the objective has a
/// body, returns a scalar float loss, and its parameters can have gradients.
FailureOr<ObjectiveInfo> checkObjective(func::FuncOp objective) {
  if (objective.isExternal() || !llvm::hasSingleElement(objective.getBody()))
    return objective.emitError("objective '@")
           << objective.getSymName() << "' must have a body of a single block";
  ArrayRef<Type> results = objective.getFunctionType().getResults();
  auto isFloatScalar = [](Type t) {
    auto r = llvm::dyn_cast<RankedTensorType>(t);
    return r && r.getRank() == 0 && llvm::isa<FloatType>(r.getElementType());
  };
  // Results after the loss are metrics (named by lm.metric): evaluated, never differentiated.
  bool metricsOk = true;
  for (unsigned i = 1; i < results.size(); ++i)
    metricsOk &= isFloatScalar(results[i]) && objective.getResultAttrOfType<StringAttr>(i, "lm.metric");
  auto loss = results.empty() ? nullptr : llvm::dyn_cast<RankedTensorType>(results[0]);
  if (!loss || !isFloatScalar(loss) || !metricsOk) {
    InFlightDiagnostic diag = objective.emitError("objective '@")
                              << objective.getSymName()
                              << "' must return a scalar float loss (tensor<f32> or tensor<f64>), then only "
                                 "float scalars named by lm.metric, but returns (";
    llvm::interleaveComma(results, diag);
    return diag << ")";
  }
  ObjectiveInfo info;
  info.lossType = loss;
  if (failed(checkParams(objective, info)))
    return failure();
  return info;
}

/// Forward activity: the float values of `body` that depend on a parameter.
/// Only they need adjoints; everything else (data inputs, constants, slices of
/// token ids) is skipped by the reverse sweep. An integer value is never
/// active: ids carry no gradient, so neither does anything computed from them
/// (a sample drawn from logits, lm.sample, and what is built on it).
llvm::DenseSet<Value> activeValues(Block &body, ArrayRef<Value> params) {
  llvm::DenseSet<Value> active(params.begin(), params.end());
  auto isFloat = [](Value v) {
    auto t = llvm::dyn_cast<ShapedType>(v.getType());
    return t && llvm::isa<FloatType>(t.getElementType());
  };
  for (Operation &op : body)
    if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        if (isFloat(r))
          active.insert(r);
  return active;
}

/// Runs the reverse sweep over the forward ops `forward` (in program order)
/// from the seeded adjoints, emitting the backward ops at `builder`.
LogicalResult reverseSweep(ArrayRef<Operation *> forward, const llvm::DenseSet<Value> &active,
                           AdjointMap &adjoints, OpBuilder &builder) {
  for (Operation *op : llvm::reverse(forward)) {
    if (llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      continue;
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(adjoints.lookup(result));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue; // Depends on a parameter but does not reach the loss.

    auto rule = llvm::dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError("cannot differentiate '")
             << op->getName() << "': it has no gradient rule (GradientOpInterface); "
             << "see docs/autodiff.md to add one";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildAdjoint(builder, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitError("gradient rule of '")
             << op->getName() << "' returned " << operandGrads.size() << " gradients for "
             << op->getNumOperands() << " operands";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !active.contains(operand))
        continue;
      if (grad.getType() != operand.getType())
        return op->emitError("gradient rule of '")
               << op->getName() << "' produced " << grad.getType() << " for an operand of type "
               << operand.getType();
      adjoints.accumulate(operand, grad, op->getLoc());
    }
  }
  return success();
}

/// Erases the ops of `block` left without uses: adjoints of operands that do
/// not depend on a parameter, and forward values the objective never used.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

struct LMAutodiffPass : public lm::impl::LMAutodiffPassBase<LMAutodiffPass> {
  using LMAutodiffPassBase::LMAutodiffPassBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> objectives;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(kObjectiveAttr))
        objectives.push_back(func);
    for (func::FuncOp objective : objectives)
      if (failed(buildTrainStep(objective, lossScale)))
        return signalPassFailure();
  }
};

} // namespace

FailureOr<func::FuncOp> mlir::lm::buildTrainStep(func::FuncOp objective, bool lossScaleInput) {
  FailureOr<ObjectiveInfo> info = checkObjective(objective);
  if (failed(info))
    return failure();
  RankedTensorType lossType = info->lossType;
  ArrayRef<unsigned> paramIndices = info->paramIndices;
  ArrayRef<StringAttr> paramNames = info->paramNames;
  auto module = objective->getParentOfType<ModuleOp>();
  std::string name = (objective.getSymName() + "_train_step").str();
  if (module && SymbolTable::lookupSymbolIn(module, name))
    return objective.emitError("cannot add the train step '@")
           << name << "': a symbol of that name already exists";

  // The train step: same arguments, results (loss, gradient of each param).
  SmallVector<Type> resultTypes{lossType};
  for (unsigned i : paramIndices)
    resultTypes.push_back(objective.getArgumentTypes()[i]);
  OpBuilder builder(objective);
  builder.setInsertionPointAfter(objective);
  // With loss scaling (fp16), a last argument: the scale seeding the backward,
  // an f32 scalar the runtime feeds (mixed precision is for f32 models).
  if (lossScaleInput && !lossType.getElementType().isF32())
    return objective.emitError("loss scaling (precision fp16) needs an f32 loss, this objective's is ")
           << lossType.getElementType() << " (mixed precision applies to f32 models: compile f64 ones with "
           << "precision fp32)";
  SmallVector<Type> argTypes(objective.getArgumentTypes());
  if (lossScaleInput)
    argTypes.push_back(lossType);
  auto step = builder.create<func::FuncOp>(
      objective.getLoc(), name,
      builder.getFunctionType(argTypes, resultTypes));
  // All argument attributes at once (as the results' below).
  SmallVector<Attribute> argAttrs;
  if (ArrayAttr attrs = objective.getArgAttrsAttr())
    argAttrs.append(attrs.begin(), attrs.end());
  else
    argAttrs.assign(objective.getNumArguments(), builder.getDictionaryAttr({}));
  if (lossScaleInput)
    argAttrs.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr(kInputAttr, builder.getStringAttr(kLossScaleInput))));
  if (objective.getArgAttrsAttr() || lossScaleInput)
    step.setArgAttrsAttr(builder.getArrayAttr(argAttrs));
  step->setAttr(kTrainStepAttr, builder.getUnitAttr());
  // All result attributes at once: setResultAttr builds (and the context keeps)
  // a new array of every result's dictionary per call, which made a 1000-layer
  // model's 16,000 gradients cost 1 GB of arrays.
  SmallVector<DictionaryAttr> resultAttrs{builder.getDictionaryAttr({})};
  for (StringAttr paramName : paramNames)
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(kGradOfAttr, paramName)));
  step.setAllResultAttrs(resultAttrs);

  // Forward: a clone of the objective's body.
  Block *entry = step.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  IRMapping mapping;
  mapping.map(objective.getArguments(), step.getArguments().take_front(objective.getNumArguments()));
  Block &body = objective.getBody().front();
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(builder.clone(op, mapping));
  Operation *terminator = body.getTerminator();
  Value loss = mapping.lookupOrDefault(terminator->getOperand(0));
  Location lossLoc = terminator->getLoc();

  // Backward: seed d loss / d loss = 1 (or the loss scale) and sweep.
  SmallVector<Value> params;
  for (unsigned i : paramIndices)
    params.push_back(step.getArgument(i));
  llvm::DenseSet<Value> active = activeValues(*entry, params);
  AdjointMap adjoints(builder);
  if (active.contains(loss)) {
    Value seed = lossScaleInput ? step.getArguments().back() : buildSplat(builder, lossLoc, lossType, 1.0);
    adjoints.accumulate(loss, seed, lossLoc);
    if (failed(reverseSweep(forward, active, adjoints, builder))) {
      step.erase();
      return failure();
    }
  }

  // Results; a parameter that does not influence the loss gets zeros: an
  // lm.fill, a step writing its GRAD buffer, not a splat constant, which a plan
  // holds byte for byte (an unused [16384, 16384] parameter: 1 GiB in the plan).
  SmallVector<Value> results{loss};
  for (Value param : params) {
    Value grad = adjoints.lookup(param);
    results.push_back(grad ? grad : builder.create<FillOp>(lossLoc, param.getType(), builder.getF64FloatAttr(0.0)));
  }
  builder.create<func::ReturnOp>(lossLoc, results);
  eraseDeadOps(*entry);
  return step;
}
