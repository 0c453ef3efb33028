/* Implements: lm.attention, lm.masked_attention and their grads on the GPU as
   flash-attention kernels of our own: q is [B, Tq, H*Dh] (head h in columns h*Dh..),
   k and v [B, Tk, Hkv*Dh] (query head h reads key/value head h / (H / Hkv); Tk != Tq
   is cross-attention), read in place. Nothing of size Tq x Tk is stored, and key tiles
   wholly above the diagonal of a causal mask are never visited. The key padding mask
   [B, Tk] (masked_attention; nonzero: attend) is the CPU kernels' math: masked keys are
   skipped (probability exactly 0), key tiles with no unmasked key are not loaded, and a
   query row with no visible key outputs 0 and passes no gradient.
   Forward: a block per (64 queries, batch*head); each thread owns one query,
   walks the key/value tiles staged in shared memory with an online softmax
   (running max and sum, the output rescaled as the max grows) and writes its
   row and, for the backward, the row's logsumexp.
   Backward (flash-attention 2): the forward is recomputed into scratch (the op
   saves no statistics), delta_i = dy_i . o_i, then one kernel owns key rows
   (dk, dv summed over the queries that see them, of every query head of the group) and one owns query rows (dq):
   no atomics, so the same bits every run. Head sizes up to 128. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

/* C: the row stride of q, dy, dq (H*Dh); Ck: that of k, v, dk, dv (Hkv*Dh). Query
   head h reads key/value head h / (H / Hkv) (grouped-query attention). */
struct AttnDims {
  int64_t B, T, C, H, Dh, Ck, Hkv;  // T: queries per batch row
  int64_t Tk;  // keys per batch row: Tk (T but for cross-attention), or the cache's W for cached_attention
  double scale;
  __host__ __device__ int64_t group() const { return H / Hkv; }
  /* Offsets of the first column of query head h and of its key/value head, batch b. */
  __host__ __device__ int64_t qBase(int64_t b, int64_t h) const { return b * T * C + h * Dh; }
  __host__ __device__ int64_t kvBase(int64_t b, int64_t h) const { return b * Tk * Ck + (h / group()) * Dh; }
};

/* True when key j of batch row b is padding (mask, when there is one, is [B, Tk]). */
template <typename T>
__device__ __forceinline__ bool keyMasked(const T *mask, const AttnDims &d, int64_t b, int64_t j) {
  return mask && mask[b * d.Tk + j] == T(0);
}

/* True, in every thread of the block, when some key of [k0, k0 + nk) of batch row b is
   not masked; a barrier (when there is a mask), so every thread must call it. */
template <typename T>
__device__ __forceinline__ bool tileVisible(const T *mask, const AttnDims &d, int64_t b, int64_t k0, int64_t nk) {
  if (!mask) return true;
  int any = 0;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) any |= mask[b * d.Tk + k0 + j] != T(0);
  return __syncthreads_or(any) != 0;
}

/* Keys of the tile [k0, k0 + nk) that query i may see. */
__device__ __forceinline__ int64_t visible(bool causal, int64_t i, int64_t k0, int64_t nk) {
  return causal ? max((int64_t)0, min(nk, i - k0 + 1)) : nk;
}

template <typename T, int DMAX> __device__ __forceinline__ T dot(const T *a, const T *b, int Dh) {
  T s = 0;
#pragma unroll
  for (int e = 0; e < DMAX; ++e)
    if (e < Dh) s += a[e] * b[e];
  return s;
}

/* rows [r0, r0 + n) of one head of x (row stride `stride`) into s (row stride ld); zero beyond n. */
template <typename T>
__device__ void loadRows(const T *x, int64_t r0, int64_t n, int64_t rows, const AttnDims &d, int64_t stride, T *s,
                         int ld) {
  for (int64_t idx = threadIdx.x; idx < rows * d.Dh; idx += blockDim.x) {
    const int64_t r = idx / d.Dh, e = idx - r * d.Dh;
    s[r * ld + e] = r < n ? x[(r0 + r) * stride + e] : T(0);
  }
}

