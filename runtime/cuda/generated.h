/* Implements: the kernels lmc generated from fused regions (docs/fusion.md), on
   the GPU: the plan's "cuda" kernel library (a fatbin: sm_80, sm_90 and PTX) is
   loaded with the driver API (cuModuleLoadData; plan validation has checked
   its checksum), every kernel's entry symbol is resolved before the first step,
   and a fused step launches it with the generated wrappers' convention:
     extern "C" __global__ void NAME_f32(lmc::Args<N> a, int64_t begin, int64_t end)
   where Args<N> is the step's N device pointers (inputs, then outputs) by value.
   Elementwise and epilogue kernels cover the points [0, rows*cols) with a
   grid-stride loop; a column reduce is two kernels, NAME over chunks of rows into
   partial sums, then NAME_combine over the columns [0, cols); an epilogue's GEMM
   (args[product] = args[lhs] x args[rhs]) runs first, on cuBLASLt. */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "contract/plan.pb.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/ops.h"

namespace lmrt::cuda {

class GeneratedModule {
public:
  /* Loads the plan's CUDA library and resolves plan.kernels in order; a plan
     without generated kernels loads nothing. Throws lmrt::Error when the plan
     has no CUDA library (naming the targets it has) or the image does not load
     on this GPU. */
  static std::unique_ptr<GeneratedModule> load(const plan::Plan &plan, const std::string &origin, int smCount);
  ~GeneratedModule();
  GeneratedModule(const GeneratedModule &) = delete;
  GeneratedModule &operator=(const GeneratedModule &) = delete;

  /* Enqueues kernel `index` on `args` (the step's inputs then outputs). */
  void launch(int index, const std::vector<DevTensor> &args, Gemm &gemm, cudaStream_t stream) const;
  size_t size() const { return kernels_.size(); }

private:
  GeneratedModule() = default;
  struct Kernel {
    plan::Kernel::Schedule schedule;
    int64_t rows, cols;
    int product, lhs, rhs;
    bool transposeRhs;
    CUfunction fn;
    CUfunction combine;  // COLUMN_REDUCE: NAME_combine, which adds the row chunks' partial sums
    std::string name;
  };
  CUmodule module_ = nullptr;
  DeviceBuffer partials_;  // the column reductions' partial sums (one at a time: steps run in order)
  int smCount_ = 1;
  std::vector<Kernel> kernels_;
};

}  // namespace lmrt::cuda
