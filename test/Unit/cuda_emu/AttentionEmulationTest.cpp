/* Tests the CUDA attention kernels (runtime/cuda/attention_kernels.cuh) without a
   GPU: the kernels and their launch sequences run as they are on the CPU emulation
   of emulation.h, and every result is compared with the CPU kernels' (which the
   kernel tests check against a naive reference and finite differences) at the
   tolerances of the GPU test (test/Unit/cuda/CudaTestUtil.h). The shapes are those
   of that test: every head-size kernel (16, 64, 96 -> 32, 64, 128 columns), query and
   key counts across tiles and not multiples of them, cross-attention with fewer and
   with more keys than queries, grouped-query heads, causal, padding masks (ragged
   rows, a row wholly masked), the cache offset of cached_attention, f32 and f64;
   biased_attention's bias (T5's, ALiBi's, per batch row, rank 2), segment ids, scale
   and the bias's gradient; its probability dropout (the same mask as the CPU's,
   regenerated in the backward); the 16-bit tensor-core kernels of bf16 and fp16 plans
   (attention_mma.cuh, their mma.sync and shuffles emulated as warp exchanges). */
#include "contract/dropout_math.h"
#include "../kernels/KernelTestUtil.h"

#include "emulation.h"
#include "runtime/cuda/attention_mma.cuh"
#include "runtime/cuda/attention_tc.cuh"

namespace lmrt::kernels::test {
namespace {

namespace attn = lmrt::cuda::attn;

struct EmuLauncher {
  template <typename K, typename... A> void operator()(K kernel, attn::Grid g, int threads, size_t smem, A... args) const {
    lmrt_emu::launch(kernel, {g.x, g.y, 1}, {(unsigned)threads, 1, 1}, smem, args...);
  }
};

struct Case {
  int64_t B, Tq, Tk, H, Hkv, Dh;
  bool causal, masked = false;
  DType dtype = DType::F32;
  bool tf32 = false;  // the tensor-core kernels (attention_tc.cuh)
  DType low = DType::F32;  // BF16 / F16: the 16-bit tensor-core kernels (attention_mma.cuh)
};

std::string describe(const Case &c) {
  return "B " + std::to_string(c.B) + ", Tq " + std::to_string(c.Tq) + ", Tk " + std::to_string(c.Tk) + ", H " +
         std::to_string(c.H) + "/" + std::to_string(c.Hkv) + ", Dh " + std::to_string(c.Dh) +
         (c.causal ? ", causal" : "") + (c.masked ? ", masked" : "") + (c.dtype == DType::F64 ? ", f64" : "") +
         (c.tf32 ? ", tf32" : "") + (c.low == DType::BF16 ? ", bf16 mma" : c.low == DType::F16 ? ", f16 mma" : "");
}

attn::AttnDims dimsOf(const Case &c) {
  attn::AttnDims d;
  d.B = c.B, d.T = c.Tq, d.H = c.H, d.Dh = c.Dh, d.C = c.H * c.Dh, d.Hkv = c.Hkv, d.Ck = c.Hkv * c.Dh, d.Tk = c.Tk;
  d.scale = 1.0 / std::sqrt((double)c.Dh);
  return d;
}

/* The GPU test's padding mask: row b keeps its first (b + 1) Tk / (B + 1) keys, and
   the last row has every key masked. */
Buf paddingMask(const Case &c) {
  Buf m(c.dtype, {c.B, c.Tk});
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = 0; j < c.Tk; ++j) m.set(b * c.Tk + j, b + 1 < c.B && j < (b + 1) * c.Tk / (c.B + 1) ? 1.0 : 0.0);
  return m;
}

/* |emu - cpu| <= rtol |cpu| + atol max|cpu| everywhere (f32: 1e-4, 1e-5; f64: 1e-10,
   1e-12; TF32: inputs of every product rounded to 11 significant bits, 2^-11 = 4.9e-4
   relative each, through two chained products (scores, then P V or dS Q): 5e-3, 1e-3,
   where 1e-3 and 2e-4 fail a few elements of most cases). */
/* The 16-bit kernels round every product's operands (q, k, v, dy, P, dS) to 8 (bf16)
   or 11 (f16) significant bits, fp32 accumulation: bf16 2e-2 and 1e-2, f16 5e-3 and
   3e-3. Measured: at f32's 1e-4 and 1e-5 most elements of every case fail (y by about
   2e-3 relative in bf16), so the kernels do round; at these, all pass. */
struct Tol {
  double rtol, atol;
};
Tol tolOf(const Case &c) {
  if (c.dtype == DType::F64) return {1e-10, 1e-12};
  if (c.tf32) return {5e-3, 1e-3};
  if (c.low == DType::BF16) return {2e-2, 1e-2};
  if (c.low == DType::F16) return {5e-3, 3e-3};
  return {1e-4, 1e-5};
}
void expectClose(const Buf &emu, const Buf &cpu, const std::string &what, Tol tol = {1e-4, 1e-5}) {
  if (cpu.type.dtype == DType::F64) tol = {1e-10, 1e-12};
  const double rtol = tol.rtol, atolScale = tol.atol;
  double maxAbs = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) maxAbs = std::max(maxAbs, std::fabs(cpu.get(i)));
  int64_t misses = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double c = cpu.get(i), e = emu.get(i);
    if (std::fabs(e - c) <= rtol * std::fabs(c) + atolScale * maxAbs) continue;
    if (++misses <= 3) ADD_FAILURE() << what << " element " << i << ": emulated " << e << ", cpu " << c;
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << cpu.numel() << " elements differ";
}

