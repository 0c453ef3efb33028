/* Implements: the
   table of CPU kernels, one entry per lm op, gathered from the op-family files. */
#include "runtime/cpu/kernels/registry.h"

#include "runtime/cpu/kernels/kernel_common.h"
#include "contract/op_table.h"

namespace lmrt::kernels {

// ----------------------------------------------------------------------------
// Kernel table

const std::vector<KernelDef> &allKernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> k;
    detail::addMatmulKernels(k);
    detail::addElementwiseKernels(k);
    detail::addGeluKernels(k);
    detail::addUnaryKernels(k);
    detail::addReduceKernels(k);
    detail::addLayerNormKernels(k);
    detail::addAttentionKernels(k);
    detail::addSoftmaxKernels(k);
    detail::addEmbeddingKernels(k);
    detail::addShapeKernels(k);
    detail::addSampleKernels(k);
    detail::addDecodeKernels(k);
    return k;
  }();
  return table;
}

std::string compareWithOpTable(const std::vector<KernelDef> &kernels) {
  std::string problems;
  auto report = [&](const std::string &line) { problems += line + "\n"; };
  for (const ops::OpInfo &op : ops::allOps()) {
    int found = 0;
    for (const KernelDef &k : kernels) {
      if (op.name != std::string_view(k.op)) continue;
      ++found;
      if (k.numInputs != op.numInputs || k.numOutputs != op.numOutputs)
        report(std::string("kernel '") + k.op + "' takes " + std::to_string(k.numInputs) + " inputs and " +
               std::to_string(k.numOutputs) + " outputs, the op takes " + std::to_string(op.numInputs) + " and " +
               std::to_string(op.numOutputs));
    }
    if (found == 0) report(std::string("op '") + op.name + "' has no kernel");
    if (found > 1) report(std::string("op '") + op.name + "' has " + std::to_string(found) + " kernels");
  }
  for (const KernelDef &k : kernels)
    if (!ops::findOp(k.op)) report(std::string("kernel '") + k.op + "' is not an op of the plan's op table");
  return problems;
}

const KernelDef *findKernel(std::string_view op) {
  for (const KernelDef &k : allKernels())
    if (op == k.op) return &k;
  return nullptr;
}

}  // namespace lmrt::kernels
