//===- KernelEmitter.h - One kernel body per lm.fusion region ---*- C++ -*-===//
//
// Lowers an lm.fusion region (formed by -lm-fuse) to the source of one kernel
// body: a function template over the storage type that computes ONE point of
// the region's iteration space. The same body is wrapped twice, for the CPU
// (a loop the compiler vectorises, called by lmrt on chunks from its OpenMP
// threads) and for CUDA (a grid-stride __global__ function), so the math the
// CPU tests exercise is the math the GPU runs. The format is in docs/fusion.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "contract/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::lm {

class FusionOp;

/// How lmrt iterates a kernel (plan.proto's Kernel.Schedule).
enum class KernelSchedule { Elementwise, ColumnReduce, MatmulEpilogue };

/// One kernel, ready to be instantiated for a storage type.
struct KernelBody {
  KernelSchedule schedule = KernelSchedule::Elementwise;
  /// The iteration space as [rows, cols]: every point is i = r * cols + c.
  /// Elementwise: [1, numel] (rows is 1); column reduce: reduced rows x kept
  /// columns; matmul epilogue: the product's flattened rows x its N.
  int64_t rows = 1, cols = 1;
  /// Arguments are the fused step's inputs then its outputs (plan buffers),
  /// plus for an epilogue a scratch product when the product is not a result.
  std::vector<lmrt::plan::TensorType> args;
  unsigned numInputs = 0;
  /// Epilogue: which argument holds the GEMM product, the matmul operands (as
  /// input indices) and its transpose_rhs flag.
  int productArg = -1, lhsInput = -1, rhsInput = -1;
  bool transposeRhs = false;
  /// Column reduce: the output argument each reduction accumulates into.
  std::vector<int> reduceArgs;
  /// `template <typename T> LMC_HD void NAME(void *const *p, int64_t i[, lmc::acc_t<T> *red])`
  /// with NAME a placeholder ("LMC_BODY") the source writer replaces; the text
  /// identifies the kernel (identical bodies compile once).
  std::string text;
  /// Predicted FLOPs of one run (the region's ops).
  int64_t flops = 0;
};

/// Lowers `op`; errors (an op the emitter has no scalar form for) are emitted
/// at the offending op.
FailureOr<KernelBody> emitKernelBody(FusionOp op);

/// The name of a kernel: "lmc_k" + 16 hex digits of a hash of its body, schedule
/// and signature, stable across runs and machines.
std::string kernelName(const KernelBody &body);
/// The name of its body function, a hash of the text alone: kernels that
/// differ only in what surrounds the body (another GEMM's K) share it.
std::string bodyName(const KernelBody &body);

/// One kernel of a plan: its body and the storage type it is instantiated for.
struct KernelInstance {
  std::string name;   ///< kernelName(body)
  std::string dtype;  ///< "f32" | "f64"
  const KernelBody *body;
};

/// The whole translation unit for `kernels`: the scalar-math prelude, every
/// body once, and an entry point per instance. `cuda` selects the CUDA
/// wrappers (extern "C" __global__) instead of the CPU ones. With
/// -DLMC_ALL_STORAGE_TYPES the source also instantiates every body for bf16
/// and f16 storage (f32 accumulation), which the tests compile.
std::string writeKernelSource(const std::vector<KernelInstance> &kernels, bool cuda);

/// The entry symbol of `kernel` ("<name>_<dtype>").
std::string entrySymbol(const KernelInstance &kernel);

} // namespace mlir::lm
