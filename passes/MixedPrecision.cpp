//===- MixedPrecision.cpp - bf16/fp16 GEMM operands, fp32 everything else -===//
//
// -lm-mixed-precision: the precision policy of docs/mixed-precision.md. Every
// lm.matmul of f32 operands (forward and backward GEMMs alike), and the fused
// output projection and loss (lm.linear_cross_entropy[_with_grad]), read them
// cast to bf16 (or fp16) and accumulate into f32 results; nothing else
// changes, so
// norms, softmax, attention, the loss, reductions, the parameters (master
// weights), their gradients and the optimizer stay fp32.
//
// Each value gets one cast, placed right after its definition (parameters at
// the top of the body) and shared by all its GEMM readers (a reshape reads
// the cast of its operand, reshaped): the forward GEMM
// x @ w and the backward's dW = x^T dy read the same bf16 copy of x, so the
// activation the backward keeps for its GEMMs is that 2-byte copy, and the
// f32 value dies with its last other reader. -lm-fuse then writes a cast
// from its producer's kernel (or its consumer's, next to a fused reduction):
// only the casts of library kernels' results (layer norm, attention,
// embedding) and of the parameters remain kernels of their own.
//
// Under ZeRO stage 3 (-lm-zero-shard-params ran before) a GEMM's parameter is
// an lm.all_gather of the rank's f32 slice, then a cut and a reshape; its
// cast then moves before the gather (gatherReducedPrecision): the rank casts
// its slice and the ranks gather bf16, half the bytes on the wire and in the
// gathered tensor. A cast rounds each element alone, so cast-then-gather is
// gather-then-cast bit for bit. The same holds for any gather only a cast
// reads: sequence parallelism's gathers of a normalized activation for the
// next GEMM move bf16 too.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::lm {
#define GEN_PASS_DEF_LMMIXEDPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::lm

using namespace mlir;
using namespace mlir::lm;

std::optional<Type> mlir::lm::gemmOperandType(MLIRContext *context, StringRef precision) {
  if (precision == "bf16")
    return BFloat16Type::get(context);
  if (precision == "fp16")
    return Float16Type::get(context);
  if (precision == "fp32")
    return Type();
  return std::nullopt;
}

namespace {

bool hasLossScaleInput(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "lm.input"); name && name.getValue() == kLossScaleInput)
      return true;
  return false;
}

/// The bf16 (or other `to`) copy of `v`, made once per value.
class CastCache {
public:
  explicit CastCache(Type to) : to(to) {}

  Value castOf(Value v) {
    auto [it, inserted] = casts.try_emplace(v, Value());
    if (!inserted)
      return it->second;
    OpBuilder b(v.getContext());
    // A reshape (a view, no kernel) of the value's one bf16 copy: the
    // backward's weight-gradient GEMMs read activations flattened to rows,
    // and should read the forward's copy rather than cast them again.
    if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      Value from = castOf(reshape.getX());
      b.setInsertionPointAfter(reshape);
      auto type = llvm::cast<RankedTensorType>(v.getType());
      Value view = b.create<ReshapeOp>(reshape.getLoc(), RankedTensorType::get(type.getShape(), to), from);
      casts[v] = view; // (the recursion may have grown the map: `it` is stale)
      return view;
    }
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(llvm::cast<BlockArgument>(v).getOwner());
    auto type = llvm::cast<RankedTensorType>(v.getType());
    Value cast = b.create<CastOp>(v.getLoc(), RankedTensorType::get(type.getShape(), to), v);
    casts[v] = cast;
    return cast;
  }

private:
  Type to;
  llvm::DenseMap<Value, Value> casts;
};

