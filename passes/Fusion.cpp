//===- Fusion.cpp - Group ops into lm.fusion regions (one kernel each) ----===//
//
// -lm-fuse: forms lm.fusion regions greedily, from the end of each function
// body backwards (producer fusion, as XLA's loop fusion). A group has one
// iteration space, the shape of its elementwise values; it holds
//   - elementwise ops (ElementwiseOpInterface: add, sub, mul, div, neg, gelu,
//     gelu_grad; and lm.cast) whose result
//     has the group's shape (their other operands may broadcast into it);
//   - lm.sum_to ops reducing a group value over its leading dimensions (a bias
//     gradient), so a producer's result is summed while it is in registers;
//   - or, instead of reductions, one lm.matmul whose product the elementwise
//     ops consume: the GEMM runs in a library and the rest is its epilogue.
// The lm.cast ops that read a group value join it (consumer fusion of casts).
// A value of the group used outside it becomes a result of the fusion (multi-
// output fusion), so a producer with other users still fuses. The region is
// placed where every input is already defined and before every outside user;
// a group that has no such point is not grown. The rules are in docs/fusion.md.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::lm {
#define GEN_PASS_DEF_LMFUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

bool mlir::lm::isFusibleElementwise(Operation *op) {
  return isa<ElementwiseOpInterface, CastOp>(op) && op->getNumResults() == 1 &&
         llvm::isa<FloatType>(llvm::cast<ShapedType>(op->getResult(0).getType()).getElementType());
}

bool mlir::lm::isFusibleReduction(Operation *op) {
  auto sum = dyn_cast<SumToOp>(op);
  if (!sum)
    return false;
  // Only a reduction over a leading prefix of dimensions (the result is the
  // operand's trailing dimensions, as a bias is); others stay library kernels.
  ArrayRef<int64_t> in = sum.getX().getType().getShape();
  ArrayRef<int64_t> out = sum.getType().getShape();
  if (out.size() > in.size() || out.empty() || in.size() == out.size())
    return false;
  return in.take_back(out.size()) == out;
}

bool mlir::lm::isEpilogueMatmul(Operation *op) {
  auto mm = dyn_cast<MatmulOp>(op);
  // The rows of the product are the flattened leading dims of lhs only when
  // rhs is one shared matrix and lhs is not transposed (one GEMM, row blocks).
  return mm && !mm.getTransposeLhs() && mm.getRhs().getType().getRank() == 2;
}

namespace {

/// The shape elementwise values of a group share.
ArrayRef<int64_t> shapeOf(Value v) { return llvm::cast<ShapedType>(v.getType()).getShape(); }

class GroupBuilder {
public:
  GroupBuilder(Block &block, unsigned maxOps) : block(block), maxOps(maxOps) { renumber(); }

  /// Forms a group seeded at `root`; false when nothing was fused.
  bool fuseFrom(Operation *root);

private:
  /// Positions are spaced kGap apart, so a new fusion op takes a position
  /// between its neighbours without renumbering the block: renumbering after
  /// every group made fusion quadratic in the number of layers.
  static constexpr int64_t kGap = int64_t(1) << 24;
  void renumber() {
    position.clear();
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = (i++) * kGap;
  }
  /// Gives `op`, just inserted, a position between its neighbours'.
  void number(Operation *op) {
    Operation *prev = op->getPrevNode(), *next = op->getNextNode();
    int64_t a = prev ? position.lookup(prev) : (next ? position.lookup(next) - 2 * kGap : 0);
    int64_t b = next ? position.lookup(next) : a + 2 * kGap;
    if (b - a < 2)
      return renumber();
    position[op] = a + (b - a) / 2;
  }
  /// Where `ops` could be placed as one op: strictly after position lo (every
  /// input's definition) and before position hi (every outside user; the first
  /// such user is `firstUser`, or none).
  struct Placement {
    int64_t lo, hi;
    Operation *firstUser;
  };
  Placement placement(const llvm::SetVector<Operation *> &ops) const;
  bool canAdd(Operation *candidate);
  void materialize();

  Block &block;
  unsigned maxOps;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::SetVector<Operation *> group;
  SmallVector<int64_t> space;
  bool hasMatmul = false, hasReduction = false;
};

GroupBuilder::Placement GroupBuilder::placement(const llvm::SetVector<Operation *> &ops) const {
  // (block.getOperations().size() would walk the whole list: this runs per candidate.)
  Placement p{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), nullptr};
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == &block && !ops.contains(def))
        p.lo = std::max<int64_t>(p.lo, position.lookup(def));
    }
    for (Operation *user : op->getUsers())
      if (!ops.contains(user)) {
        Operation *at = block.findAncestorOpInBlock(*user);
        int64_t pos = position.lookup(at);
        if (pos < p.hi)
          p.hi = pos, p.firstUser = at;
      }
  }
  return p;
}

