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
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMREMATPASS
#define GEN_PASS_DEF_TESTPRINTREMATPASS
#define GEN_PASS_DEF_TESTPRINTLIVENESSPASS
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
  if (name == "auto")
    return RematPolicy::Auto;
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
  case RematPolicy::Auto:
    return "auto";
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
  if ((policy == RematPolicy::Selective || policy == RematPolicy::Auto) && isGemm(op))
    return "gemm";
  return "";
}

/// What an analysis may recompute: "" for an op of a layer it may, else why not.
using KeepRule = llvm::function_ref<StringRef(Operation *)>;

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

namespace {

bool hasBody(func::FuncOp step) {
  return !step.isExternal() && llvm::hasSingleElement(step.getBody()) &&
         step.getBody().front().getTerminator()->getNumOperands() != 0;
}

/// The decisions for a train step when `whyKept` says which ops of a layer may
/// be recomputed (every policy is such a rule; auto's is a set it chose).
RematAnalysis analyze(func::FuncOp trainStep, KeepRule whyKept) {
  RematAnalysis result;
  if (!hasBody(trainStep))
    return result;
  Block &body = trainStep.getBody().front();
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
    return layer && whyKept(def).empty() && !leavesLayer(v, layer);
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
      StringRef why = whyKept(&op);
      decision.reason = !why.empty() ? why : "layer output";
    }
    result.decisions.push_back(decision);
  }
  result.recompute = std::move(needed);
  return result;
}

/// Clones the recomputed ops of `analysis` into the backward.
void rewrite(const RematAnalysis &analysis) {
  const RematAnalysis *a = &analysis;
  if (a->recompute.empty())
    return;
  // Each recomputed op is cloned once, right before the first op that reads
  // it in the backward (its recomputed operands before it), so a recomputed
  // value lives from there to its last backward use, and the forward's dies
  // with its last forward use.
  IRMapping clones;
  std::function<Value(Value, Operation *)> materialize = [&](Value v, Operation *before) -> Value {
    Operation *def = v.getDefiningOp();
    if (!a->values.contains(v))
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
  for (Operation *op : a->readers)
    for (OpOperand &use : op->getOpOperands())
      if (Value v = materialize(use.get(), op); v != use.get())
        use.set(v);
}

} // namespace

SmallVector<LiveInterval> mlir::lm::computeLiveIntervals(func::FuncOp trainStep) {
  SmallVector<LiveInterval> intervals;
  if (!hasBody(trainStep))
    return intervals;
  Block &body = trainStep.getBody().front();
  llvm::DenseMap<Operation *, int64_t> index;
  for (Operation &op : body)
    index[&op] = index.size();
  llvm::DenseSet<Value> returned;
  for (Value v : body.getTerminator()->getOperands())
    returned.insert(v);
  // Each value's root (a reshape's is its operand's: the plan makes it a view)
  // and the last op that reads the root through any of its views.
  llvm::DenseMap<Value, Value> rootOf;
  llvm::MapVector<Value, int64_t> lastUse;
  for (Operation &op : body) {
    int64_t at = index[&op];
    for (Value operand : op.getOperands())
      if (auto root = rootOf.find(operand); root != rootOf.end())
        lastUse[root->second] = std::max(lastUse[root->second], at);
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      bool view = isa<ReshapeOp>(op) && rootOf.count(op.getOperand(0));
      Value root = view ? rootOf.lookup(op.getOperand(0)) : result; // a copy: inserting may rehash
      rootOf[result] = root;
      if (!view)
        lastUse[result] = at;
    }
  }
  for (auto [value, last] : lastUse) {
    if (returned.contains(value))
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    int64_t bytes = type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    intervals.push_back({value, index[value.getDefiningOp()], last, bytes});
  }
  return intervals;
}

namespace {

/// The bytes live at each op of the step's body (estimateActivationPeak's model).
std::vector<int64_t> liveBytes(func::FuncOp trainStep) {
  if (!hasBody(trainStep))
    return {};
  size_t ops = trainStep.getBody().front().getOperations().size();
  std::vector<int64_t> delta(ops + 1, 0);
  for (const LiveInterval &i : computeLiveIntervals(trainStep)) {
    delta[i.first] += i.bytes;
    delta[i.last + 1] -= i.bytes;
  }
  std::vector<int64_t> live(ops, 0);
  int64_t sum = 0;
  for (size_t i = 0; i < live.size(); ++i)
    live[i] = sum += delta[i];
  return live;
}

} // namespace

int64_t mlir::lm::estimateActivationPeak(func::FuncOp trainStep) {
  std::vector<int64_t> live = liveBytes(trainStep);
  return live.empty() ? 0 : *llvm::max_element(live);
}

