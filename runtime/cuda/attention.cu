/* Implements: lm.attention, lm.masked_attention, lm.cached_attention, attention_stats
   and their grads on the GPU: the host side of the flash-attention kernels of
   runtime/cuda/attention_kernels.cuh (their design is described there). The key
   padding mask [B, Tk] (masked_attention; nonzero: attend) is the CPU kernels' math:
   masked keys are skipped (probability exactly 0), key tiles with no unmasked key are
   not loaded, and a query row with no visible key outputs 0 and passes no gradient.
   biased_attention (q, k, v, mask, bias, segments, key; a rank-0 operand is none) runs
   the same kernels with the bias, the segments, its scale and its probability
   dropout in AttnDims, and its grad one more kernel for the bias's gradient. Head
   sizes up to 128. In a bf16 or fp16 plan, every call without a bias, segments or
   dropout (biased_attention's too) runs the 16-bit tensor-core kernels of
   attention_mma.cuh instead when LMRT_CUDA_ATTENTION=tensor-cores (opt-in until a GPU has run them). */
#include "base/env.h"
#include "contract/dropout_math.h"
#include "runtime/cuda/attention_kernels.cuh"
#include "runtime/cuda/attention_mma.cuh"
#include "runtime/cuda/attention_tc.cuh"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

using attn::AttnDims;

AttnDims dimsOf(const OpCall &call) {
  const Shape &s = call.in[0].shape();
  AttnDims d;
  d.B = s[0], d.T = s[1], d.C = s[2], d.H = call.attrs.getInt("num_heads");
  d.Dh = d.C / d.H;
  d.Hkv = call.attrs.getInt("num_kv_heads");
  if (d.Hkv == 0) d.Hkv = d.H;
  d.Ck = call.in[1].shape()[2];
  d.Tk = call.in[1].shape()[1];
  d.scale = 1.0 / std::sqrt((double)d.Dh);
  return d;
}

/* A launcher for attn::launchForward / launchBackward on `stream`: `smem` bytes of
   dynamic shared memory, opting in above 48 KiB. */
struct StreamLauncher {
  cudaStream_t stream;
  template <typename K, typename... Args>
  void operator()(K kernel, attn::Grid grid, int threads, size_t smem, Args... args) const {
    if (smem > 48 * 1024) {
      int dev = 0, optin = 0;
      CUDA_CHECK(cudaGetDevice(&dev));
      CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
      if ((size_t)optin < smem)
        fail("attention: the CUDA kernel needs %zu bytes of shared memory per block, the device allows %d", smem,
             optin);
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    }
    kernel<<<dim3(grid.x, grid.y), threads, smem, stream>>>(args...);
    CUDA_CHECK_LAUNCH();
  }
};

/* Calls f(std::integral_constant<int, DMAX>) with the smallest DMAX >= Dh. */
/* The attention backward's scratch: the recomputed output o, then (from a
   256-byte boundary) the rows' logsumexp and delta, B * H * T each. */
template <typename T> struct GradScratch {
  T *o, *lse, *delta;
};
template <typename T, typename Dims> GradScratch<T> gradScratch(const OpCall &call, const Dims &d) {
  T *o = static_cast<T *>(call.scratch);
  size_t oBytes = ((size_t)call.in[0].numel() * sizeof(T) + 255) / 256 * 256;
  T *lse = reinterpret_cast<T *>(static_cast<char *>(call.scratch) + oBytes);
  return {o, lse, lse + d.B * d.H * d.T};
}

template <typename F> void byHeadSize(int64_t Dh, F &&f) {
  if (Dh <= 32)
    f(std::integral_constant<int, 32>{});
  else if (Dh <= 64)
    f(std::integral_constant<int, 64>{});
  else if (Dh <= 128)
    f(std::integral_constant<int, 128>{});
  else
    fail("attention: head size %lld is more than the CUDA kernel's 128", (long long)Dh);
}

/* The TF32 tensor-core kernels (attention_tc.cuh) for f32 heads of at most 64 columns,
   in a session with TF32 GEMMs, only when LMRT_CUDA_ATTENTION=tensor-cores: on an H200
   they are slower than the CUDA-core kernels today (GPT-2 124M b8 x s1024, TF32: 26.1
   and 54.8 ms a step for the forward and backward against 12.1 and 37.2; docs/runtime.md
   §7), so they stay opt-in until they are tuned. */
/* LMRT_CUDA_ATTENTION: unset or "cuda-cores" (the default kernels), or "tensor-cores".
   Read at each launch, not once: the GPU test switches it between cases. */
bool tensorCoresAsked() {
  return envChoice("LMRT_CUDA_ATTENTION", {"cuda-cores", "tensor-cores"}) == "tensor-cores";
}