template <typename F> void byHeadSize(int64_t Dh, F &&f) {
  if (Dh <= 32)
    f(std::integral_constant<int, 32>{});
  else if (Dh <= 64)
    f(std::integral_constant<int, 64>{});
  else
    f(std::integral_constant<int, 128>{});
}

template <typename T> const T *ptr(const Buf &b) { return static_cast<const T *>(b.data()); }
template <typename T> T *ptr(Buf &b) { return static_cast<T *>(b.data()); }

/* Forward (y and lse) and backward (dq, dk, dv) on the emulator against the CPU's
   (masked_)attention, attention_stats and (masked_)attention_grad. */
template <typename T> void runCase(const Case &c) {
  SCOPED_TRACE(describe(c));
  const attn::AttnDims d = dimsOf(c);
  Buf q = randn({c.B, c.Tq, c.H * c.Dh}, c.dtype), k = randn({c.B, c.Tk, c.Hkv * c.Dh}, c.dtype),
      v = randn({c.B, c.Tk, c.Hkv * c.Dh}, c.dtype), dy = randn({c.B, c.Tq, c.H * c.Dh}, c.dtype);
  Buf mask = c.masked ? paddingMask(c) : Buf();
  Attrs a = attrs({{"num_heads", c.H}, {"num_kv_heads", c.Hkv}, {"causal", c.causal}});
  std::vector<Buf> cpuY, cpuGrad;
  if (c.masked) {
    cpuY = runKernel("masked_attention", {q, k, v, mask}, {q.type}, a);
    cpuGrad = runKernel("masked_attention_grad", {q, k, v, mask, dy}, {q.type, k.type, v.type}, a);
  } else {
    cpuY = runKernel("attention_stats", {q, k, v}, {q.type, TensorType{c.dtype, {c.B, c.H, c.Tq}}}, a);
    cpuGrad = runKernel("attention_grad", {q, k, v, dy}, {q.type, k.type, v.type}, a);
  }
  Buf y(c.dtype, q.type.shape), lse(c.dtype, {c.B, c.H, c.Tq}), delta(c.dtype, {c.B, c.H, c.Tq});
  Buf dq(c.dtype, q.type.shape), dk(c.dtype, k.type.shape), dv(c.dtype, v.type.shape);
  const T *m = c.masked ? ptr<T>(mask) : nullptr;
  byHeadSize(c.Dh, [&](auto dm) {
    constexpr int DMAX = decltype(dm)::value;
    if constexpr (std::is_same_v<T, float> && DMAX <= 64)
      if (c.tf32) {
        attn::launchForwardTc<DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(y),
                                    ptr<T>(lse), (const int32_t *)nullptr);
        attn::launchBackwardTc<DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(dy),
                                     ptr<T>(y), ptr<T>(lse), ptr<T>(delta), ptr<T>(dq), ptr<T>(dk), ptr<T>(dv));
        return;
      }
    ASSERT_FALSE(c.tf32) << "no tensor-core kernel for this case";
    if constexpr (std::is_same_v<T, float>)
      if (c.low != DType::F32) {
        auto mma = [&](auto h) {
          using H = decltype(h);
          attn::launchForwardMma<H, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(y),
                                          ptr<T>(lse), (const int32_t *)nullptr);
          attn::launchBackwardMma<H, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m,
                                           ptr<T>(dy), ptr<T>(y), ptr<T>(lse), ptr<T>(delta), ptr<T>(dq), ptr<T>(dk),
                                           ptr<T>(dv));
        };
        if (c.low == DType::BF16)
          mma(lmc::bf16{});
        else
          mma(lmc::f16{});
        return;
      }
    attn::launchForward<T, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(y),
                                 ptr<T>(lse), (const int32_t *)nullptr);
    attn::launchBackward<T, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(dy),
                                  ptr<T>(y), ptr<T>(lse), ptr<T>(delta), ptr<T>(dq), ptr<T>(dk), ptr<T>(dv));
  });
  const Tol tol = tolOf(c);
  expectClose(y, cpuY[0], "y", tol);
  if (!c.masked) expectClose(lse, cpuY[1], "lse", tol);
  expectClose(dq, cpuGrad[0], "dq", tol);
  expectClose(dk, cpuGrad[1], "dk", tol);
  expectClose(dv, cpuGrad[2], "dv", tol);
}

