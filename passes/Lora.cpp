//===- Lora.cpp - -lm-lora: low-rank adapters on chosen matmul weights ----===//
//
// LoRA (Hu et al. 2021) as a rewrite before autodiff (Passes.td): each target
// W [in, out] of the module's lm.lora becomes a frozen argument, and two new
// parameters A [in, r] and B [r, out] are added beside it in every function
// that has W, so every x @ W there computes x @ W + (alpha / r) (x @ A) @ B.
// Because the adapters are ordinary lm.param arguments, autodiff, the
// optimizer, checkpoints and the plan need nothing new; the names, the scale
// and A's initialisation are contract/lora.h's (the runtime merges with them).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "contract/lora.h"
#include "dialect/IR/GradientRules/Broadcasting.h"
#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <set>
#include <string>

namespace mlir::lm {
#define GEN_PASS_DEF_LMLORAPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

namespace {

struct LoraSpec {
  int64_t rank = 0;
  double alpha = 0;
  std::vector<std::string> targets;
  std::set<std::string> trainable; // parameters besides the adapters that train (PEFT's modules_to_save)
};

/// lm.lora = {rank = R : i64, alpha = A : f64, targets = ["name", ...]}.
FailureOr<LoraSpec> readSpec(ModuleOp module, DictionaryAttr attr) {
  LoraSpec spec;
  auto rank = dyn_cast_or_null<IntegerAttr>(attr.get("rank"));
  auto alpha = dyn_cast_or_null<FloatAttr>(attr.get("alpha"));
  auto targets = dyn_cast_or_null<ArrayAttr>(attr.get("targets"));
  if (!rank || !alpha || !targets)
    return module.emitError() << "lm.lora must be {rank = R : i64, alpha = A : f64, targets = [\"name\", ...]}, got "
                              << attr;
  spec.rank = rank.getInt();
  spec.alpha = alpha.getValueAsDouble();
  if (spec.rank < 1)
    return module.emitError() << "lm.lora: rank must be at least 1, got " << spec.rank;
  if (!(spec.alpha > 0) || !std::isfinite(spec.alpha))
    return module.emitError() << "lm.lora: alpha must be a finite number > 0, got " << spec.alpha;
  for (Attribute t : targets) {
    auto s = dyn_cast<StringAttr>(t);
    if (!s)
      return module.emitError() << "lm.lora: targets holds parameter names (strings), got " << t;
    spec.targets.push_back(s.str());
  }
  if (spec.targets.empty())
    return module.emitError() << "lm.lora: targets is empty";
  if (auto trainable = dyn_cast_or_null<ArrayAttr>(attr.get("trainable")))
    for (Attribute t : trainable) {
      auto s = dyn_cast<StringAttr>(t);
      if (!s)
        return module.emitError() << "lm.lora: trainable holds parameter names (strings), got " << t;
      spec.trainable.insert(s.str());
    }
  return spec;
}

/// The uses of a target that LoRA can adapt: the right operand of lm.matmul,
/// stored [in, out] (not transposed). Anything else is an error at the use.
LogicalResult checkUses(BlockArgument w, StringRef name) {
  for (OpOperand &use : w.getUses()) {
    auto mm = dyn_cast<MatmulOp>(use.getOwner());
    if (mm && use.getOperandNumber() == 1 && !mm.getTransposeRhs())
      continue;
    InFlightDiagnostic diag = use.getOwner()->emitError()
                              << "LoRA target '" << name << "' is used here by " << use.getOwner()->getName();
    if (mm)
      diag << (use.getOperandNumber() == 0 ? " as its left operand" : " transposed (x @ transpose(W))");
    diag << "; LoRA adapts a weight W [in, out] used only as x @ W";
    diag.attachNote(w.getLoc()) << "the parameter is declared here";
    return failure();
  }
  return success();
}

struct LoraPass : lm::impl::LMLoraPassBase<LoraPass> {
  using LMLoraPassBase::LMLoraPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto attr = module->getAttrOfType<DictionaryAttr>("lm.lora");
    if (!attr)
      return;
    FailureOr<LoraSpec> spec = readSpec(module, attr);
    if (failed(spec))
      return signalPassFailure();
    std::set<std::string> targets(spec->targets.begin(), spec->targets.end()), seen;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param");
        if (!name)
          continue;
        // PEFT's get_peft_model: the whole base model is frozen, but for the
        // parameters named trainable (a new task head).
        if (!spec->trainable.count(name.str()))
          f.setArgAttr(i, "lm.frozen", UnitAttr::get(f.getContext()));
        if (!targets.count(name.str()))
          continue;
        seen.insert(name.str());
        if (failed(adapt(f, i, name.str(), *spec)))
          return signalPassFailure();
        i += 2; // past A and B
      }
    }
    for (const std::string &t : spec->targets)
      if (!seen.count(t)) {
        module.emitError() << "lm.lora: target '" << t << "' is not a parameter of any function";
        return signalPassFailure();
      }
  }

  /// Adds A and B after argument `i` (W) of `f` and rewrites W's matmuls.
  LogicalResult adapt(func::FuncOp f, unsigned i, const std::string &name, const LoraSpec &spec) {
    BlockArgument w = f.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(w.getType());
    if (!type || type.getRank() != 2 || !isa<FloatType>(type.getElementType())) {
      InFlightDiagnostic diag = emitError(w.getLoc())
                                << "LoRA target '" << name << "' is " << w.getType()
                                << "; LoRA adapts a matmul weight, a rank-2 float tensor [in, out]";
      return failure();
    }
    if (failed(checkUses(w, name)))
      return failure();
    int64_t in = type.getDimSize(0), out = type.getDimSize(1), r = spec.rank;
    Type elt = type.getElementType();
    OpBuilder b(f.getContext());
    double bound = lmrt::lora::aBound(in);
    auto param = [&](const std::string &pname, DictionaryAttr init) {
      return b.getDictionaryAttr({b.getNamedAttr("lm.param", b.getStringAttr(pname)), b.getNamedAttr("lm.init", init)});
    };
    DictionaryAttr initA = b.getDictionaryAttr({b.getNamedAttr("kind", b.getStringAttr("uniform")),
                                                b.getNamedAttr("low", b.getF64FloatAttr(-bound)),
                                                b.getNamedAttr("high", b.getF64FloatAttr(bound))});
    DictionaryAttr initB = b.getDictionaryAttr({b.getNamedAttr("kind", b.getStringAttr("zeros"))});
    f.insertArgument(i + 1, RankedTensorType::get({in, r}, elt), param(lmrt::lora::aName(name), initA), w.getLoc());
    f.insertArgument(i + 2, RankedTensorType::get({r, out}, elt), param(lmrt::lora::bName(name), initB), w.getLoc());
    f.setArgAttr(i, "lm.frozen", b.getUnitAttr()); // even when named trainable: LoRA trains its adapters
    Value a = f.getArgument(i + 1), bm = f.getArgument(i + 2);

    SmallVector<MatmulOp> uses;
    for (Operation *user : w.getUsers())
      uses.push_back(cast<MatmulOp>(user));
    double scale = lmrt::lora::scale(spec.alpha, spec.rank);
    for (MatmulOp mm : uses) {
      b.setInsertionPointAfter(mm);
      Location loc = mm.getLoc();
      Value xa = b.create<MatmulOp>(loc, mm.getLhs(), a, mm.getTransposeLhs(), false);
      Value xab = b.create<MatmulOp>(loc, xa, bm, false, false);
      Value s = buildSplat(b, loc, RankedTensorType::get({}, cast<ShapedType>(xab.getType()).getElementType()), scale);
      Value delta = b.create<MulOp>(loc, xab, s);
      Value sum = b.create<AddOp>(loc, mm.getResult(), delta);
      mm.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
    }
    return success();
  }
};

} // namespace
