/* Implements: the table of CUDA kernels the device executor dispatches plan
   steps to, one entry per op of the plan's op table (contract/op_table.h),
   mirroring the CPU table of runtime/cpu/kernels/registry.h: same operands, same
   attributes, same results (docs/dialect.md). Validation stays with the CPU
   table's check(): a plan is validated once, on the host, before anything is
   put on the GPU. Every entry enqueues its work on the call's stream and
   returns without waiting. */
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <string_view>
#include <vector>

#include "contract/attrs.h"
#include "base/tensor.h"

namespace lmrt::cuda {

class Gemm;

/* A tensor in device memory. */
struct DevTensor {
  void *data = nullptr;
  TensorType type;
  template <typename T> T *as() const { return static_cast<T *>(data); }
  const Shape &shape() const { return type.shape; }
  int64_t numel() const { return type.numel(); }
};

struct OpCall {
  std::vector<DevTensor> in;
  std::vector<DevTensor> out;
  const kernels::Attrs &attrs;
  cudaStream_t stream;
  void *scratch;  // device memory of at least scratchBytes(...) for this step, 256-byte aligned
  Gemm &gemm;     // the session's cuBLASLt handle and workspace
  /* The plan's 16-bit type under mixed precision (BF16 for "bf16", F16 for "fp16"),
     F32 otherwise: its f32 attention runs on 16-bit tensor cores (attention.cu). */
  DType lowPrecision = DType::F32;
};

struct CudaKernelDef {
  const char *op;
  /* Enqueues the op; throws lmrt::Error (a failed check.h call, an unsupported shape). */
  void (*run)(const OpCall &call);
  /* Device scratch the op needs besides its outputs (0 for most). */
  size_t (*scratchBytes)(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                         const kernels::Attrs &attrs);
  /* Reads or writes bf16 / f16 tensors (mixed precision: matmul, cast, the fused
     loss; all_gather and slice, ZeRO-3's gathers of bf16 parameter slices). The others are f32 / f64 kernels that would read 2-byte elements as
     4-byte ones, so the backend refuses a plan that hands them one (the CPU
     table's check() should already have). */
  bool reducedPrecision = false;
};

/* nullptr when no CUDA kernel has that name. */
const CudaKernelDef *findCudaKernel(std::string_view op);
const std::vector<CudaKernelDef> &allCudaKernels();
/* "" when the CUDA table has exactly one kernel per op of the plan's op table;
   else every disagreement, one per line (a unit test runs it, no GPU needed). */
std::string compareCudaWithOpTable();

/* Each family's kernels (one .cu file each), gathered by ops.cpp. */
namespace detail {
void addMatmulKernels(std::vector<CudaKernelDef> &k);
void addElementwiseKernels(std::vector<CudaKernelDef> &k);  // where_int, sum_to
void addLayerNormKernels(std::vector<CudaKernelDef> &k);
void addSoftmaxKernels(std::vector<CudaKernelDef> &k);
void addVocabParallelKernels(std::vector<CudaKernelDef> &k);  // linear_cross_entropy_stats(_grad)
void addEmbeddingKernels(std::vector<CudaKernelDef> &k);
void addShapeKernels(std::vector<CudaKernelDef> &k);
void addAttentionKernels(std::vector<CudaKernelDef> &k);
void addMathKernels(std::vector<CudaKernelDef> &k);  // every op of the elementwise table
void addReduceKernels(std::vector<CudaKernelDef> &k);
void addSampleKernels(std::vector<CudaKernelDef> &k);
void addCastKernels(std::vector<CudaKernelDef> &k);
void addDecodeKernels(std::vector<CudaKernelDef> &k);
void addCollectiveKernels(std::vector<CudaKernelDef> &k);  // collective.cpp, NCCL across ranks
/* ZeRO stage 1 (collective.cpp; cuda_backend.cpp): every data rank's slice (contract.h's
   zeroShard) of a tensor of `numel` elements into every rank's `whole`, where this rank's
   slice already is, over the data axis's NCCL communicator, on `stream`. In place where
   the ranks divide numel; else through `staging` (ranks x ceil(numel / ranks) elements),
   slices padded to ceil(numel / ranks). Collective over comm::meshGroup(0). */
void allGatherZeroSlices(void *whole, int64_t numel, DType dtype, void *staging, cudaStream_t stream,
                         const std::string &what);
inline size_t noScratch(const std::vector<TensorType> &, const std::vector<TensorType> &, const kernels::Attrs &) {
  return 0;
}
}  // namespace detail

}  // namespace lmrt::cuda
