/* Tests the CUDA backend's second stream for lm.all_reduce (runtime/cuda/
   collective_stream.h, LMRT_CUDA_COLLECTIVE_STREAM=1): a slow "collective" on it (device
   copies of 64 MiB, 16 times, from A to B) must see its input as the steps before it
   wrote it, and the steps after it that write its input or read its output must wait
   for it; without those waits the compute stream's memset of A runs during the copies
   and B (and C, read from B) get its bytes. Skipped without a GPU (the next GPU session
   runs it: scripts/gpu-check.sh runs lmrt_cuda_gpu_test). */
#include <vector>

#include "runtime/cuda/collective_stream.h"
#include "test/Unit/cuda/CudaTestUtil.h"

namespace lmrt::cuda::test {
namespace {

TEST(CudaCollectiveStream, StepsWaitForTheCollectivesTheyTouch) {
  LMRT_REQUIRE_GPU();
  const size_t bytes = size_t(64) << 20;
  const TensorType type{DType::F32, {(int64_t)(bytes / 4)}};
  DeviceBuffer a(bytes, "A"), b(bytes, "B"), c(bytes, "C"), other(bytes, "other");
  const DevTensor A{a.get(), type}, B{b.get(), type}, C{c.get(), type}, O{other.get(), type};
  cudaStream_t compute;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  {
    CollectiveStream second(compute);
    ASSERT_EQ(cudaMemsetAsync(a.get(), 0x11, bytes, compute), cudaSuccess);  // the step that writes its input
    cudaStream_t s = second.begin();
    ASSERT_NE(s, compute);
    for (int k = 0; k < 16; ++k) ASSERT_EQ(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    second.end({A}, {B});
    second.before({}, {O});  // touches neither: goes on beside it
    ASSERT_EQ(cudaMemsetAsync(other.get(), 0x33, bytes, compute), cudaSuccess);
    second.before({}, {A});  // writes what it reads
    ASSERT_EQ(cudaMemsetAsync(a.get(), 0x22, bytes, compute), cudaSuccess);
    second.before({B}, {C});  // reads what it writes
    ASSERT_EQ(cudaMemcpyAsync(c.get(), b.get(), bytes, cudaMemcpyDeviceToDevice, compute), cudaSuccess);
    second.joinAll();
  }
  ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  std::vector<unsigned char> hb(bytes), hc(bytes);
  ASSERT_EQ(cudaMemcpy(hb.data(), b.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hc.data(), c.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t badB = 0, badC = 0;
  for (size_t i = 0; i < bytes; ++i) badB += hb[i] != 0x11, badC += hc[i] != 0x11;
  EXPECT_EQ(badB, 0u) << "the collective's output got bytes written after it started";
  EXPECT_EQ(badC, 0u) << "a step read the collective's output before it ended";
  cudaStreamDestroy(compute);
}

}  // namespace
}  // namespace lmrt::cuda::test
