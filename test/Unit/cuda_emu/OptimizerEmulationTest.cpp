/* Tests the CUDA SGD, Lion, LAMB and Adafactor kernels (runtime/cuda/optimizer_kernels.cuh)
   without a GPU, on the CPU emulation of emulation.h, against the CPU's optimizers
   (runtime/cpu/optimizers.cpp): three updates of three parameters over flat storage with
   gaps (a decayed matrix; a rank-3 tensor with a learning-rate multiple that spans two
   chunks; a decayed vector), with clipping's factor, clip_value and a NaN gradient,
   whose element must stay NaN on both (the parameter; Lion's momentum, as Lion steps by
   sign(NaN) = 0). emulation.h's min and max drop a NaN as CUDA's do, so a clamp with
   them fails here as it does on a GPU. f32 and f64.
   SGD (plain, momentum, Nesterov) and Lion give the CPU's bits: the same operations, no
   FMA on either side (optimizers.cu is compiled with --fmad=false, this test and
   optimizers.cpp with LMRT_EXACT_FP_FLAGS). So do LAMB's moments and Adafactor's column
   statistics and unfactored second moments, which no reduction feeds. LAMB's parameters
   and Adafactor's parameters and row statistics depend on sums in blockSum's order (the
   CPU sums in element order): within optimizer_compare.h's kReducedUlps. A GPU adds in
   the emulation's order, so the same holds there (lmrt_cuda_gpu_test's
   CudaTrain/OtherOptimizers). */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "emulation.h"
#include "optimizer_compare.h"
#include "runtime/cpu/optimizers.h"
#include "runtime/cuda/optimizer_kernels.cuh"
#include "runtime/cuda/optimizer_step.h"