void run(const Case &c) {
  if (c.dtype == DType::F64)
    runCase<double>(c);
  else
    runCase<float>(c);
}

TEST(AttentionEmulation, SelfAttention) {
  run({2, 37, 37, 2, 2, 16, true});
  run({1, 130, 130, 2, 2, 64, false});
  run({1, 130, 130, 2, 2, 64, true});
  run({2, 70, 70, 2, 2, 96, true});
  run({2, 19, 19, 2, 2, 16, true, false, DType::F64});
}

TEST(AttentionEmulation, GroupedQueryHeads) {
  for (int64_t kv : {1, 2})
    for (bool causal : {true, false}) run({2, 70, 70, 4, kv, 16, causal});
}

/* Cross-attention with fewer keys than queries is the case the GPU caught: the
   forward treated Tk < Tq as a cache offset out of range and skipped every key. */
TEST(AttentionEmulation, CrossAndMaskedAttention) {
  for (bool masked : {false, true}) {
    run({3, 37, 130, 2, 2, 16, false, masked});
    run({2, 130, 9, 2, 1, 96, false, masked});
    run({4, 65, 65, 2, 2, 64, false, masked});
    run({2, 100, 33, 4, 4, 64, false, masked});
  }
  run({3, 70, 70, 4, 2, 64, true, true});
  run({2, 19, 19, 2, 2, 16, true, true, DType::F64});
}

/* The TF32 tensor-core kernels, on the shapes above that they take (heads of at most
   64 columns, f32). */
TEST(AttentionEmulation, TensorCoreKernels) {
  auto tc = [](Case c) {
    c.tf32 = true;
    run(c);
  };
  tc({2, 37, 37, 2, 2, 16, true});
  tc({1, 130, 130, 2, 2, 64, true});
  tc({1, 130, 130, 2, 2, 64, false});
  tc({2, 70, 70, 4, 1, 16, true});
  tc({2, 70, 70, 4, 2, 32, false});
  for (bool masked : {false, true}) {
    tc({3, 37, 130, 2, 2, 16, false, masked});
    tc({2, 100, 33, 4, 4, 64, false, masked});
  }
  tc({3, 70, 70, 4, 2, 64, true, true});
}

/* The 16-bit tensor-core kernels (attention_mma.cuh) of bf16 and fp16 plans: causal
   and not, ragged T, padding with a wholly masked row, grouped-query heads,
   cross-attention both ways, head sizes 32, 64, 96 (-> 128) and 128. */
TEST(AttentionEmulation, MmaKernels) {
  for (DType low : {DType::BF16, DType::F16}) {
    auto mma = [low](Case c) {
      c.low = low;
      run(c);
    };
    mma({1, 100, 100, 2, 2, 64, true});
    mma({1, 100, 100, 1, 1, 64, false});
    mma({1, 70, 70, 2, 2, 128, true});
    mma({2, 37, 37, 2, 1, 32, true});
    mma({2, 70, 70, 4, 2, 64, true});
    mma({1, 40, 40, 2, 2, 96, false});
    for (bool masked : {false, true}) {
      mma({3, 37, 130, 2, 2, 32, false, masked});
      mma({2, 100, 33, 4, 4, 64, false, masked});
    }
    mma({3, 70, 70, 4, 2, 64, true, true});
  }
}

/* biased_attention: the emulated kernels with a bias, segment ids and a scale in
   AttnDims, and the bias-gradient kernel, against the CPU's biased_attention(_grad). */
