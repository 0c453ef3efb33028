/* Tests the CUDA embedding-gradient kernel (runtime/cuda/embedding_kernels.cuh) without
   a GPU, on the CPU emulation of emulation.h, against the CPU's embedding_grad_add:
   more ids than one shared-memory tile holds, a vocabulary split into several parts,
   columns not a multiple of the block, repeated ids (added in order), f32 and f64. */
#include "../kernels/KernelTestUtil.h"

#include "emulation.h"
#include "runtime/cuda/embedding_kernels.cuh"

namespace lmrt::kernels::test {
namespace {

struct EmuLauncher {
  template <typename K, typename... A> void operator()(K kernel, unsigned gx, unsigned gy, int threads, A... args) const {
    lmrt_emu::launch(kernel, {gx, gy, 1}, {(unsigned)threads, 1, 1}, 0, args...);
  }
};

template <typename T> void runCase(int64_t n, int64_t v, int64_t d, DType dt) {
  SCOPED_TRACE("n " + std::to_string(n) + ", v " + std::to_string(v) + ", d " + std::to_string(d));
  Buf base = randn({v, d}, dt), ids = randIds({n}, v), dy = randn({n, d}, dt);
  std::vector<Buf> cpu = runKernel("embedding_grad_add", {base, ids, dy}, {base.type});
  Buf out = base;  // embedding_grad_add adds into a copy of base
  lmrt::cuda::embed::launchScatterAdd<T>(EmuLauncher{}, static_cast<const int32_t *>(ids.data()),
                                         static_cast<const T *>(dy.data()), static_cast<T *>(out.data()), n, v, d);
  EXPECT_TRUE(allClose(out, cpu[0], 0, 0));  // the same additions in the same order
}

TEST(EmbeddingEmulation, ScatterAddMatchesTheCpu) {
  runCase<float>(5000, 200, 70, DType::F32);  // 3 id tiles, 4 vocabulary parts
  runCase<float>(37, 1000, 300, DType::F32);  // 2 column blocks, 16 parts
  runCase<double>(2100, 64, 16, DType::F64);
}

}  // namespace
}  // namespace lmrt::kernels::test