template <typename T>
__device__ void storeRows(T *x, int64_t r0, int64_t n, const AttnDims &d, int64_t stride, const T *s, int ld) {
  for (int64_t idx = threadIdx.x; idx < n * d.Dh; idx += blockDim.x) {
    const int64_t r = idx / d.Dh, e = idx - r * d.Dh;
    x[(r0 + r) * stride + e] = s[r * ld + e];
  }
}

template <int DMAX> struct Tile {
  static constexpr int kQ = 64;                    // forward queries per block
  static constexpr int kK = DMAX <= 64 ? 64 : 32;  // keys per shared-memory tile
  static constexpr int kBwdQ = 32;                 // queries per tile in the backward
};

/* With `offset` (cached_attention, read on the device), query row i sits at position
   *offset + i of a cache of Tk keys; an offset the cache cannot hold (which the
   program boundary refuses) makes the rows NaN instead of reading out of bounds. */
template <typename T, int DMAX>
__global__ void attnForward(const T *q, const T *k, const T *v, const T *mask, T *y, T *lse, AttnDims d, bool causal,
                            const int32_t *offset = nullptr) {
  constexpr int BQ = Tile<DMAX>::kQ, BK = Tile<DMAX>::kK, LQ = DMAX + 1;
  extern __shared__ unsigned char smemRaw[];
  T *Qs = reinterpret_cast<T *>(smemRaw), *Ks = Qs + BQ * LQ, *Vs = Ks + BK * DMAX;
  const int64_t bh = blockIdx.y, base = d.qBase(bh / d.H, bh % d.H), kvBase = d.kvBase(bh / d.H, bh % d.H);
  const int64_t q0 = blockIdx.x * (int64_t)BQ, i = q0 + threadIdx.x, nq = min((int64_t)BQ, d.T - q0);
  const int Dh = (int)d.Dh;
  const T scale = (T)d.scale;
  loadRows(q + base, q0, nq, BQ, d, d.C, Qs, LQ);
  T o[DMAX];
#pragma unroll
  for (int e = 0; e < DMAX; ++e) o[e] = 0;
  T m = -INFINITY, l = 0;
  const int64_t pos0 = offset ? (int64_t)*offset : 0;
  const bool bad = pos0 < 0 || pos0 > d.Tk - d.T;
  const int64_t kEnd = bad ? 0 : causal ? min(d.Tk, pos0 + q0 + BQ) : d.Tk;
  const int64_t b = bh / d.H;
  for (int64_t k0 = 0; k0 < kEnd; k0 += BK) {
    const int64_t nk = min((int64_t)BK, kEnd - k0);
    __syncthreads();
    if (!tileVisible(mask, d, b, k0, nk)) continue;  // padding: contributes nothing
    loadRows(k + kvBase, k0, nk, nk, d, d.Ck, Ks, DMAX);
    loadRows(v + kvBase, k0, nk, nk, d, d.Ck, Vs, DMAX);
    __syncthreads();
    if (i >= d.T) continue;
    const int64_t vis = visible(causal, pos0 + i, k0, nk);
    for (int64_t j = 0; j < vis; ++j) {
      if (keyMasked(mask, d, b, k0 + j)) continue;
      const T s = dot<T, DMAX>(Qs + threadIdx.x * LQ, Ks + j * DMAX, Dh) * scale;
      const T mNew = max(m, s), corr = lmc::exp(m - mNew), p = lmc::exp(s - mNew);
      l = l * corr + p;
#pragma unroll
      for (int e = 0; e < DMAX; ++e)
        if (e < Dh) o[e] = o[e] * corr + p * Vs[j * DMAX + e];
      m = mNew;
    }
  }
  __syncthreads();
  if (i < d.T) {
    // l = 0: no visible key (all masked); the row is 0 (o stayed 0).
    const T inv = l > T(0) ? T(1) / l : T(0);
#pragma unroll
    for (int e = 0; e < DMAX; ++e)
      if (e < Dh) Qs[threadIdx.x * LQ + e] = o[e] * inv;
    if (lse) lse[bh * d.T + i] = l > T(0) ? m + log(l) : T(0);
  }
  __syncthreads();
  storeRows(y + base, q0, nq, d, d.C, Qs, LQ);
}