struct BiasCase {
  Case c;
  Shape bias;  // {}: none
  bool segments = false;
  double scale = 0;  // 0: 1/sqrt(Dh)
  double dropout = 0;  // the probabilities' dropout rate (keys random, site 3)
  int32_t part = -1;   // >= 0: a part's key [2, B, 2] (a rank's heads, contract/dropout_math.h)
};

template <typename T> void runBiasCase(const BiasCase &bc) {
  const Case &c = bc.c;
  SCOPED_TRACE(describe(c) + (bc.segments ? ", segments" : "") + ", bias rank " + std::to_string(bc.bias.size()) +
               ", dropout " + std::to_string(bc.dropout));
  attn::AttnDims d = dimsOf(c);
  if (bc.scale != 0) d.scale = bc.scale;
  Buf q = randn({c.B, c.Tq, c.H * c.Dh}, c.dtype), k = randn({c.B, c.Tk, c.Hkv * c.Dh}, c.dtype),
      v = randn({c.B, c.Tk, c.Hkv * c.Dh}, c.dtype), dy = randn({c.B, c.Tq, c.H * c.Dh}, c.dtype);
  Buf mask = c.masked ? paddingMask(c) : Buf(c.dtype, {}), bias = bc.bias.empty() ? Buf(c.dtype, {}) : randn(bc.bias, c.dtype, 2.0),
      seg(DType::I32, bc.segments ? Shape{c.B, c.Tq} : Shape{});
  if (!c.masked) mask.set(0, 1.0);
  if (bc.segments)  // documents of 23 tokens, so they straddle the 64-key tiles
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.Tq; ++t) seg.set(b * c.Tq + t, (double)(t / 23 + 5 * b));
  if (!bc.bias.empty()) {
    d.bias = bias.data();
    for (size_t i = 0; i < bc.bias.size(); ++i) d.biasDims[4 - bc.bias.size() + i] = bc.bias[i];
  }
  if (bc.segments) d.seg = static_cast<const int32_t *>(seg.data());
  Buf key = bc.dropout > 0 ? randIds(bc.part >= 0 ? Shape{2, c.B, 2} : Shape{c.B, 2}, 1 << 30) : Buf(DType::I32, {});
  if (bc.part >= 0)
    for (int64_t i = 2 * c.B; i < 4 * c.B; ++i) key.set(i, (double)bc.part);
  if (bc.dropout > 0) {
    d.dropKey = static_cast<const int32_t *>(key.data()), d.dropSite = 3, d.dropParts = bc.part >= 0;
    d.dropThreshold = lmc::dropoutThreshold(bc.dropout), d.dropScale = 1.0 / (1.0 - bc.dropout);
  }
  Attrs a = attrs({{"num_heads", c.H}, {"num_kv_heads", c.Hkv}, {"causal", c.causal}, {"scale", bc.scale},
                   {"dropout", bc.dropout}, {"site", int64_t{3}}});
  auto cpuY = runKernel("biased_attention", {q, k, v, mask, bias, seg, key}, {q.type}, a);
  auto cpuGrad = runKernel("biased_attention_grad", {q, k, v, mask, bias, seg, key, dy},
                           {q.type, k.type, v.type, bias.type}, a);
  Buf y(c.dtype, q.type.shape), lse(c.dtype, {c.B, c.H, c.Tq}), delta(c.dtype, {c.B, c.H, c.Tq});
  Buf dq(c.dtype, q.type.shape), dk(c.dtype, k.type.shape), dv(c.dtype, v.type.shape), db(c.dtype, bias.type.shape);
  const T *m = c.masked ? ptr<T>(mask) : nullptr;
  byHeadSize(c.Dh, [&](auto dm) {
    constexpr int DMAX = decltype(dm)::value;
    attn::launchForward<T, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(y),
                                 ptr<T>(lse), (const int32_t *)nullptr);
    attn::launchBackward<T, DMAX>(EmuLauncher{}, d, c.causal, ptr<T>(q), ptr<T>(k), ptr<T>(v), m, ptr<T>(dy),
                                  ptr<T>(y), ptr<T>(lse), ptr<T>(delta), ptr<T>(dq), ptr<T>(dk), ptr<T>(dv),
                                  ptr<T>(db));
  });
  expectClose(y, cpuY[0], "y");
  expectClose(dq, cpuGrad[0], "dq");
  expectClose(dk, cpuGrad[1], "dk");
  expectClose(dv, cpuGrad[2], "dv");
  if (!bc.bias.empty()) expectClose(db, cpuGrad[3], "dbias");
}