namespace {

/// The FLOPs of recomputing `op` once: its cost, or a fused region's ops'.
int64_t flopsOf(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getFlops();
  int64_t flops = 0;
  if (auto fusion = dyn_cast<FusionOp>(op))
    for (Operation &inner : fusion.getBody().front())
      if (auto cost = dyn_cast<CostOpInterface>(&inner))
        flops += cost.getFlops();
  return flops;
}

int64_t bytesOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8) : 0;
}

/// auto: the rule `whyKept` for the ops auto recomputes, chosen greedily.
///
/// Candidates are the forward values of layers the backward reads that
/// selective's rules would recompute (no GEMM, no random op), ranked by the
/// bytes they free per FLOP their recomputation costs (a view or a slice,
/// free to recompute, first; the attention core, whose output is small for
/// its FLOPs, last). Starting from none, while the estimated peak (the live
/// bytes of the rewritten step, estimateActivationPeak's model) exceeds the
/// budget, the next candidate is recomputed if that lowers the bytes over the
/// budget. If the candidates are not enough, whole layers are recomputed as
/// under full, GEMMs included, first layer first, until the peak fits (or no
/// layer is left: lmc then reports that the budget cannot be met).
struct AutoChoice {
  llvm::DenseSet<Operation *> recompute;
  int64_t peakBefore = 0, peakAfter = 0;
  unsigned greedyValues = 0, fullLayers = 0;
};

AutoChoice chooseAuto(func::FuncOp step, int64_t budget) {
  AutoChoice choice;
  Block &body = step.getBody().front();
  SmallVector<Operation *> order;
  for (Operation &op : body)
    order.push_back(&op);
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(order))
    position[op] = i;

  // The estimated live bytes if the ops of `set` may be recomputed: the
  // rewrite on a clone of the step, measured, then thrown away.
  struct Estimate {
    int64_t peak = 0;
    // The bytes above the budget summed over the ops: what a step towards the
    // budget must lower. The peak alone would miss a candidate that lowers one
    // of two equal peaks.
    int64_t excess = 0;
  };
  auto measure = [&](std::vector<int64_t> live) {
    Estimate e;
    for (int64_t bytes : live) {
      e.peak = std::max(e.peak, bytes);
      e.excess += std::max<int64_t>(0, bytes - budget);
    }
    return e;
  };
  auto estimateWith = [&](const llvm::DenseSet<Operation *> &set) {
    func::FuncOp clone = step.clone();
    SmallVector<Operation *> cloned;
    for (Operation &op : clone.getBody().front())
      cloned.push_back(&op);
    llvm::DenseSet<Operation *> mapped;
    for (Operation *op : set)
      mapped.insert(cloned[position[op]]);
    rewrite(analyze(clone, [&](Operation *op) -> StringRef { return mapped.contains(op) ? "" : "kept"; }));
    Estimate e = measure(liveBytes(clone));
    clone.erase();
    return e;
  };

  Estimate current = measure(liveBytes(step));
  choice.peakBefore = choice.peakAfter = current.peak;
  if (current.peak <= budget)
    return choice;
  // Recomputes `ops` if that brings the live bytes closer to the budget (a
  // value not live where the step is over budget frees nothing there: it
  // would cost FLOPs for no memory); true once the budget is met.
  auto tryRecompute = [&](ArrayRef<Operation *> ops) {
    llvm::DenseSet<Operation *> next = choice.recompute;
    next.insert(ops.begin(), ops.end());
    Estimate e = estimateWith(next);
    if (e.excess >= current.excess)
      return false;
    choice.recompute = std::move(next);
    current = e;
    choice.peakAfter = e.peak;
    return e.peak <= budget;
  };

  // The candidates: what selective would recompute because the backward reads it.
  RematAnalysis selective = analyze(step, [](Operation *op) { return whyKept(op, RematPolicy::Auto); });
  struct Candidate {
    Operation *op;
    double bytesPerFlop;
  };
  SmallVector<Candidate> candidates;
  SmallVector<StringAttr> layers;
  for (const RematDecision &d : selective.decisions) {
    if (layers.empty() || layers.back() != d.layer)
      if (!llvm::is_contained(layers, d.layer))
        layers.push_back(d.layer);
    if (d.kind != RematDecision::Recompute || StringRef(d.reason) != "read by the backward")
      continue;
    int64_t bytes = 0;
    for (Value v : d.op->getResults())
      if (selective.values.contains(v))
        bytes += bytesOf(v);
    candidates.push_back({d.op, double(bytes) / double(std::max<int64_t>(1, flopsOf(d.op)))});
  }
  llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) { return a.bytesPerFlop > b.bytesPerFlop; });

  // Greedy over the candidates, then layer by layer as full.
  for (const Candidate &c : candidates) {
    size_t before = choice.recompute.size();
    bool fits = tryRecompute(c.op);
    choice.greedyValues += choice.recompute.size() != before;
    if (fits)
      return choice;
  }
  RematAnalysis full = analyze(step, [](Operation *op) { return whyKept(op, RematPolicy::Full); });
  for (StringAttr layer : layers) {
    SmallVector<Operation *> ops;
    for (const RematDecision &d : full.decisions)
      if (d.layer == layer && whyKept(d.op, RematPolicy::Full).empty())
        ops.push_back(d.op);
    size_t before = choice.recompute.size();
    bool fits = tryRecompute(ops);
    choice.fullLayers += choice.recompute.size() != before;
    if (fits)
      return choice;
  }
  return choice;
}

} // namespace

