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
#include "passes/MinCut.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

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

/// The save/recompute partition of AOTAutograd's min-cut partitioner
/// (torch/_functorch/partitioners.py), over the train step's forward:
///
///   - each forward op is a node; each of its tensor results is a node too,
///     with an edge op -> value whose capacity is the value's bytes (cut: the
///     value is saved for the backward);
///   - value -> each forward op reading it, and value -> sink if a backward op
///     reads it: infinite (what the backward reads is there, either saved or
///     recomputed; what a recomputed op reads too);
///   - source -> op: infinite for an op that may not be recomputed (outside a
///     layer, a GEMM, a random op, one whose result leaves its layer: the
///     rules of analyze()); else the op's recompute FLOPs times `lambda`
///     (bytes per FLOP; at least 1, so that of two equal cuts the one that
///     recomputes less wins).
///
/// A minimum cut minimises the bytes saved plus lambda times the FLOPs
/// recomputed; the ops on its sink side are recomputed. Function arguments
/// (parameters, inputs) are always available and have no node. lambda trades
/// the two: large, nothing is recomputed (none); towards 0, the fewest saved
/// bytes the rules allow.
class ForwardCut {
public:
  ForwardCut(func::FuncOp step, KeepRule whyKept) {
    Block &body = step.getBody().front();
    llvm::DenseSet<Operation *> forward = forwardOps(body);
    for (Operation &op : body)
      if (forward.contains(&op))
        ops.push_back(&op);
    for (Operation *op : ops) {
      StringAttr layer = getLayerName(op->getLoc());
      bool banned = !layer || !whyKept(op).empty();
      for (Value v : op->getResults())
        for (Operation *user : v.getUsers())
          if (isa<func::ReturnOp>(user) || (forward.contains(user) && getLayerName(user->getLoc()) != layer))
            banned = true; // a layer output: the rules of analyze() always keep it
      recomputeFlops.push_back(banned ? -1 : flopsOf(op));
    }
    llvm::DenseMap<Operation *, int> index;
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = int(i);
    for (auto [i, op] : llvm::enumerate(ops))
      for (Value v : op->getResults()) {
        if (!isa<RankedTensorType>(v.getType()))
          continue;
        ValueNode node{int(i), bytesOf(v), false, {}};
        for (Operation *user : v.getUsers()) {
          if (auto it = index.find(user); it != index.end())
            node.forwardUsers.push_back(it->second);
          else if (!isa<func::ReturnOp>(user))
            node.readByBackward = true;
        }
        values.push_back(std::move(node));
      }
  }

  /// The ops the minimum cut at `lambda` recomputes.
  llvm::DenseSet<Operation *> recomputeAt(double lambda) const {
    const int source = 0, sink = 1;
    FlowNetwork net(2 + int(ops.size()) + int(values.size()));
    auto opNode = [](int i) { return 2 + i; };
    int valueBase = 2 + int(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t cost = FlowNetwork::kInfinite;
      if (recomputeFlops[i] >= 0)
        cost = std::max<int64_t>(1, int64_t(std::min(lambda * double(recomputeFlops[i]), 1e17)));
      net.addEdge(source, opNode(int(i)), cost);
    }
    for (auto [j, v] : llvm::enumerate(values)) {
      int node = valueBase + int(j);
      net.addEdge(opNode(v.op), node, v.bytes);
      for (int user : v.forwardUsers)
        net.addEdge(node, opNode(user), FlowNetwork::kInfinite);
      if (v.readByBackward)
        net.addEdge(node, sink, FlowNetwork::kInfinite);
    }
    net.maxFlow(source, sink);
    llvm::DenseSet<Operation *> recompute;
    for (size_t i = 0; i < ops.size(); ++i)
      if (!net.sourceSide(opNode(int(i))))
        recompute.insert(ops[i]);
    return recompute;
  }

private:
  struct ValueNode {
    int op;
    int64_t bytes;
    bool readByBackward;
    SmallVector<int> forwardUsers;
  };
  SmallVector<Operation *> ops;        // the forward, in block order
  SmallVector<int64_t> recomputeFlops; // per op; -1: never recomputed
  SmallVector<ValueNode> values;
};

/// auto: the rule `whyKept` for the ops auto recomputes.
///
/// 1. The min-cut partition (ForwardCut: no GEMM, no random op, no layer
///    output is recomputed) with the largest lambda whose estimated peak (the
///    live bytes of the rewritten step in its order, estimateActivationPeak's
///    model) fits the budget: the fewest recomputed FLOPs the cut finds.
/// 2. If no cut fits, from the smallest lambda's cut, greedy over the
///    candidates it left (forward values of layers the backward reads that
///    selective's rules would recompute), ranked by the bytes they free per
///    FLOP their recomputation costs: each is recomputed if that lowers the
///    bytes over the budget.
/// 3. If that is not enough, whole layers are recomputed as under full, GEMMs
///    included, first layer first, until the peak fits (or no layer is left:
///    lmc then reports that the budget cannot be met).
/// Then the non-GEMM ops the budget can spare are given back (kept), the most
/// FLOPs first: one lambda, like one layer, is a coarse step (when nothing
/// fits, those whose recomputation raised the backward's live bytes).
struct AutoChoice {
  llvm::DenseSet<Operation *> recompute;
  int64_t peakBefore = 0, peakAfter = 0;
  unsigned cutOps = 0, greedyValues = 0, fullLayers = 0, givenBack = 0;
  double lambda = 0; // the min-cut's bytes per FLOP (0: it did not run)
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