bool GroupBuilder::canAdd(Operation *candidate) {
  if (group.contains(candidate) || group.size() >= maxOps || candidate->getBlock() != &block)
    return false;
  if (isFusibleElementwise(candidate)) {
    if (shapeOf(candidate->getResult(0)) != ArrayRef<int64_t>(space))
      return false;
  } else if (isEpilogueMatmul(candidate)) {
    if (hasMatmul || hasReduction || shapeOf(candidate->getResult(0)) != ArrayRef<int64_t>(space))
      return false;
  } else {
    return false;
  }
  // A GEMM reads whole rows of its operands before its epilogue runs: they
  // are never computed by the same group.
  for (Operation *user : candidate->getUsers())
    if (isa<MatmulOp>(user) && group.contains(user))
      return false;
  if (isa<MatmulOp>(candidate))
    for (Value operand : candidate->getOperands())
      if (operand.getDefiningOp() && group.contains(operand.getDefiningOp()))
        return false;
  llvm::SetVector<Operation *> grown = group;
  grown.insert(candidate);
  Placement p = placement(grown);
  return p.lo < p.hi;
}

bool GroupBuilder::fuseFrom(Operation *root) {
  group.clear();
  hasMatmul = hasReduction = false;
  if (isFusibleReduction(root)) {
    auto sum = cast<SumToOp>(root);
    space.assign(sum.getX().getType().getShape().begin(), sum.getX().getType().getShape().end());
    hasReduction = true;
  } else if (isFusibleElementwise(root)) {
    ArrayRef<int64_t> s = shapeOf(root->getResult(0));
    space.assign(s.begin(), s.end());
  } else {
    return false;
  }
  group.insert(root);
  // Grow by producers, breadth first; a reduction root's producers are the
  // elementwise values it sums.
  for (unsigned next = 0; next < group.size(); ++next) {
    Operation *op = group[next];
    if (isa<MatmulOp>(op))
      continue;  // its operands stay outside (canAdd)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && canAdd(def)) {
        group.insert(def);
        hasMatmul |= isa<MatmulOp>(def);
      }
    }
  }
  // The casts of its values (-lm-mixed-precision's GEMM operands) are written
  // by the group too, so that a cast is a kernel of its own only where no
  // generated kernel computes its operand.
  for (unsigned next = 0; next < group.size(); ++next)
    for (Value result : group[next]->getResults())
      for (Operation *user : result.getUsers())
        if (isa<CastOp>(user) && canAdd(user))
          group.insert(user);
  // A lone reduction is the library's column sum already; a lone matmul never
  // starts a group. Anything else becomes a kernel.
  if (group.size() == 1 && hasReduction)
    return false;
  // A lone cast of a function argument (-lm-mixed-precision's copy of a parameter)
  // stays lm.cast, the library kernel (the same rounding): the plan's train step keeps
  // such a copy over the whole program and lmrt skips the cast while AdamW keeps the
  // copy current (lmrt::keptParamCopies; docs/mixed-precision.md).
  if (group.size() == 1 && isa<CastOp>(root) && isa<BlockArgument>(root->getOperand(0)))
    return false;
  materialize();
  return true;
}

void GroupBuilder::materialize() {
  // Program order inside the region, so every value is defined before its use.
  SmallVector<Operation *> ops(group.begin(), group.end());
  llvm::sort(ops, [&](Operation *a, Operation *b) { return position.lookup(a) < position.lookup(b); });
  llvm::SetVector<Operation *> members(ops.begin(), ops.end());

  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !members.contains(def))
        inputs.insert(operand);
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *u) { return !members.contains(u); }))
        outputs.push_back(result);
  }

  // After the last member when that precedes every outside user; else right
  // before the first outside user (every input is defined by then: the group
  // grew only while placement() left a point between the two).
  Placement place = placement(members);
  Operation *last = ops.back();
  OpBuilder builder(block.getParentOp()->getContext());
  if (position.lookup(last) < place.hi)
    builder.setInsertionPointAfter(last);
  else
    builder.setInsertionPoint(place.firstUser);

  SmallVector<Type> resultTypes;
  SmallVector<Location> locs;
  for (Value v : outputs)
    resultTypes.push_back(v.getType());
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  auto fusion = builder.create<FusionOp>(builder.getFusedLoc(locs), resultTypes, inputs.getArrayRef());
  Block &body = fusion.getBody().front();
  IRMapping mapping;
  for (auto [input, arg] : llvm::zip(inputs, body.getArguments()))
    mapping.map(input, arg);
  OpBuilder inner = OpBuilder::atBlockEnd(&body);
  for (Operation *op : ops)
    inner.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  inner.create<YieldOp>(fusion.getLoc(), yielded);

  for (auto [v, r] : llvm::zip(outputs, fusion.getResults()))
    v.replaceUsesWithIf(r, [&](OpOperand &use) { return !members.contains(use.getOwner()); });
  for (Operation *op : llvm::reverse(ops)) {
    position.erase(op);
    op->erase();
  }
  number(fusion);
}

struct LMFusePass : public lm::impl::LMFusePassBase<LMFusePass> {
  using LMFusePassBase::LMFusePassBase;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      for (Block &block : func.getBody()) {
        GroupBuilder builder(block, maxOps);
        // Seeds from the end backwards; each formed group is one op, never
        // a seed again.
        for (Operation *op = block.empty() ? nullptr : &block.back(); op;) {
          Operation *prev = op->getPrevNode();
          if (!isa<FusionOp, MatmulOp>(op)) {
            // The group erases the seed and may erase `prev`; the op after the
            // seed survives, and what precedes it now is the next candidate.
            Operation *anchor = op->getNextNode();
            if (builder.fuseFrom(op))
              prev = anchor ? anchor->getPrevNode() : &block.back();
          }
          op = prev;
        }
      }
    });
  }
};

} // namespace
