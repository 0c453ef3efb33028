/* Tests, without a GPU, that the CUDA backend has exactly one kernel for every
   op a plan step may name (the op table generated from the ODS), as the CPU
   kernel table has, so a new op cannot be forgotten on one side. */
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/exec/backend_registry.h"
#include "runtime/cuda/ops.h"
#include "runtime/cpu/kernels/registry.h"

namespace lmrt::cuda {
namespace {

TEST(CudaTable, OneKernelPerOpOfTheOpTable) { EXPECT_EQ(compareCudaWithOpTable(), ""); }

TEST(CudaTable, EveryCpuKernelHasACudaKernel) {
  for (const kernels::KernelDef &k : kernels::allKernels()) EXPECT_NE(findCudaKernel(k.op), nullptr) << k.op;
}

/* The kernels that take bf16 / f16 tensors (mixed precision): the GEMM, the cast and
   the fused loss, and ZeRO-3's gather of bf16 parameter slices and its cut, as on the
   CPU; the backend refuses a plan handing one to any other. */
TEST(CudaTable, ReducedPrecisionKernels) {
  std::vector<std::string> reduced;
  for (const CudaKernelDef &k : allCudaKernels())
    if (k.reducedPrecision) reduced.push_back(k.op);
  std::sort(reduced.begin(), reduced.end());
  EXPECT_EQ(reduced, (std::vector<std::string>{"all_gather", "cast", "linear_cross_entropy",
                                               "linear_cross_entropy_with_grad", "matmul", "slice"}));
}

TEST(CudaTable, ProvidesTheCudaDevice) { EXPECT_STREQ(provider().device, "cuda"); }

/* The packed attention ops have CPU kernels only (lmc forms them for --target cpu
   alone): the CUDA entries refuse them when the session sizes its scratch, at bind. */
TEST(CudaTable, PackedAttentionIsRefusedAtBind) {
  for (const char *op : {"packed_attention", "packed_attention_stats", "packed_attention_grad_stats"}) {
    const CudaKernelDef *k = findCudaKernel(op);
    ASSERT_NE(k, nullptr) << op;
    try {
      (void)k->scratchBytes({}, {}, kernels::Attrs{});
      ADD_FAILURE() << op << " was not refused";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(std::string(op) + ": no CUDA kernel (the packed attention ops are CPU-only"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace lmrt::cuda

#include "runtime/cuda/generated.h"

namespace lmrt::cuda {
namespace {

/* Tests that a plan whose generated kernels were compiled only for the CPU is
   refused by the CUDA backend with the way out, before any device work. */
TEST(CudaGenerated, PlanWithoutCudaLibraryIsRefused) {
  plan::Plan p;
  p.add_kernels()->set_name("lmc_k0123456789abcdef_f32");
  p.add_kernel_libraries()->set_target("cpu-x86-64");
  try {
    GeneratedModule::load(p, "x.plan", 1);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "plan 'x.plan': its generated kernels were compiled for cpu-x86-64, not for CUDA; "
                           "recompile it with `lmc compile --target cpu,cuda` to run it with --device cuda");
  }
}

TEST(CudaGenerated, PlanWithoutKernelsLoadsNothing) {
  plan::Plan p;
  EXPECT_EQ(GeneratedModule::load(p, "x.plan", 1)->size(), 0u);
}

}  // namespace
}  // namespace lmrt::cuda
