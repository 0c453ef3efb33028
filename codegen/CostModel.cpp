//===- CostModel.cpp - Predicted FLOPs of one plan step -------------------===//

#include "codegen/CostModel.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::lm;

static int64_t numElements(Type type) { return cast<ShapedType>(type).getNumElements(); }

static bool boolAttr(Operation *op, StringRef name) {
  auto attr = op->getAttrOfType<BoolAttr>(name);
  return attr && attr.getValue();
}

/// lm.matmul: 2 flops per multiply-add, 2·batch·M·N·K = 2·numel(out)·K.
static int64_t matmulFlops(Operation *op) {
  ArrayRef<int64_t> lhs = cast<ShapedType>(op->getOperand(0).getType()).getShape();
  int64_t k = boolAttr(op, "transpose_lhs") ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * numElements(op->getResult(0).getType()) * k;
}

/// lm.attention forward: q·kᵀ and p·v are each 2·B·H·T²·Dh, so 4·B·T²·(H·Dh);
/// the causal mask skips half of both products. Softmax is not counted (it is
/// O(T²) against the O(T²·Dh) products).
static int64_t attentionFlops(Operation *op) {
  ArrayRef<int64_t> q = cast<ShapedType>(op->getOperand(0).getType()).getShape();
  if (q.size() != 3)
    return 0;
  int64_t flops = 4 * q[0] * q[1] * q[1] * q[2];
  return boolAttr(op, "causal") ? flops / 2 : flops;
}

int64_t mlir::lm::estimateFlops(Operation *op, StringRef kernel) {
  if (kernel == "matmul")
    return matmulFlops(op);
  if (kernel == "attention")
    return attentionFlops(op);
  // Backward attention recomputes the probabilities (q·kᵀ) and forms dv, dp,
  // dq and dk: five T²-sized products against the forward's two, 2.5×.
  if (kernel == "attention_grad")
    return attentionFlops(op) * 5 / 2;

  // Per-element costs, counted over the tensor the kernel sweeps.
  int64_t perElement = llvm::StringSwitch<int64_t>(kernel)
                           .Cases("add", "sub", "mul", "div", "neg", 1)
                           .Case("sum_to", 1)          // one add per input element
                           .Case("embedding_grad", 1)  // one scatter-add per dy element
                           .Case("gelu", 8)            // cube, fma, tanh, 3 muls
                           .Case("gelu_grad", 16)      // tanh, sech², the chain rule
                           .Case("layer_norm", 8)      // mean, var, normalise, scale, shift
                           .Case("layer_norm_grad", 16)
                           .Case("softmax", 5)         // max, sub, exp, sum, div
                           .Case("softmax_grad", 4)    // dot, sub, mul
                           .Case("cross_entropy", 5)   // max, sub, exp, sum over logits
                           .Case("cross_entropy_grad", 6)
                           .Default(0); // embedding, reshape, transpose, slice(_grad), copy
  if (perElement == 0)
    return 0;
  // The swept tensor: the larger of the first operand and the first result
  // (sum_to and the losses read more than they write; broadcasting ops write more).
  int64_t swept = op->getNumResults() ? numElements(op->getResult(0).getType()) : 0;
  if (kernel == "embedding_grad")
    swept = numElements(op->getOperand(1).getType());
  else if (op->getNumOperands())
    swept = std::max(swept, numElements(op->getOperand(0).getType()));
  return perElement * swept;
}
