/* Implements: the CUDA kernel table (ops.h). */
#include "runtime/cuda/ops.h"

#include "contract/op_table.h"

namespace lmrt::cuda {

const std::vector<CudaKernelDef> &allCudaKernels() {
  static const std::vector<CudaKernelDef> table = [] {
    std::vector<CudaKernelDef> k;
    detail::addMatmulKernels(k);
    detail::addElementwiseKernels(k);
    detail::addLayerNormKernels(k);
    detail::addSoftmaxKernels(k);
    detail::addVocabParallelKernels(k);
    detail::addEmbeddingKernels(k);
    detail::addShapeKernels(k);
    detail::addAttentionKernels(k);
    detail::addMathKernels(k);
    detail::addReduceKernels(k);
    detail::addSampleKernels(k);
    detail::addCastKernels(k);
    detail::addDecodeKernels(k);
    detail::addCollectiveKernels(k);
    return k;
  }();
  return table;
}

const CudaKernelDef *findCudaKernel(std::string_view op) {
  for (const CudaKernelDef &k : allCudaKernels())
    if (op == k.op) return &k;
  return nullptr;
}

std::string compareCudaWithOpTable() {
  std::vector<ops::KernelEntry> entries;
  for (const CudaKernelDef &k : allCudaKernels()) entries.push_back({k.op});
  return ops::compareKernelTable(entries, "CUDA");
}

}  // namespace lmrt::cuda
