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
    detail::addCastKernels(k);
    detail::addElementwiseKernels(k);
    detail::addReduceKernels(k);
    detail::addLayerNormKernels(k);
    detail::addAttentionKernels(k);
    detail::addSoftmaxKernels(k);
    detail::addLinearCrossEntropyKernels(k);
    detail::addEmbeddingKernels(k);
    detail::addShapeKernels(k);
    detail::addSampleKernels(k);
    detail::addDecodeKernels(k);
    detail::addCollectiveKernels(k);
    return k;
  }();
  return table;
}

std::string compareWithOpTable(const std::vector<KernelDef> &kernels) {
  std::vector<ops::KernelEntry> entries;
  for (const KernelDef &k : kernels) entries.push_back({k.op, k.numInputs, k.numOutputs});
  return ops::compareKernelTable(entries);
}

const KernelDef *findKernel(std::string_view op) {
  for (const KernelDef &k : allKernels())
    if (op == k.op) return &k;
  return nullptr;
}

}  // namespace lmrt::kernels