template <typename T, int DMAX> bool useTensorCores(const OpCall &call) {
  if constexpr (std::is_same_v<T, float> && DMAX <= 64) {
    return call.gemm.tf32() && tensorCoresAsked();
  } else {
    return false;
  }
}

/* The 16-bit tensor-core kernels (attention_mma.cuh) for the f32 attention of a bf16
   or fp16 plan (OpCall::lowPrecision), its operands rounded to the plan's type, when
   LMRT_CUDA_ATTENTION=tensor-cores. Opt-in until a GPU has run them: so far they passed
   only the CPU emulation (test/Unit/cuda_emu), and a kernel never executed on the
   hardware does not become the default (docs/runtime.md §7). They know no bias,
   segments or dropout (biased_attention with any of them keeps the CUDA-core kernels). */
bool useMma(const OpCall &call, const AttnDims &d) {
  if (call.lowPrecision != DType::BF16 && call.lowPrecision != DType::F16) return false;
  if (d.bias || d.seg || d.dropKey) return false;
  return tensorCoresAsked();
}

/* f(lmc::bf16{}) or f(lmc::f16{}): the plan's 16-bit type. */
template <typename F> void byLowPrecision(DType t, F &&f) {
  if (t == DType::BF16)
    f(lmc::bf16{});
  else
    f(lmc::f16{});
}

template <typename T, int DMAX>
void forward(const OpCall &call, const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask,
             T *y, T *lse, const int32_t *offset = nullptr) {
  // The tensor-core kernels know no bias, segments or dropout.
  if constexpr (std::is_same_v<T, float> && DMAX <= 64)
    if (!d.bias && !d.seg && !d.dropKey && useTensorCores<T, DMAX>(call))
      return attn::launchForwardTc<DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, y, lse, offset);
  if constexpr (std::is_same_v<T, float>)
    if (useMma(call, d))
      return byLowPrecision(call.lowPrecision, [&](auto h) {
        attn::launchForwardMma<decltype(h), DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, y, lse,
                                                  offset);
      });
  attn::launchForward<T, DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, y, lse, offset);
}

/* The backward from the forward's output o and row logsumexp lse. */
template <typename T, int DMAX>
void backward(const OpCall &call, const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask,
              const T *dy, const T *o, const T *lse, T *delta, T *dbias = nullptr) {
  T *dq = call.out[0].as<T>(), *dk = call.out[1].as<T>(), *dv = call.out[2].as<T>();
  if constexpr (std::is_same_v<T, float> && DMAX <= 64)
    if (!d.bias && !d.seg && !d.dropKey && useTensorCores<T, DMAX>(call))
      return attn::launchBackwardTc<DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, dy, o, lse, delta, dq,
                                          dk, dv);
  if constexpr (std::is_same_v<T, float>)
    if (useMma(call, d))
      return byLowPrecision(call.lowPrecision, [&](auto h) {
        attn::launchBackwardMma<decltype(h), DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, dy, o, lse,
                                                   delta, dq, dk, dv);
      });
  attn::launchBackward<T, DMAX>(StreamLauncher{call.stream}, d, causal, q, k, v, mask, dy, o, lse, delta, dq, dk, dv,
                                dbias);
}

/* attention (q, k, v) and masked_attention (q, k, v, mask). */
void runAttentionMaybeMasked(const OpCall &call, bool masked) {
  AttnDims d = dimsOf(call);
  const bool causal = call.attrs.getBool("causal");
  if (call.out[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("attention: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    byHeadSize(d.Dh, [&](auto dm) {
      forward<T, decltype(dm)::value>(call, d, causal, call.in[0].as<T>(), call.in[1].as<T>(), call.in[2].as<T>(),
                                      masked ? call.in[3].as<T>() : (const T *)nullptr, call.out[0].as<T>(),
                                      (T *)nullptr);
    });
  });
}
void runAttention(const OpCall &call) { runAttentionMaybeMasked(call, false); }
void runMaskedAttention(const OpCall &call) { runAttentionMaybeMasked(call, true); }

/* attention_stats (q, k, v) -> (y, lse [B, H, Tq]): the forward, keeping its row logsumexp. */
void runAttentionStats(const OpCall &call) {
  AttnDims d = dimsOf(call);
  const bool causal = call.attrs.getBool("causal");
  if (call.out[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("attention_stats: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    byHeadSize(d.Dh, [&](auto dm) {
      forward<T, decltype(dm)::value>(call, d, causal, call.in[0].as<T>(), call.in[1].as<T>(), call.in[2].as<T>(),
                                      (const T *)nullptr, call.out[0].as<T>(), call.out[1].as<T>());
    });
  });
}