  // 1. The min-cut partition (ForwardCut) with the largest lambda, so the
  // fewest recomputed FLOPs, whose estimated peak fits: a bisection on
  // log(lambda) (the cuts are nested: a smaller lambda recomputes a superset).
  // If even the smallest does not fit, its cut is kept when it lowers the
  // bytes over the budget, and the greedy phases go on from it.
  ForwardCut cut(step, [](Operation *op) { return whyKept(op, RematPolicy::Auto); });
  std::map<SmallVector<unsigned>, Estimate> estimates; // many lambdas give one cut
  auto estimateCut = [&](const llvm::DenseSet<Operation *> &set) {
    SmallVector<unsigned> key;
    for (Operation *op : set)
      key.push_back(position[op]);
    llvm::sort(key);
    auto [it, inserted] = estimates.try_emplace(key);
    if (inserted)
      it->second = estimateWith(set);
    return it->second;
  };
  // Once the budget is met: a cut at one lambda takes every op as cheap per
  // byte as the last one it needed, and the later phases add in whole steps,
  // so the non-GEMM ops the budget can spare are kept after all, the most
  // FLOPs first.
  auto giveBack = [&] {
    SmallVector<Operation *> ops;
    for (Operation *op : choice.recompute)
      if (!isGemm(op))
        ops.push_back(op);
    llvm::sort(ops, [&](Operation *a, Operation *b) {
      int64_t fa = flopsOf(a), fb = flopsOf(b);
      return fa != fb ? fa > fb : position[a] < position[b];
    });
    for (Operation *op : ops) {
      llvm::DenseSet<Operation *> fewer = choice.recompute;
      fewer.erase(op);
      // Kept if it still fits or, when nothing fits, if it lowers the bytes
      // over the budget: a recomputed value is live in the backward too, so
      // recomputing less can lower the peak there.
      if (Estimate e = estimateCut(fewer); e.peak <= budget || e.excess < current.excess) {
        choice.recompute = std::move(fewer);
        choice.peakAfter = e.peak;
        current = e;
        ++choice.givenBack;
      }
    }
  };
  double lo = 1e-9, hi = 1e6; // bytes per FLOP: about all the cut can recompute, and nothing
  llvm::DenseSet<Operation *> smallest = cut.recomputeAt(lo);
  Estimate atLo = estimateCut(smallest);
  if (atLo.peak <= budget) {
    llvm::DenseSet<Operation *> best = std::move(smallest);
    Estimate bestEstimate = atLo;
    double bestLambda = lo;
    while (hi / lo > 1.05) {
      double mid = std::sqrt(lo * hi);
      llvm::DenseSet<Operation *> set = cut.recomputeAt(mid);
      Estimate e = estimateCut(set);
      if (e.peak <= budget) {
        best = std::move(set), bestEstimate = e, bestLambda = mid;
        lo = mid;
      } else {
        hi = mid;
      }
    }
    choice.recompute = std::move(best);
    choice.cutOps = choice.recompute.size();
    choice.lambda = bestLambda;
    choice.peakAfter = bestEstimate.peak;
    current = bestEstimate;
    giveBack();
    return choice;
  }
  if (atLo.excess < current.excess) {
    choice.recompute = std::move(smallest);
    choice.cutOps = choice.recompute.size();
    choice.lambda = lo;
    choice.peakAfter = atLo.peak;
    current = atLo;
  }

  // 2. Greedy over the candidates the cut left: what selective would
  // recompute because the backward reads it.
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
    if (d.kind != RematDecision::Recompute || StringRef(d.reason) != "read by the backward" ||
        choice.recompute.contains(d.op))
      continue;
    int64_t bytes = 0;
    for (Value v : d.op->getResults())
      if (selective.values.contains(v))
        bytes += bytesOf(v);
    candidates.push_back({d.op, double(bytes) / double(std::max<int64_t>(1, flopsOf(d.op)))});
  }
  llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) { return a.bytesPerFlop > b.bytesPerFlop; });

  for (const Candidate &c : candidates) {
    size_t before = choice.recompute.size();
    bool fits = tryRecompute(c.op);
    choice.greedyValues += choice.recompute.size() != before;
    if (fits) {
      giveBack();
      return choice;
    }
  }
  // 3. Then layer by layer as full, GEMMs included.
  RematAnalysis full = analyze(step, [](Operation *op) { return whyKept(op, RematPolicy::Full); });
  for (StringAttr layer : layers) {
    SmallVector<Operation *> ops;
    for (const RematDecision &d : full.decisions)
      if (d.layer == layer && whyKept(d.op, RematPolicy::Full).empty())
        ops.push_back(d.op);
    size_t before = choice.recompute.size();
    bool fits = tryRecompute(ops);
    choice.fullLayers += choice.recompute.size() != before;
    if (fits) {
      giveBack();
      return choice;
    }
  }
  giveBack();
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
  result.cutOps = choice.cutOps;
  result.lambda = choice.lambda;
  result.greedyValues = choice.greedyValues;
  result.fullLayers = choice.fullLayers;
  result.givenBack = choice.givenBack;
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
      if (*p == RematPolicy::Auto) {
        os << "  auto: budget " << budget << " bytes, estimated activation peak " << analysis->peakBefore << " -> "
           << analysis->peakAfter << " bytes, min-cut " << analysis->cutOps << " ops";
        if (analysis->cutOps)
          os << llvm::format(" at %.3g bytes/FLOP", analysis->lambda);
        os << ", greedy " << analysis->greedyValues << " values, " << analysis->fullLayers << " layers full, "
           << analysis->givenBack << " given back\n";
      }
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
