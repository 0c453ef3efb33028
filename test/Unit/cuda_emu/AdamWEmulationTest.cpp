/* Tests the CUDA AdamW kernel (runtime/cuda/adamw_kernels.cuh) without a GPU, on the CPU
   emulation of emulation.h: three updates of a decayed parameter and of one spanning two
   chunks with a learning-rate multiple, with clipping's factor, clip_value and a NaN
   gradient, over flat storage with gaps, give the CPU's AdamW (runtime/cpu/adamw.cpp)
   bit for bit: the chunk table's plumbing (rates, decay, offsets) around the shared
   element of contract/adamw_math.h; f32 and f64. And a ZeRO rank's chunks (state packed
   at stateShift, gradients at gradShift) give the same bytes for its slice. On a device
   the element's operations are __*_rn intrinsics (lmrt_cuda_gpu_test's
   CudaTrain.AdamWIsTheCpusBitForBit); here they are the host's, which the emulation test is
   compiled with LMRT_EXACT_FP_FLAGS for. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "emulation.h"
#include "optimizer_compare.h"
#include "runtime/cpu/adamw.h"
#include "runtime/cuda/adamw_kernels.cuh"

namespace lmrt::cuda {
namespace {

constexpr unsigned kThreads = 256;  // the backend's (kernels.cuh)


template <typename T> void adamwCase(DType dtype) {
  SCOPED_TRACE(dtype == DType::F64 ? "f64" : "f32");
  const std::vector<int64_t> sizes = {1000, 70000}, off = {0, 1024};
  const int64_t total = 1024 + 70016;
  std::mt19937 rng(13);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> p0((size_t)total, T(0)), g((size_t)total, T(0));
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < sizes[i]; ++j) p0[(size_t)(off[i] + j)] = T(normal(rng)), g[(size_t)(off[i] + j)] = T(2 * normal(rng));
  g[7] = T(NAN);
  std::vector<T> cpu = p0;
  const std::vector<ParamView> views = {{dtype, cpu.data(), g.data(), sizes[0], true},
                                        {dtype, cpu.data() + off[1], g.data() + off[1], sizes[1], false, false, 0.5}};
  AdamWConfig cfg;
  cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weightDecay = 0.1, cfg.clipValue = 1.5;
  AdamW adamw(cfg);
  const double lrs[3] = {1e-3, 2e-3, 3e-3}, gradScale = 0.8;
  for (double lr : lrs) adamw.step(views, lr, gradScale);
  const std::vector<AdamW::MomentView> mv = adamw.moments();

  // The whole storage, then rank 1 of 2 under ZeRO stage 2: its half of the second
  // parameter, with state and gradients packed from 0.
  const std::vector<AdamWChunk> whole = {
      {0, 1000, 1, 1.0}, {1024, 1024 + 65536, 0, 0.5}, {1024 + 65536, 1024 + 70000, 0, 0.5}};
  const int64_t half = 1024 + 35000;
  const std::vector<AdamWChunk> rank1 = {{half, 1024 + 70000, 0, 0.5, half, half}};
  for (bool zero : {false, true}) {
    SCOPED_TRACE(zero ? "a ZeRO rank's slice" : "the whole storage");
    const std::vector<AdamWChunk> &chunks = zero ? rank1 : whole;
    const int64_t from = zero ? half : 0, elems = total - from;
    std::vector<T> p = p0, m((size_t)elems, T(0)), v((size_t)elems, T(0));
    std::vector<T> grads(g.begin() + from, g.end());
    for (int t = 1; t <= 3; ++t) {  // the backend's scalars (CudaBackend::launchUpdate)
      const AdamWStep s{lrs[t - 1], cfg.beta1, cfg.beta2, cfg.eps, cfg.weightDecay, 1.0 - std::pow(cfg.beta1, (double)t),
                        1.0 - std::pow(cfg.beta2, (double)t), cfg.clipValue};
      lmrt_emu::launch(opt::adamw<T>, {(unsigned)chunks.size(), 1, 1}, {kThreads, 1, 1}, 0, p.data(),
                       (const T *)grads.data(), m.data(), v.data(), chunks.data(), gradScale, s);
    }
    if (!zero) {
      EXPECT_TRUE(std::isnan(p[7]) && std::isnan(cpu[7])) << "a NaN gradient's element is NaN on both";
    }
    for (int i = 0; i < 2; ++i) {
      const T *cm = static_cast<const T *>(mv[(size_t)i].m), *cv = static_cast<const T *>(mv[(size_t)i].v);
      for (int64_t j = 0; j < sizes[i]; ++j) {
        const int64_t at = off[i] + j;
        if (at < from) continue;
        ASSERT_TRUE(test::sameBits(p[(size_t)at], cpu[(size_t)at])) << "param " << i << " [" << j << "]";
        ASSERT_TRUE(test::sameBits(m[(size_t)(at - from)], cm[j])) << "m " << i << " [" << j << "]";
        ASSERT_TRUE(test::sameBits(v[(size_t)(at - from)], cv[j])) << "v " << i << " [" << j << "]";
      }
    }
  }
}

TEST(AdamWEmulation, KernelGivesTheCpusBits) {
  adamwCase<float>(DType::F32);
  adamwCase<double>(DType::F64);
}

}  // namespace
}  // namespace lmrt::cuda
