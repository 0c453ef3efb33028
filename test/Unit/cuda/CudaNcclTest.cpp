/* Tests NCCL on the GPU (runtime/comm/nccl_communicator.h) over a world of one rank:
   the communicator joins (its unique id "broadcast" by the single-process host
   communicator), and all_reduce (sum and mean), reduce_scatter and all_gather run on
   device buffers, in f32 and f64, in and out of place, each leaving the bytes one rank
   must get: its own (a sum over one rank is the value; NCCL's mean over one rank
   multiplies by 1). With one GPU this is all of NCCL a machine can run; several ranks
   need several GPUs (docs/distributed.md). Skipped without a GPU, and where lmrt's
   CUDA backend was built without nccl.h. */
#include <cstring>

#include "runtime/comm/communicator.h"
#include "test/Unit/cuda/CudaTestUtil.h"
#ifdef LMC_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#endif

namespace lmrt::cuda::test {
namespace {

#ifdef LMC_HAVE_NCCL
/* One NCCL communicator for every case: NCCL's init is the slow part. */
comm::DeviceCommunicator &nccl() {
  static std::unique_ptr<comm::Communicator> host = comm::makeSingleProcess();
  static std::unique_ptr<comm::DeviceCommunicator> c = comm::makeNcclCommunicator(*host);
  return *c;
}

enum class Op { AllReduceSum, AllReduceMean, ReduceScatter, AllGather };

/* Runs `op` on `count` elements of `dtype` (in place when `inPlace`) and checks the result is
   the input's bytes, and that nothing past the result was written. */
void runOne(Op op, DType dtype, int64_t count, bool inPlace) {
  const size_t elem = dtypeSize(dtype), bytes = (size_t)count * elem;
  std::vector<unsigned char> host(bytes);
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < count; ++i) {
    const double v = normal(rng);
    if (dtype == DType::F32) {
      const float f = (float)v;
      std::memcpy(&host[i * elem], &f, elem);
    } else if (elem == 2) {  // bf16, f16 (gathered only): any bits move as they are
      const uint16_t h = (uint16_t)(rng() & 0xffff);
      std::memcpy(&host[i * elem], &h, elem);
    } else {
      std::memcpy(&host[i * elem], &v, elem);
    }
  }
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    DeviceBuffer in(bytes + 256, "nccl input"), out(bytes + 256, "nccl output");
    ASSERT_EQ(cudaMemcpy(in.get(), host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    // A guard of 0xff bytes past the result (and the whole output, before): a collective that
    // writes too much, or too little, shows.
    ASSERT_EQ(cudaMemset(out.get(), 0xff, bytes + 256), cudaSuccess);
    void *dst = inPlace ? in.get() : out.get();
    const auto r = op == Op::AllReduceMean ? comm::Reduction::Mean : comm::Reduction::Sum;
    switch (op) {
    case Op::AllReduceSum:
    case Op::AllReduceMean: nccl().allReduce(in.get(), dst, count, dtype, r, stream, "test all_reduce"); break;
    case Op::ReduceScatter: nccl().reduceScatter(in.get(), dst, count, dtype, r, stream, "test reduce_scatter"); break;
    case Op::AllGather: nccl().allGather(in.get(), dst, count, dtype, stream, "test all_gather"); break;
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<unsigned char> got(bytes + 256);
    ASSERT_EQ(cudaMemcpy(got.data(), dst, bytes + 256, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(got.data(), host.data(), bytes), 0) << "not the input's bytes";
    if (!inPlace) {
      for (size_t i = bytes; i < bytes + 256; ++i) {
        ASSERT_EQ(got[i], 0xff) << "byte " << i << " past the " << bytes << "-byte result was written";
      }
    }
  }
  cudaStreamDestroy(stream);
}
#endif

using NcclCase = std::tuple<int, DType, bool>;  // Op, dtype, in place
class Nccl : public ::testing::TestWithParam<NcclCase> {};

std::string caseName(const ::testing::TestParamInfo<NcclCase> &info) {
  static const char *ops[] = {"AllReduceSum", "AllReduceMean", "ReduceScatter", "AllGather"};
  return std::string(ops[std::get<0>(info.param)]) + "_" + dtypeName(std::get<1>(info.param)) +
         (std::get<2>(info.param) ? "_InPlace" : "");
}

TEST_P(Nccl, OneRankGivesItsOwnBytes) {
  LMRT_REQUIRE_GPU();
#ifdef LMC_HAVE_NCCL
  const auto [op, dtype, inPlace] = GetParam();
  EXPECT_EQ(nccl().describe().substr(0, 5), "NCCL ");
  EXPECT_NE(nccl().describe().find("rank 0 of 1"), std::string::npos) << nccl().describe();
  // An odd count, over a million: more than one of NCCL's chunks, and a tail.
  runOne(static_cast<Op>(op), dtype, 1 << 20 | 37, inPlace);
#else
  GTEST_SKIP() << "lmrt's CUDA backend was built without NCCL (no nccl.h beside the CUDA toolkit)";
#endif
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, Nccl,
    ::testing::Combine(::testing::Values((int)0, 1, 2, 3), ::testing::Values(DType::F32, DType::F64),
                       ::testing::Bool()),
    caseName);

/* A gather moves bf16 and f16 (ZeRO-3's parameter slices under --precision bf16). */
INSTANTIATE_TEST_SUITE_P(Gathers, Nccl,
                         ::testing::Combine(::testing::Values((int)Op::AllGather),
                                            ::testing::Values(DType::BF16, DType::F16), ::testing::Bool()),
                         caseName);

/* A bf16 sum is refused by name, before NCCL is asked. */
TEST(NcclErrors, Bf16IsRefusedByName) {
  LMRT_REQUIRE_GPU();
#ifdef LMC_HAVE_NCCL
  DeviceBuffer buf(64, "nccl bf16");
  try {
    nccl().allReduce(buf.get(), buf.get(), 8, DType::BF16, comm::Reduction::Sum, nullptr, "all_reduce of 'grad:w'");
    FAIL() << "a bf16 all_reduce was accepted";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce of 'grad:w': collectives sum f32 or f64 tensors, got bf16"),
              std::string::npos)
        << e.what();
  }
#else
  GTEST_SKIP() << "lmrt's CUDA backend was built without NCCL";
#endif
}

}  // namespace
}  // namespace lmrt::cuda::test
