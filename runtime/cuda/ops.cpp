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
    detail::addEmbeddingKernels(k);
    detail::addShapeKernels(k);
    detail::addAttentionKernels(k);
    detail::addMathKernels(k);
    detail::addReduceKernels(k);
    detail::addSampleKernels(k);
    detail::addDecodeKernels(k);
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
  std::string problems;
  for (const ops::OpInfo &op : ops::allOps()) {
    int found = 0;
    for (const CudaKernelDef &k : allCudaKernels()) found += op.name == std::string_view(k.op);
    if (found != 1)
      problems += std::string("op '") + op.name + "' has " + std::to_string(found) + " CUDA kernels\n";
  }
  for (const CudaKernelDef &k : allCudaKernels())
    if (!ops::findOp(k.op)) problems += std::string("CUDA kernel '") + k.op + "' is not an op of the plan's op table\n";
  return problems;
}

}  // namespace lmrt::cuda