/* delta[bh, i] = dy_i . o_i over the head's columns. */
template <typename T> __global__ void attnDelta(const T *dy, const T *o, T *delta, AttnDims d) {
  const int64_t n = d.B * d.H * d.T;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < n; r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t bh = r / d.T, i = r - bh * d.T;
    const int64_t off = (bh / d.H) * d.T * d.C + (bh % d.H) * d.Dh + i * d.C;
    T s = 0;
    for (int64_t e = 0; e < d.Dh; ++e) s += dy[off + e] * o[off + e];
    delta[r] = s;
  }
}

/* dk, dv of the key rows [k0, k0 + BK) of key/value head g: one thread per key,
   summing over every query head of the group in head order. */
template <typename T, int DMAX>
__global__ void attnBackwardKV(const T *q, const T *k, const T *v, const T *mask, const T *dy, const T *lse,
                               const T *delta, T *dk, T *dv, AttnDims d, bool causal) {
  constexpr int BK = Tile<DMAX>::kK, BQ = Tile<DMAX>::kBwdQ, LK = DMAX + 1;
  extern __shared__ unsigned char smemRaw[];
  T *Kself = reinterpret_cast<T *>(smemRaw), *Vself = Kself + BK * LK, *Qs = Vself + BK * LK, *Ds = Qs + BQ * DMAX,
    *Ls = Ds + BQ * DMAX, *Dl = Ls + BQ;
  const int64_t bg = blockIdx.y, b = bg / d.Hkv, g = bg % d.Hkv;
  const int64_t kvBase = d.kvBase(b, g * d.group());
  const int64_t k0 = blockIdx.x * (int64_t)BK, j = k0 + threadIdx.x, nk = min((int64_t)BK, d.Tk - k0);
  // A masked key gets dk = dv = 0; a block of masked keys does no work.
  const bool live = tileVisible(mask, d, b, k0, nk), mine = j < d.Tk && !keyMasked(mask, d, b, j);
  const int Dh = (int)d.Dh;
  const T scale = (T)d.scale;
  loadRows(k + kvBase, k0, nk, BK, d, d.Ck, Kself, LK);
  loadRows(v + kvBase, k0, nk, BK, d, d.Ck, Vself, LK);
  T dkr[DMAX], dvr[DMAX];
#pragma unroll
  for (int e = 0; e < DMAX; ++e) dkr[e] = 0, dvr[e] = 0;
  for (int64_t h = g * d.group(); live && h < (g + 1) * d.group(); ++h) {
    const int64_t base = d.qBase(b, h), bh = b * d.H + h;
    for (int64_t q0 = causal ? k0 : 0; q0 < d.T; q0 += BQ) {
      const int64_t nq = min((int64_t)BQ, d.T - q0);
      __syncthreads();
      loadRows(q + base, q0, nq, nq, d, d.C, Qs, DMAX);
      loadRows(dy + base, q0, nq, nq, d, d.C, Ds, DMAX);
      for (int64_t r = threadIdx.x; r < nq; r += blockDim.x)
        Ls[r] = lse[bh * d.T + q0 + r], Dl[r] = delta[bh * d.T + q0 + r];
      __syncthreads();
      if (!mine) continue;
      for (int64_t r = 0; r < nq; ++r) {
        if (causal && q0 + r < j) continue;
        const T s = dot<T, DMAX>(Qs + r * DMAX, Kself + threadIdx.x * LK, Dh) * scale;
        const T p = lmc::exp(s - Ls[r]);
        const T dp = dot<T, DMAX>(Ds + r * DMAX, Vself + threadIdx.x * LK, Dh);
        const T ds = p * (dp - Dl[r]) * scale;
#pragma unroll
        for (int e = 0; e < DMAX; ++e)
          if (e < Dh) dvr[e] += p * Ds[r * DMAX + e], dkr[e] += ds * Qs[r * DMAX + e];
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int e = 0; e < DMAX; ++e)
    if (e < Dh) Kself[threadIdx.x * LK + e] = dkr[e], Vself[threadIdx.x * LK + e] = dvr[e];
  __syncthreads();
  storeRows(dk + kvBase, k0, nk, d, d.Ck, Kself, LK);
  storeRows(dv + kvBase, k0, nk, d, d.Ck, Vself, LK);
}

/* dq of the query rows [q0, q0 + BQ): one thread per query. */
template <typename T, int DMAX>
__global__ void attnBackwardQ(const T *q, const T *k, const T *v, const T *mask, const T *dy, const T *lse,
                              const T *delta, T *dq, AttnDims d, bool causal) {
  constexpr int BQ = Tile<DMAX>::kBwdQ, BK = Tile<DMAX>::kK, LQ = DMAX + 1;
  extern __shared__ unsigned char smemRaw[];
  T *Qself = reinterpret_cast<T *>(smemRaw), *Dself = Qself + BQ * LQ, *Ks = Dself + BQ * LQ, *Vs = Ks + BK * DMAX;
  const int64_t bh = blockIdx.y, base = d.qBase(bh / d.H, bh % d.H), kvBase = d.kvBase(bh / d.H, bh % d.H);
  const int64_t q0 = blockIdx.x * (int64_t)BQ, i = q0 + threadIdx.x, nq = min((int64_t)BQ, d.T - q0);
  const int Dh = (int)d.Dh;
  const T scale = (T)d.scale;
  loadRows(q + base, q0, nq, BQ, d, d.C, Qself, LQ);
  loadRows(dy + base, q0, nq, BQ, d, d.C, Dself, LQ);
  const T L = i < d.T ? lse[bh * d.T + i] : T(0), Dl = i < d.T ? delta[bh * d.T + i] : T(0);
  T dqr[DMAX];
#pragma unroll
  for (int e = 0; e < DMAX; ++e) dqr[e] = 0;
  const int64_t kEnd = causal ? min(d.T, q0 + BQ) : d.Tk, b = bh / d.H;
  for (int64_t k0 = 0; k0 < kEnd; k0 += BK) {
    const int64_t nk = min((int64_t)BK, kEnd - k0);
    __syncthreads();
    if (!tileVisible(mask, d, b, k0, nk)) continue;
    loadRows(k + kvBase, k0, nk, nk, d, d.Ck, Ks, DMAX);
    loadRows(v + kvBase, k0, nk, nk, d, d.Ck, Vs, DMAX);
    __syncthreads();
    if (i >= d.T) continue;
    const int64_t vis = visible(causal, i, k0, nk);
    for (int64_t j = 0; j < vis; ++j) {
      if (keyMasked(mask, d, b, k0 + j)) continue;
      const T s = dot<T, DMAX>(Qself + threadIdx.x * LQ, Ks + j * DMAX, Dh) * scale;
      const T p = lmc::exp(s - L);
      const T dp = dot<T, DMAX>(Dself + threadIdx.x * LQ, Vs + j * DMAX, Dh);
      const T ds = p * (dp - Dl) * scale;
#pragma unroll
      for (int e = 0; e < DMAX; ++e)
        if (e < Dh) dqr[e] += ds * Ks[j * DMAX + e];
    }
  }
  __syncthreads();
#pragma unroll
  for (int e = 0; e < DMAX; ++e)
    if (e < Dh) Qself[threadIdx.x * LQ + e] = dqr[e];
  __syncthreads();
  storeRows(dq + base, q0, nq, d, d.C, Qself, LQ);
}

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

/* Launches `kernel` with `smem` bytes of dynamic shared memory, opting in above 48 KiB. */
template <typename K, typename... Args>
void launch(K kernel, dim3 grid, int threads, size_t smem, cudaStream_t stream, Args... args) {
  if (smem > 48 * 1024) {
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if ((size_t)optin < smem)
      fail("attention: the CUDA kernel needs %zu bytes of shared memory per block, the device allows %d", smem, optin);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  }
  kernel<<<grid, threads, smem, stream>>>(args...);
  CUDA_CHECK_LAUNCH();
}

/* Calls f(std::integral_constant<int, DMAX>) with the smallest DMAX >= Dh. */
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

template <typename T, int DMAX>
void forward(const OpCall &call, const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask,
             T *y, T *lse, const int32_t *offset = nullptr) {
  using Tl = Tile<DMAX>;
  dim3 grid((unsigned)((d.T + Tl::kQ - 1) / Tl::kQ), (unsigned)(d.B * d.H));
  size_t smem = (Tl::kQ * (DMAX + 1) + 2 * Tl::kK * DMAX) * sizeof(T);
  launch(attnForward<T, DMAX>, grid, Tl::kQ, smem, call.stream, q, k, v, mask, y, lse, d, causal, offset);
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
    T *o = static_cast<T *>(call.scratch);
    // lse and delta start on a 256-byte boundary after o.
    size_t oBytes = ((size_t)call.in[0].numel() * sizeof(T) + 255) / 256 * 256;
    T *lse = reinterpret_cast<T *>(static_cast<char *>(call.scratch) + oBytes), *delta = lse + d.B * d.H * d.T;
    byHeadSize(d.Dh, [&](auto dm) {
      constexpr int DMAX = decltype(dm)::value;
      using Tl = Tile<DMAX>;
      forward<T, DMAX>(call, d, causal, q, k, v, mask, o, lse);
      attnDelta<T><<<gridFor(d.B * d.H * d.T), kThreads, 0, call.stream>>>(dy, o, delta, d);
      CUDA_CHECK_LAUNCH();
      dim3 gk((unsigned)((d.Tk + Tl::kK - 1) / Tl::kK), (unsigned)(d.B * d.Hkv));
      size_t smemKV = (2 * Tl::kK * (DMAX + 1) + 2 * Tl::kBwdQ * DMAX + 2 * Tl::kBwdQ) * sizeof(T);
      launch(attnBackwardKV<T, DMAX>, gk, Tl::kK, smemKV, call.stream, q, k, v, mask, dy, (const T *)lse,
             (const T *)delta, call.out[1].as<T>(), call.out[2].as<T>(), d, causal);
      dim3 gq((unsigned)((d.T + Tl::kBwdQ - 1) / Tl::kBwdQ), (unsigned)(d.B * d.H));
      size_t smemQ = (2 * Tl::kBwdQ * (DMAX + 1) + 2 * Tl::kK * DMAX) * sizeof(T);
      launch(attnBackwardQ<T, DMAX>, gq, Tl::kBwdQ, smemQ, call.stream, q, k, v, mask, dy, (const T *)lse,
             (const T *)delta, call.out[0].as<T>(), d, causal);
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
      constexpr int DMAX = decltype(dm)::value;
      using Tl = Tile<DMAX>;
      attnDelta<T><<<gridFor(d.B * d.H * d.T), kThreads, 0, call.stream>>>(dy, y, delta, d);
      CUDA_CHECK_LAUNCH();
      dim3 gk((unsigned)((d.Tk + Tl::kK - 1) / Tl::kK), (unsigned)(d.B * d.Hkv));
      size_t smemKV = (2 * Tl::kK * (DMAX + 1) + 2 * Tl::kBwdQ * DMAX + 2 * Tl::kBwdQ) * sizeof(T);
      launch(attnBackwardKV<T, DMAX>, gk, Tl::kK, smemKV, call.stream, q, k, v, mask, dy, lse, (const T *)delta,
             call.out[1].as<T>(), call.out[2].as<T>(), d, causal);
      dim3 gq((unsigned)((d.T + Tl::kBwdQ - 1) / Tl::kBwdQ), (unsigned)(d.B * d.H));
      size_t smemQ = (2 * Tl::kBwdQ * (DMAX + 1) + 2 * Tl::kK * DMAX) * sizeof(T);
      launch(attnBackwardQ<T, DMAX>, gq, Tl::kBwdQ, smemQ, call.stream, q, k, v, mask, dy, lse, (const T *)delta,
             call.out[0].as<T>(), d, causal);
    });
  });
}
void runMaskedAttentionGrad(const OpCall &call) { runAttentionGradMaybeMasked(call, true); }

}  // namespace

void addAttentionKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"attention", runAttention, noScratch});
  k.push_back({"attention_grad", runAttentionGrad, attentionGradScratch});
  k.push_back({"cached_attention", runCachedAttention, noScratch});
  k.push_back({"masked_attention", runMaskedAttention, noScratch});
  k.push_back({"masked_attention_grad", runMaskedAttentionGrad, attentionGradScratch});
  k.push_back({"attention_stats", runAttentionStats, noScratch});
  k.push_back({"attention_grad_stats", runAttentionGradStats, attentionGradStatsScratch});
}

}  // namespace lmrt::cuda::detail