void runBias(const BiasCase &bc) {
  if (bc.c.dtype == DType::F64)
    runBiasCase<double>(bc);
  else
    runBiasCase<float>(bc);
}

TEST(AttentionEmulation, BiasAndSegments) {
  // T5: [1, H, T, T], no scaling, encoder and decoder; across tiles.
  runBias({{2, 70, 70, 2, 2, 16, false}, {1, 2, 70, 70}, false, 1.0});
  runBias({{2, 70, 70, 2, 2, 16, true}, {1, 2, 70, 70}, false, 1.0});
  // ALiBi: [1, H, 1, Tk], causal, grouped heads, 64-column heads.
  runBias({{2, 65, 65, 4, 2, 64, true}, {1, 4, 1, 65}});
  // Packed rows: segments alone, with a mask, with a bias; 96-column heads; f64.
  runBias({{2, 100, 100, 2, 2, 16, true}, {}, true});
  runBias({{3, 70, 70, 2, 1, 96, false, true}, {}, true});
  runBias({{2, 70, 70, 2, 2, 16, false, true}, {2, 1, 70, 70}, true, 0.3});
  runBias({{2, 19, 19, 2, 2, 16, true, true, DType::F64}, {1, 2, 19, 19}, true});
  // Cross-attention with a bias of rank 2.
  runBias({{2, 37, 130, 2, 2, 16, false, true}, {37, 130}});
}

/* Attention dropout: the emulated kernels drop the probabilities the CPU kernels drop
   (dropout_math.h on (key row, site, (h Tq + i) Tk + j)), forward and backward, with a
   bias and its gradient, segments, causal, grouped heads, cross-attention; f64. */
TEST(AttentionEmulation, Dropout) {
  runBias({{2, 70, 70, 2, 2, 16, false}, {1, 2, 70, 70}, false, 1.0, 0.1});
  runBias({{2, 70, 70, 4, 2, 16, true, true}, {}, false, 0, 0.5});
  runBias({{2, 100, 100, 2, 2, 16, true}, {1, 2, 1, 100}, true, 0, 0.3});
  runBias({{2, 37, 130, 2, 2, 16, false, true}, {}, false, 0, 0.2});
  runBias({{2, 19, 19, 2, 2, 16, true, true, DType::F64}, {1, 2, 19, 19}, true, 0, 0.4});
  runBias({{2, 70, 70, 2, 2, 16, true}, {1, 2, 70, 70}, false, 0, 0.3, 1});  // part 1's heads
}

/* cached_attention: new queries at positions offset .. offset + C - 1 over a cache
   longer than a tile, grouped heads too; the CUDA-core and the bf16 tensor-core forward. */
TEST(AttentionEmulation, CachedAttention) {
  for (int64_t C : {1, 5})
    for (int64_t kv : {4, 2})
      for (int32_t offset : {0, 37, (int32_t)(70 - C)}) {
        SCOPED_TRACE("C " + std::to_string(C) + ", kv " + std::to_string(kv) + ", offset " + std::to_string(offset));
        Case c{1, C, 70, 4, kv, 16, true};
        Buf q = randn({1, C, 64}, DType::F32), k = randn({1, 70, 16 * kv}, DType::F32),
            v = randn({1, 70, 16 * kv}, DType::F32), off(DType::I32, {});
        off.set(0, offset);
        Attrs a = attrs({{"num_heads", int64_t{4}}, {"num_kv_heads", kv}});
        std::vector<Buf> cpu = runKernel("cached_attention", {q, k, v, off}, {q.type}, a);
        Buf y(DType::F32, q.type.shape);
        attn::launchForward<float, 32>(EmuLauncher{}, dimsOf(c), true, ptr<float>(q), ptr<float>(k), ptr<float>(v),
                                       (const float *)nullptr, ptr<float>(y), (float *)nullptr,
                                       static_cast<const int32_t *>(off.data()));
        expectClose(y, cpu[0], "y");
        // The 16-bit tensor-core forward of bf16 / fp16 plans, at bf16's tolerance.
        Buf y16(DType::F32, q.type.shape);
        attn::launchForwardMma<lmc::bf16, 32>(EmuLauncher{}, dimsOf(c), true, ptr<float>(q), ptr<float>(k),
                                              ptr<float>(v), (const float *)nullptr, ptr<float>(y16), (float *)nullptr,
                                              static_cast<const int32_t *>(off.data()));
        c.low = DType::BF16;
        expectClose(y16, cpu[0], "y (bf16 mma)", tolOf(c));
      }
}

}  // namespace
}  // namespace lmrt::kernels::test
