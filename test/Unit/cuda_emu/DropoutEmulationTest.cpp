/* Tests the CUDA dropout kernel (runtime/cuda/dropout_kernels.cuh) without a
   GPU, on the CPU emulation of emulation.h, against the CPU's lm.dropout: the
   same elements dropped and the same values, bit for bit (a grid smaller than
   the tensor, so the grid-stride loop and rows split across blocks are
   exercised), f32 and f64, several rates and sites; with a part's key
   [2, rows, 2] (contract/dropout_math.h) too. */
#include "../kernels/KernelTestUtil.h"

#include "emulation.h"
#include "runtime/cuda/dropout_kernels.cuh"

namespace lmrt::kernels::test {
namespace {

struct EmuLauncher {
  template <typename K, typename... A> void operator()(K kernel, unsigned blocks, int threads, A... args) const {
    lmrt_emu::launch(kernel, {blocks, 1, 1}, {(unsigned)threads, 1, 1}, 0, args...);
  }
};

template <typename T> void runCase(Shape shape, double p, int64_t site, DType dt, int32_t part = -1) {
  SCOPED_TRACE("p " + std::to_string(p) + ", site " + std::to_string(site) + ", part " + std::to_string(part));
  const int64_t rows = shape[0];
  Buf x = randn(shape, dt), key(DType::I32, part < 0 ? Shape{rows, 2} : Shape{2, rows, 2});
  std::mt19937 g(17);
  for (int64_t i = 0; i < 2 * rows; ++i) static_cast<int32_t *>(key.data())[i] = (int32_t)g();
  if (part >= 0)
    for (int64_t i = 2 * rows; i < 4 * rows; ++i) static_cast<int32_t *>(key.data())[i] = part;
  Attrs a;
  a.set("p", p);
  a.set("site", site);
  std::vector<Buf> cpu = runKernel("dropout", {x, key}, {x.type}, a);
  Buf out = x;
  lmrt::cuda::drop::launchDropout<T>(EmuLauncher{}, 3, 64, static_cast<const T *>(x.data()),
                                     static_cast<const int32_t *>(key.data()), static_cast<T *>(out.data()),
                                     x.numel(), rows, site, p, part >= 0);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) dropped += cpu[0].get(i) == 0;
  EXPECT_GT(dropped, 0);
  EXPECT_TRUE(allClose(out, cpu[0], 0, 0));  // the same mask and the same products
}

TEST(DropoutEmulation, MatchesTheCpuBitForBit) {
  runCase<float>({5, 7, 30}, 0.1, 0, DType::F32);
  runCase<float>({3, 100}, 0.5, 9, DType::F32);
  runCase<double>({4, 3, 5, 7}, 0.25, 2, DType::F64);
  runCase<float>({5, 7, 30}, 0.1, 0, DType::F32, 3);  // a part's key: indices from 3 * 210
}

}  // namespace
}  // namespace lmrt::kernels::test
