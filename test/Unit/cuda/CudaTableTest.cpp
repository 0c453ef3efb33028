/* Tests, without a GPU, that the CUDA backend has exactly one kernel for every
   op a plan step may name (the op table generated from the ODS), as the CPU
   kernel table has, so a new op cannot be forgotten on one side. */
#include <gtest/gtest.h>

#include "runtime/cuda/backend.h"
#include "runtime/cuda/ops.h"
#include "runtime/kernels/registry.h"

namespace lmrt::cuda {
namespace {

TEST(CudaTable, OneKernelPerOpOfTheOpTable) { EXPECT_EQ(compareCudaWithOpTable(), ""); }

TEST(CudaTable, EveryCpuKernelHasACudaKernel) {
  for (const kernels::KernelDef &k : kernels::allKernels()) EXPECT_NE(findCudaKernel(k.op), nullptr) << k.op;
}

TEST(CudaTable, Built) { EXPECT_TRUE(built()); }

}  // namespace
}  // namespace lmrt::cuda