/* cached_attention: q [B, C, H*Dh] at positions offset .. offset + C - 1 over the
   cache k, v [B, W, Hkv*Dh]: the causal forward with the query positions shifted. */
void runCachedAttention(const OpCall &call) {
  AttnDims d = dimsOf(call);
  if (call.out[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("cached_attention: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    byHeadSize(d.Dh, [&](auto dm) {
      forward<T, decltype(dm)::value>(call, d, true, call.in[0].as<T>(), call.in[1].as<T>(), call.in[2].as<T>(),
                                      (const T *)nullptr, call.out[0].as<T>(), (T *)nullptr,
                                      call.in[3].as<int32_t>());
    });
  });
}

/* Scratch of the backward: the recomputed output, then lse and delta per (b, h, i). */
size_t attentionGradScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &,
                            const kernels::Attrs &attrs) {
  const Shape &s = in[0].shape;
  const int64_t rows = s[0] * attrs.getInt("num_heads") * s[1];
  return (size_t)(in[0].numel() + 2 * rows) * dtypeSize(in[0].dtype) + 512;
}

/* attention_grad (q, k, v, dy) and masked_attention_grad (q, k, v, mask, dy). */
void runAttentionGradMaybeMasked(const OpCall &call, bool masked) {
  AttnDims d = dimsOf(call);
  const bool causal = call.attrs.getBool("causal");
  if (call.in[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("attention_grad: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>(),
            *mask = masked ? call.in[3].as<T>() : nullptr, *dy = call.in[masked ? 4 : 3].as<T>();
    const GradScratch<T> sc = gradScratch<T>(call, d);  // (no structured binding: lambdas capture it below)
    T *o = sc.o, *lse = sc.lse, *delta = sc.delta;
    byHeadSize(d.Dh, [&](auto dm) {
      constexpr int DMAX = decltype(dm)::value;
      forward<T, DMAX>(call, d, causal, q, k, v, mask, o, lse);
      backward<T, DMAX>(call, d, causal, q, k, v, mask, dy, o, lse, delta);
    });
  });
}
void runAttentionGrad(const OpCall &call) { runAttentionGradMaybeMasked(call, false); }

/* Scratch of attention_grad_stats: delta per (b, h, i). */
size_t attentionGradStatsScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &,
                                 const kernels::Attrs &attrs) {
  const Shape &s = in[0].shape;
  return (size_t)(s[0] * attrs.getInt("num_heads") * s[1]) * dtypeSize(in[0].dtype) + 256;
}

/* attention_grad_stats (q, k, v, y, lse, dy): attention_grad's kernels on the forward's
   saved output and row logsumexp, without the recomputing forward. */
void runAttentionGradStats(const OpCall &call) {
  AttnDims d = dimsOf(call);
  const bool causal = call.attrs.getBool("causal");
  if (call.in[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("attention_grad_stats: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>(), *y = call.in[3].as<T>(),
            *lse = call.in[4].as<T>(), *dy = call.in[5].as<T>(), *mask = nullptr;
    T *delta = static_cast<T *>(call.scratch);
    byHeadSize(d.Dh, [&](auto dm) {
      backward<T, decltype(dm)::value>(call, d, causal, q, k, v, mask, dy, y, lse, delta);
    });
  });
}
void runMaskedAttentionGrad(const OpCall &call) { runAttentionGradMaybeMasked(call, true); }

/* biased_attention's dims: its scale (0: 1/sqrt(Dh)), its bias (input 4) unless of rank
   0, as four dims aligned right on [B, H, T, Tk], its segments (input 5) unless of
   rank 0, and its dropout (keys: input 6) when the rate is > 0. */
AttnDims biasedDims(const OpCall &call) {
  AttnDims d = dimsOf(call);
  if (const double s = call.attrs.getFloat("scale"); s != 0) d.scale = s;
  const Shape &bias = call.in[4].shape();
  if (!bias.empty()) {
    d.bias = call.in[4].data;
    for (size_t i = 0; i < bias.size() && i < 4; ++i) d.biasDims[3 - i] = bias[bias.size() - 1 - i];
  }
  if (!call.in[5].shape().empty()) d.seg = call.in[5].as<int32_t>();
  if (const double p = call.attrs.getFloat("dropout"); p > 0) {
    d.dropKey = call.in[6].as<int32_t>();
    d.dropParts = call.in[6].shape().size() == 3;
    d.dropSite = call.attrs.getInt("site");
    d.dropThreshold = lmc::dropoutThreshold(p);
    d.dropScale = 1.0 / (1.0 - p);
  }
  return d;
}

void runBiasedAttention(const OpCall &call) {
  AttnDims d = biasedDims(call);
  const bool causal = call.attrs.getBool("causal");
  if (call.out[0].numel() == 0) return;
  if (d.B * d.H > 65535) fail("biased_attention: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
  const bool masked = !call.in[3].shape().empty();
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    byHeadSize(d.Dh, [&](auto dm) {
      forward<T, decltype(dm)::value>(call, d, causal, call.in[0].as<T>(), call.in[1].as<T>(), call.in[2].as<T>(),
                                      masked ? call.in[3].as<T>() : (const T *)nullptr, call.out[0].as<T>(),
                                      (T *)nullptr);
    });
  });
}