FailureOr<RematAnalysis> mlir::lm::analyzeRemat(func::FuncOp trainStep, RematPolicy policy, int64_t budget) {
  if (policy == RematPolicy::None || !hasBody(trainStep))
    return RematAnalysis();
  if (policy != RematPolicy::Auto)
    return analyze(trainStep, [&](Operation *op) { return whyKept(op, policy); });
  AutoChoice choice = chooseAuto(trainStep, budget);
  RematAnalysis result = analyze(trainStep, [&](Operation *op) -> StringRef {
    if (choice.recompute.contains(op))
      return "";
    StringRef why = whyKept(op, RematPolicy::Auto);
    return why.empty() ? StringRef("fits the budget") : why;
  });
  result.peakBefore = choice.peakBefore;
  result.peakAfter = choice.peakAfter;
  result.greedyValues = choice.greedyValues;
  result.fullLayers = choice.fullLayers;
  return result;
}

LogicalResult mlir::lm::applyRemat(func::FuncOp trainStep, RematPolicy policy, int64_t budget) {
  FailureOr<RematAnalysis> analysis = analyzeRemat(trainStep, policy, budget);
  if (failed(analysis))
    return failure();
  rewrite(*analysis);
  return success();
}

namespace {

/// The policy a pass option names; an error (and failure) for another name.
FailureOr<RematPolicy> policyOption(Operation *op, StringRef name) {
  std::optional<RematPolicy> policy = parseRematPolicy(name);
  if (!policy)
    return op->emitError("-lm-remat: unknown policy '") << name << "' (expected none, full, selective or auto)";
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
      if (failed(applyRemat(step, *p, budget)))
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
      FailureOr<RematAnalysis> analysis = analyzeRemat(step, *p, budget);
      if (failed(analysis))
        return signalPassFailure();
      os << "remat @" << step.getSymName() << " policy=" << stringifyRematPolicy(*p) << "\n";
      if (*p == RematPolicy::Auto)
        os << "  auto: budget " << budget << " bytes, estimated activation peak " << analysis->peakBefore << " -> "
           << analysis->peakAfter << " bytes, " << analysis->greedyValues << " values recomputed, "
           << analysis->fullLayers << " layers full\n";
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

struct TestPrintLivenessPass : public lm::impl::TestPrintLivenessPassBase<TestPrintLivenessPass> {
  void runOnOperation() override {
    raw_ostream &os = llvm::outs();
    for (func::FuncOp step : trainSteps(getOperation())) {
      SmallVector<LiveInterval> intervals = computeLiveIntervals(step);
      std::vector<int64_t> live = liveBytes(step);
      size_t peak = live.empty() ? 0 : llvm::max_element(live) - live.begin();
      SmallVector<Operation *> ops;
      for (Operation &op : step.getBody().front())
        ops.push_back(&op);
      auto describe = [&](Operation *op) {
        std::string s = op->getName().getStringRef().str();
        if (StringAttr layer = getLayerName(op->getLoc()))
          s += " (" + layer.getValue().str() + ")";
        return s;
      };
      os << "liveness @" << step.getSymName() << ": " << ops.size() << " ops, " << intervals.size()
         << " intervals, estimated activation peak " << (live.empty() ? 0 : live[peak]) << " bytes at op " << peak;
      if (!live.empty())
        os << " " << describe(ops[peak]);
      os << "\n";
      for (const LiveInterval &i : intervals) {
        Operation *def = i.value.getDefiningOp();
        os << "  [" << i.first << ", " << i.last << "] " << i.bytes << " bytes " << describe(def);
        if (def->getNumResults() > 1)
          os << " #" << cast<OpResult>(i.value).getResultNumber();
        os << (i.first <= int64_t(peak) && int64_t(peak) <= i.last ? " live at peak" : "") << "\n";
      }
    }
  }
};

} // namespace