/// A gather that only `cast` reads (ZeRO-3's of a parameter slice, sequence
/// parallelism's of an activation), through at most -lm-zero-shard-params' cut of
/// the padding: `cast(slice?(all_gather(x)))`
/// becomes `slice?(all_gather(cast(x)))`, the cast right before the gather
/// (which -lm-zero-shard-params may have prefetched), the cut where it was. One
/// cast per gather: the reduced-precision slice is a temporary of that gather,
/// as the gathered tensor is of its op. A gather something else reads too stays
/// f32 (two gathers would move more bytes than one).
void gatherReducedPrecision(CastOp cast) {
  Value gathered = cast.getX();
  // Only a narrowing cast halves the bytes (a widening one would double them).
  if (llvm::cast<RankedTensorType>(cast.getType()).getElementTypeBitWidth() >=
      llvm::cast<RankedTensorType>(gathered.getType()).getElementTypeBitWidth())
    return;
  auto cut = gathered.getDefiningOp<SliceOp>();
  if (cut) {
    if (!cut->hasOneUse())
      return;
    gathered = cut.getX();
  }
  auto gather = gathered.getDefiningOp<AllGatherOp>();
  if (!gather || !gather->hasOneUse())
    return;
  Type to = llvm::cast<RankedTensorType>(cast.getType()).getElementType();
  auto slice = llvm::cast<RankedTensorType>(gather.getX().getType());
  OpBuilder b(gather);
  Value v = b.create<CastOp>(cast.getLoc(), RankedTensorType::get(slice.getShape(), to), gather.getX());
  v = b.create<AllGatherOp>(gather.getLoc(), v, gather.getMeshAxis(), gather.getGroupSize(), gather.getDim());
  if (cut) {
    b.setInsertionPoint(cut);
    v = b.create<SliceOp>(cut.getLoc(), v, cut.getStart(), cut.getLimit(), cut.getStride());
  }
  cast.replaceAllUsesWith(v);
  cast.erase();
  if (cut)
    cut.erase();
  gather.erase();
}

struct LMMixedPrecisionPass : public lm::impl::LMMixedPrecisionPassBase<LMMixedPrecisionPass> {
  using LMMixedPrecisionPassBase::LMMixedPrecisionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Type> to = gemmOperandType(module.getContext(), precision);
    if (!to) {
      module.emitError("-lm-mixed-precision: precision must be bf16, fp16 or fp32, got '") << precision << "'";
      return signalPassFailure();
    }
    if (!*to)
      return; // fp32: the module as it is
    // fp16's range (6e-8 to 65504) loses small gradients unless the backward is
    // scaled: a train step must take the runtime's loss scale.
    if (precision == "fp16") {
      WalkResult unscaled = module.walk([&](func::FuncOp func) {
        if (!func->hasAttr("lm.train_step") || func.isExternal() || hasLossScaleInput(func))
          return WalkResult::advance();
        func.emitError("-lm-mixed-precision: precision fp16 needs a train step seeded by a loss scale (its '")
            << kLossScaleInput << "' input: -lm-autodiff=loss-scale=1); this one has none";
        return WalkResult::interrupt();
      });
      if (unscaled.wasInterrupted())
        return signalPassFailure();
    }
    module.walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      CastCache cache(*to);
      // A set: one reshape may feed several GEMM operands (x^T x, or two
      // weight gradients), and erasing it twice is a double free.
      llvm::SetVector<Operation *> flattened;
      // Matmuls inside lm.fusion regions (the pass ran after -lm-fuse) keep
      // their f32 operands: a region's inputs are fixed by its kernel.
      auto castPair = [&](OpOperand &a, OpOperand &b) {
        if (!llvm::cast<ShapedType>(a.get().getType()).getElementType().isF32() ||
            !llvm::cast<ShapedType>(b.get().getType()).getElementType().isF32())
          return;
        for (OpOperand *operand : {&a, &b}) {
          if (auto reshape = operand->get().getDefiningOp<ReshapeOp>())
            flattened.insert(reshape);
          operand->assign(cache.castOf(operand->get()));
        }
      };
      for (Block &block : func.getBody())
        for (Operation &op : block) {
          if (auto mm = dyn_cast<MatmulOp>(op))
            castPair(mm.getLhsMutable(), mm.getRhsMutable());
          // The fused output projection and loss: its three GEMMs (logits, dh,
          // dw) read h and w in bf16; the softmax, the loss and dw's sum over
          // the chunks stay f32, as its results (the kernel,
          // runtime/cpu/kernels/linear_cross_entropy.cpp).
          else if (auto lce = dyn_cast<LinearCrossEntropyOp>(op))
            castPair(lce.getHMutable(), lce.getWMutable());
          else if (auto lce = dyn_cast<LinearCrossEntropyWithGradOp>(op))
            castPair(lce.getHMutable(), lce.getWMutable());
        }
      // The f32 reshapes only GEMMs read are dead now: gone, so that they keep
      // no f32 activation alive for the backward.
      // Until none dies: erasing a reshape of a reshape frees its operand.
      for (bool erased = true; erased;) {
        erased = false;
        for (Operation *reshape : flattened.takeVector()) {
          if (reshape->use_empty()) {
            reshape->erase();
            erased = true;
          } else {
            flattened.insert(reshape);
          }
        }
      }
      // Gather the reduced-precision copies (ZeRO-3's parameter slices), not f32 ones.
      SmallVector<CastOp> casts;
      func.walk([&](CastOp cast) { casts.push_back(cast); });
      for (CastOp cast : casts)
        gatherReducedPrecision(cast);
    });
  }
};

} // namespace
