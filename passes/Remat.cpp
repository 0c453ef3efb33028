//===- Remat.cpp - Rematerialization (activation checkpointing) -*- C++ -*-===//
//
// -lm-remat: in every train step, recomputes forward values in the backward
// instead of keeping them alive from the forward to their backward use, so
// that the memory planner (liveness over the step order) frees them early and
// the predicted peak falls. Recomputing is cloning: the forward op (an lm op
// or a whole lm.fusion region, so the same kernel) is cloned right before the
// first backward op that reads its value, its operands recomputed the same way
// where the policy allows, and the backward reads the clone. Same kernels on
// the same inputs: the losses and gradients are byte-identical.
//
// A layer is one copy of a repeated block: the frontend wraps the location of
// every op of a `repeat` copy in a NameLoc named after it (frontend/Builtins.cpp,
// tagLayer). Only ops in a layer are recomputed; a value that an op outside its
// layer (the next layer, the final norm, the loss) reads is the layer's output,
// the next one's input, and is always kept.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMREMATPASS
#define GEN_PASS_DEF_TESTPRINTREMATPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

std::optional<RematPolicy> mlir::lm::parseRematPolicy(StringRef name) {
  if (name == "none")
    return RematPolicy::None;
  if (name == "full")
    return RematPolicy::Full;
  if (name == "selective")
    return RematPolicy::Selective;
  return std::nullopt;
}

StringRef mlir::lm::stringifyRematPolicy(RematPolicy policy) {
  switch (policy) {
  case RematPolicy::None:
    return "none";
  case RematPolicy::Full:
    return "full";
  case RematPolicy::Selective:
    return "selective";
  }
  llvm_unreachable("unknown remat policy");
}

StringAttr mlir::lm::getLayerName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName(); // the outermost: a nested repeat's op has its outer layer's name
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (StringAttr name = getLayerName(inner))
        return name;
    return {};
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return getLayerName(call.getCallee());
  return {};
}

namespace {

/// A GEMM: a matmul, or a fused region holding one (an epilogue fusion).
bool isGemm(Operation *op) {
  if (isa<MatmulOp>(op))
    return true;
  if (auto fusion = dyn_cast<FusionOp>(op))
    return llvm::any_of(fusion.getBody().front(), [](Operation &inner) { return isa<MatmulOp>(inner); });
  return false;
}

/// Why an op of a layer may not be recomputed under `policy`, or "" if it may.
StringRef whyKept(Operation *op, RematPolicy policy) {
  // Random ops would draw again (their bits are an operand today, but a
  // sample is the kind of value a user expects to be drawn once).
  if (isa<SampleOp>(op))
    return "random";
  if (isa<ConstantOp>(op))
    return "constant";
  if (!isMemoryEffectFree(op) || op->getNumRegions() > (isa<FusionOp>(op) ? 1u : 0u))
    return "not pure";
  if (policy == RematPolicy::Selective && isGemm(op))
    return "gemm";
  return "";
}

/// The forward of a train step: the ops its loss (result 0) depends on. The
/// rest is the backward (and gradient bookkeeping).
llvm::DenseSet<Operation *> forwardOps(Block &body) {
  llvm::DenseSet<Operation *> forward;
  SmallVector<Value> work{body.getTerminator()->getOperand(0)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !forward.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return forward;
}

} // namespace

FailureOr<RematAnalysis> mlir::lm::analyzeRemat(func::FuncOp trainStep, RematPolicy policy) {
  RematAnalysis result;
  if (policy == RematPolicy::None || trainStep.isExternal() || !llvm::hasSingleElement(trainStep.getBody()))
    return result;
  Block &body = trainStep.getBody().front();
  if (body.getTerminator()->getNumOperands() == 0)
    return result;
  llvm::DenseSet<Operation *> forward = forwardOps(body);
  auto layerOf = [&](Operation *op) -> StringAttr {
    return op && forward.contains(op) ? getLayerName(op->getLoc()) : StringAttr();
  };
  // A value its own layer's forward does not keep to itself: read by the
  // forward outside the layer (the next layer's input) or returned.
  auto leavesLayer = [&](Value v, StringAttr layer) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      return isa<func::ReturnOp>(user) || (forward.contains(user) && layerOf(user) != layer);
    });
  };
  auto recomputable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    StringAttr layer = layerOf(def);
    return layer && whyKept(def, policy).empty() && !leavesLayer(v, layer);
  };

  // The values the backward reads from the layers' forward, in block order,
  // and, through their operands, every op their recomputation needs.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> work;
  for (Operation &op : body) {
    if (forward.contains(&op))
      continue;
    for (Value v : op.getOperands())
      if (recomputable(v))
        work.push_back(v);
  }
  llvm::DenseSet<Operation *> readByBackward;
  for (Value v : work)
    readByBackward.insert(v.getDefiningOp());
  for (Operation &op : body)
    if (!forward.contains(&op) && llvm::any_of(op.getOperands(), recomputable))
      result.readers.push_back(&op);
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!needed.insert(def))
      continue;
    for (Value operand : def->getOperands())
      if (recomputable(operand))
        work.push_back(operand);
  }
  for (Operation *op : needed)
    for (Value v : op->getResults())
      if (recomputable(v))
        result.values.insert(v);

  for (Operation &op : body) {
    StringAttr layer = layerOf(&op);
    if (!layer)
      continue;
    RematDecision decision{&op, layer, RematDecision::ForwardOnly, ""};
    bool readByBack = llvm::any_of(op.getUsers(), [&](Operation *u) { return !forward.contains(u); });
    if (needed.contains(&op)) {
      decision.kind = RematDecision::Recompute;
      decision.reason = readByBackward.contains(&op) ? "read by the backward" : "feeds a recomputed value";
    } else if (readByBack) {
      decision.kind = RematDecision::Keep;
      StringRef why = whyKept(&op, policy);
      decision.reason = !why.empty() ? why : "layer output";
    }
    result.decisions.push_back(decision);
  }
  result.recompute = std::move(needed);
  return result;
}