namespace lmrt::cuda {
namespace {

constexpr unsigned kThreads = 256;  // the backend's (kernels.cuh)
using test::kReducedUlps;
using test::sameBits;
using test::scaledUlps;

struct Param {
  Shape shape;
  bool decay;
  double lrScale;
  int64_t offset;  // in the flat storage, 64-element aligned as the backend lays it out
};
const std::vector<Param> kParams = {{{40, 25}, true, 1.0, 0}, {{3, 100, 240}, false, 0.5, 1024}, {{70}, true, 1.0, 73024}};
constexpr int64_t kTotal = 73024 + 128;
constexpr int64_t kNanParam = 2, kNanAt = 7;  // the vector's element 7 has a NaN gradient

/* The kernels' work lists, as the backend builds them (cuda_backend.cpp): chunks of at most
   64 Ki elements for SGD and Lion, a slice per parameter (LAMB's trust ratio where it
   decays) for LAMB and Adafactor. */
std::vector<AdamWChunk> chunks() {
  std::vector<AdamWChunk> out;
  for (const Param &p : kParams)
    for (int64_t b = 0; b < numel(p.shape); b += 1 << 16)
      out.push_back({p.offset + b, p.offset + std::min<int64_t>(numel(p.shape), b + (1 << 16)), p.decay ? 1 : 0,
                     p.lrScale});
  return out;
}
std::vector<ParamSlice> slices(const OptimizerConfig &c) {
  std::vector<ParamSlice> out;
  for (const Param &p : kParams) {
    const bool factored = c.kind == "adafactor" && adafactorFactored(p.shape);
    out.push_back({p.offset, numel(p.shape), factored ? p.shape[p.shape.size() - 2] : 0, factored ? p.shape.back() : 0,
                   p.decay ? 1 : 0, p.decay ? 1 : 0, p.lrScale});
  }
  return out;
}

/* Three updates on the CPU and on the emulated kernels from the same parameters and
   gradients; compares parameters and state. */
template <typename T> void optimizerCase(const OptimizerConfig &cfg, DType dtype) {
  SCOPED_TRACE(cfg.kind + (dtype == DType::F64 ? " f64" : " f32") + " momentum " + std::to_string(cfg.momentum) +
               (cfg.nesterov ? " nesterov" : "") + (cfg.relativeStep ? "" : " lr"));
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> p0((size_t)kTotal, T(0)), g((size_t)kTotal, T(0));
  for (const Param &p : kParams)
    for (int64_t j = 0; j < numel(p.shape); ++j)
      p0[(size_t)(p.offset + j)] = T(normal(rng)), g[(size_t)(p.offset + j)] = T(2 * normal(rng));
  g[(size_t)(kParams[kNanParam].offset + kNanAt)] = T(NAN);
  const double lrs[3] = {1e-2, 2e-2, 3e-2}, gradScale = 0.8;

  std::vector<T> cpu = p0;
  std::vector<ParamView> views;
  for (const Param &p : kParams)
    views.push_back({dtype, cpu.data() + p.offset, g.data() + p.offset, numel(p.shape), p.decay, false, p.lrScale,
                     p.decay, p.shape});
  std::unique_ptr<CpuOptimizer> opt = makeCpuOptimizer(cfg);
  for (double lr : lrs) opt->step(views, lr, gradScale);
  const std::vector<void *> state = opt->state(views);  // each parameter's slots in stateSlots() order

  // The state in the parameters' layout, as the backend's m_ and v_ (a slot at its parameter's offset).
  std::vector<T> p = p0, s0((size_t)kTotal, T(0)), s1((size_t)kTotal, T(0));
  const std::vector<AdamWChunk> ch = chunks();
  const std::vector<ParamSlice> sl = slices(cfg);
  for (int t = 1; t <= 3; ++t) {
    const OptimizerStep s = stepScalars(cfg, lrs[t - 1], t);
    if (cfg.kind == "sgd")
      lmrt_emu::launch(opt::sgd<T>, {(unsigned)ch.size(), 1, 1}, {kThreads, 1, 1}, 0, p.data(), (const T *)g.data(),
                       cfg.momentum > 0 ? s0.data() : (T *)nullptr, ch.data(), gradScale, s);
    if (cfg.kind == "lion")
      lmrt_emu::launch(opt::lion<T>, {(unsigned)ch.size(), 1, 1}, {kThreads, 1, 1}, 0, p.data(), (const T *)g.data(),
                       s0.data(), ch.data(), gradScale, s);
    if (cfg.kind == "lamb")
      lmrt_emu::launch(opt::lamb<T>, {(unsigned)sl.size(), 1, 1}, {kThreads, 1, 1}, 0, p.data(), (const T *)g.data(),
                       s0.data(), s1.data(), sl.data(), gradScale, s);
    if (cfg.kind == "adafactor")
      lmrt_emu::launch(opt::adafactor<T>, {(unsigned)sl.size(), 1, 1}, {kThreads, 1, 1}, 0, p.data(),
                       (const T *)g.data(), s0.data(), s1.data(), sl.data(), gradScale, s);
  }

  EXPECT_NE(std::memcmp(cpu.data(), p0.data(), sizeof(T) * 1000), 0) << "the updates moved the parameters";
  int64_t clipped = 0;
  for (T gi : g) clipped += std::fabs(gi * T(gradScale)) > T(cfg.clipValue);
  EXPECT_GT(clipped, 1000) << "clip_value is exercised";
  // A NaN gradient's element stays NaN: the parameter, or Lion's momentum (Lion steps a
  // parameter by sign(x), and sign(NaN) is 0 here: the comparisons are false).
  const size_t nanAt = (size_t)(kParams[kNanParam].offset + kNanAt);
  const bool nanParam = cfg.kind != "lion";
  const T nanCuda = nanParam ? p[nanAt] : s0[nanAt];
  const T nanCpu = nanParam ? cpu[nanAt] : static_cast<const T *>(state[(size_t)kNanParam])[kNanAt];
  EXPECT_TRUE(std::isnan(nanCuda)) << "a NaN gradient's element stays NaN on CUDA: " << nanCuda;
  EXPECT_TRUE(std::isnan(nanCpu)) << "and on the CPU: " << nanCpu;
  const bool reduces = cfg.kind == "lamb" || cfg.kind == "adafactor";
  size_t slot = 0;
  for (const Param &q : kParams) {
    for (int64_t j = 0; j < numel(q.shape); ++j) {
      const size_t at = (size_t)(q.offset + j);
      ASSERT_TRUE(std::isnan(cpu[at]) == (nanParam && at == nanAt)) << "only the NaN gradient's element is NaN";
      if (!reduces) {
        ASSERT_TRUE(sameBits(p[at], cpu[at])) << "param at " << at << ": " << p[at] << " vs the CPU's " << cpu[at];
      } else {
        const double d = scaledUlps(p[at], cpu[at]);
        ASSERT_LE(d, kReducedUlps) << "param at " << at << ": " << p[at] << " vs the CPU's " << cpu[at];
      }
    }
    const std::vector<StateSlot> slots = stateSlots(cfg, q.shape);
    for (size_t k = 0; k < slots.size(); ++k, ++slot) {
      const T *c = static_cast<const T *>(state[slot]);
      const std::vector<T> &mine = k == 0 ? s0 : s1;
      // Adafactor's row statistics come from blockSum's row sums; every other slot from none.
      const bool rows = cfg.kind == "adafactor" && slots.size() == 2 && k == 0;
      for (int64_t j = 0; j < numel(slots[k].shape); ++j) {
        const T a = mine[(size_t)(q.offset + j)], b = c[j];
        if (rows)
          ASSERT_LE(scaledUlps(a, b), kReducedUlps) << slots[k].prefix << " [" << j << "]: " << a << " vs " << b;
        else
          ASSERT_TRUE(sameBits(a, b)) << slots[k].prefix << " [" << j << "]: " << a << " vs the CPU's " << b;
      }
    }
  }
  ASSERT_EQ(slot, state.size());
}

OptimizerConfig config(const char *kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.beta1 = 0.9, c.beta2 = c.kind == "lion" ? 0.99 : 0.999, c.eps = c.kind == "adafactor" ? 1e-30 : 1e-6;
  c.weightDecay = 0.1, c.clipValue = 1.5;
  return c;
}

template <typename F> void bothTypes(F &&f) {
  f(float{}, DType::F32);
  f(double{}, DType::F64);
}

TEST(OptimizerEmulation, SgdGivesTheCpusBits) {
  bothTypes([](auto t, DType dtype) {
    using T = decltype(t);
    OptimizerConfig c = config("sgd");
    optimizerCase<T>(c, dtype);  // plain: no state
    c.momentum = 0.9;
    optimizerCase<T>(c, dtype);
    c.nesterov = true;
    optimizerCase<T>(c, dtype);
  });
}

TEST(OptimizerEmulation, LionGivesTheCpusBits) {
  bothTypes([](auto t, DType dtype) { optimizerCase<decltype(t)>(config("lion"), dtype); });
}

TEST(OptimizerEmulation, LambFollowsTheCpu) {
  bothTypes([](auto t, DType dtype) { optimizerCase<decltype(t)>(config("lamb"), dtype); });
}

TEST(OptimizerEmulation, AdafactorFollowsTheCpu) {
  bothTypes([](auto t, DType dtype) {
    using T = decltype(t);
    OptimizerConfig c = config("adafactor");
    optimizerCase<T>(c, dtype);  // HF's defaults: relative step, scale_parameter
    c.relativeStep = false, c.scaleParameter = false;
    optimizerCase<T>(c, dtype);  // the schedule's rate, no RMS(w)
  });
}

}  // namespace
}  // namespace lmrt::cuda