/* biased_attention_grad (q, k, v, mask, bias, segments, key, dy) -> dq, dk, dv, dbias: the
   forward recomputed into scratch (as attention_grad's), then the backward. */
void runBiasedAttentionGrad(const OpCall &call) {
  AttnDims d = biasedDims(call);
  const bool causal = call.attrs.getBool("causal");
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    T *dbias = call.out[3].as<T>();
    // A rank-0 bias shifts every score alike: its gradient is 0 (as that of no scores).
    if (!d.bias || call.in[0].numel() == 0)
      CUDA_CHECK(cudaMemsetAsync(dbias, 0, (size_t)call.out[3].numel() * sizeof(T), call.stream));
    if (call.in[0].numel() == 0) return;
    if (d.B * d.H > 65535)
      fail("biased_attention_grad: batch x heads %lld exceeds the CUDA grid", (long long)(d.B * d.H));
    const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>(),
            *mask = call.in[3].shape().empty() ? nullptr : call.in[3].as<T>(), *dy = call.in[7].as<T>();
    const GradScratch<T> sc = gradScratch<T>(call, d);  // (no structured binding: lambdas capture it below)
    T *o = sc.o, *lse = sc.lse, *delta = sc.delta;
    byHeadSize(d.Dh, [&](auto dm) {
      constexpr int DMAX = decltype(dm)::value;
      forward<T, DMAX>(call, d, causal, q, k, v, mask, o, lse);
      backward<T, DMAX>(call, d, causal, q, k, v, mask, dy, o, lse, delta, dbias);
    });
  });
}

/* The packed ops (q, k, v column blocks of one qkv; passes/PackAttention.cpp) have CPU
   kernels only: lmc forms them for `--target cpu` alone, so a plan for the GPU never holds
   them. One compiled otherwise is refused when the session sizes its scratch, before
   any step runs. */
[[noreturn]] void refusePacked(const char *op) {
  fail("%s: no CUDA kernel (the packed attention ops are CPU-only; lmc forms them only for --target cpu)", op);
}
size_t packedAttentionScratch(const std::vector<TensorType> &, const std::vector<TensorType> &, const kernels::Attrs &) {
  refusePacked("packed_attention");
}
size_t packedAttentionStatsScratch(const std::vector<TensorType> &, const std::vector<TensorType> &,
                                   const kernels::Attrs &) {
  refusePacked("packed_attention_stats");
}
size_t packedAttentionGradStatsScratch(const std::vector<TensorType> &, const std::vector<TensorType> &,
                                       const kernels::Attrs &) {
  refusePacked("packed_attention_grad_stats");
}
void runPackedAttention(const OpCall &) { refusePacked("packed_attention"); }
void runPackedAttentionStats(const OpCall &) { refusePacked("packed_attention_stats"); }
void runPackedAttentionGradStats(const OpCall &) { refusePacked("packed_attention_grad_stats"); }

}  // namespace

void addAttentionKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"attention", runAttention, noScratch});
  k.push_back({"attention_grad", runAttentionGrad, attentionGradScratch});
  k.push_back({"cached_attention", runCachedAttention, noScratch});
  k.push_back({"masked_attention", runMaskedAttention, noScratch});
  k.push_back({"masked_attention_grad", runMaskedAttentionGrad, attentionGradScratch});
  k.push_back({"attention_stats", runAttentionStats, noScratch});
  k.push_back({"attention_grad_stats", runAttentionGradStats, attentionGradStatsScratch});
  k.push_back({"biased_attention", runBiasedAttention, noScratch});
  k.push_back({"biased_attention_grad", runBiasedAttentionGrad, attentionGradScratch});
  k.push_back({"packed_attention", runPackedAttention, packedAttentionScratch});
  k.push_back({"packed_attention_stats", runPackedAttentionStats, packedAttentionStatsScratch});
  k.push_back({"packed_attention_grad_stats", runPackedAttentionGradStats, packedAttentionGradStatsScratch});
}

}  // namespace lmrt::cuda::detail