LogicalResult mlir::lm::applyRemat(func::FuncOp trainStep, RematPolicy policy) {
  FailureOr<RematAnalysis> analysis = analyzeRemat(trainStep, policy);
  if (failed(analysis))
    return failure();
  const llvm::SetVector<Operation *> &recompute = analysis->recompute;
  if (recompute.empty())
    return success();
  // Each recomputed op is cloned once, right before the first op that reads
  // it in the backward (its recomputed operands before it), so a recomputed
  // value lives from there to its last backward use, and the forward's dies
  // with its last forward use.
  IRMapping clones;
  std::function<Value(Value, Operation *)> materialize = [&](Value v, Operation *before) -> Value {
    Operation *def = v.getDefiningOp();
    if (!analysis->values.contains(v))
      return v; // kept: a layer output, a GEMM's under selective, a parameter
    if (Value done = clones.lookupOrNull(v))
      return done;
    for (Value operand : def->getOperands())
      materialize(operand, before);
    OpBuilder builder(before);
    builder.clone(*def, clones);
    return clones.lookup(v);
  };
  // A backward op never feeds a forward op (the forward is what the loss
  // depends on), so every reader comes after the forward ops it reads.
  for (Operation *op : analysis->readers)
    for (OpOperand &use : op->getOpOperands())
      if (Value v = materialize(use.get(), op); v != use.get())
        use.set(v);
  return success();
}

namespace {

/// The policy a pass option names; an error (and failure) for another name.
FailureOr<RematPolicy> policyOption(Operation *op, StringRef name) {
  std::optional<RematPolicy> policy = parseRematPolicy(name);
  if (!policy)
    return op->emitError("-lm-remat: unknown policy '") << name << "' (expected none, full or selective)";
  return *policy;
}

SmallVector<func::FuncOp> trainSteps(ModuleOp module) {
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("lm.train_step"))
      steps.push_back(func);
  return steps;
}

struct LMRematPass : public lm::impl::LMRematPassBase<LMRematPass> {
  using LMRematPassBase::LMRematPassBase;
  void runOnOperation() override {
    FailureOr<RematPolicy> p = policyOption(getOperation(), policy);
    if (failed(p))
      return signalPassFailure();
    for (func::FuncOp step : trainSteps(getOperation()))
      if (failed(applyRemat(step, *p)))
        return signalPassFailure();
  }
};

struct TestPrintRematPass : public lm::impl::TestPrintRematPassBase<TestPrintRematPass> {
  using TestPrintRematPassBase::TestPrintRematPassBase;
  void runOnOperation() override {
    FailureOr<RematPolicy> p = policyOption(getOperation(), policy);
    if (failed(p))
      return signalPassFailure();
    raw_ostream &os = llvm::outs();
    for (func::FuncOp step : trainSteps(getOperation())) {
      FailureOr<RematAnalysis> analysis = analyzeRemat(step, *p);
      if (failed(analysis))
        return signalPassFailure();
      os << "remat @" << step.getSymName() << " policy=" << stringifyRematPolicy(*p) << "\n";
      unsigned recomputed = 0, kept = 0;
      for (const RematDecision &d : analysis->decisions) {
        os << "  " << d.layer.getValue() << ": " << d.op->getName();
        if (isGemm(d.op) && isa<FusionOp>(d.op))
          os << " (gemm)";
        switch (d.kind) {
        case RematDecision::Recompute:
          os << ": recompute (" << d.reason << ")\n";
          ++recomputed;
          break;
        case RematDecision::Keep:
          os << ": keep (" << d.reason << ")\n";
          ++kept;
          break;
        case RematDecision::ForwardOnly:
          os << ": forward only\n";
          break;
        }
      }
      os << "  recompute " << recomputed << " ops, keep " << kept << "\n";
    }
  }
};

} // namespace
