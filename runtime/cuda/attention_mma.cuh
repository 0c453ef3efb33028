/* Implements: the 16-bit tensor-core attention (FlashAttention-2's structure) that
   runtime/cuda/attention.cu runs for the f32 attention of bf16 and fp16 plans:
   attention, masked_attention, cached_attention, attention_stats and their grads
   (no bias, segments or dropout: those keep the kernels of attention_kernels.cuh).
   q, k, v, dy stay f32 in memory (docs/mixed-precision.md keeps attention f32); a
   tile is rounded to the plan's 16-bit type (bf16 or f16, round to nearest even) as
   it enters shared memory, every product is one `mma.sync.aligned.m16n8k16` with
   fp32 accumulation, and the softmax works in fp32 on the accumulator registers.
   A block is 4 warps over 64 rows (queries; keys in the key-gradient kernel), a warp
   owning 16; tiles of 64 keys (queries). The math, the masks and the tile order are
   those of the CUDA-core kernels: the forward's online softmax keeps each row's
   running maximum and sum (the sum a per-lane partial, added across the row's four
   lanes at the end, in a fixed order), the probabilities go from the score
   accumulators straight into the A operand of P V (the m16n8 accumulator layout of
   two adjacent key tiles is the m16n8k16 A layout); the backward is one kernel over
   key tiles (dK, dV, every query head of the group in order) and one over query
   tiles (dQ): no atomics, the same bits every run. P is rounded to 16 bits for P V
   and dS for dS K and dS^T Q, as FlashAttention does; the row sums and lse use the
   fp32 probabilities.
   Shared memory holds 16-bit tiles row-major (a row padded by 8 elements: the 8
   rows x 4 words a fragment load touches fall in 32 different banks), and the
   operands a product reads along its rows transposed (V^T for P V, Q^T and dY^T for
   the key-gradient kernel, K^T for dQ), so every fragment element pair is one 32-bit
   load. Under test/Unit/cuda_emu/emulation.h, mma16816 and the row reductions'
   __shfl_xor_sync are the emulator's warp exchanges, so these kernels run there
   unchanged. */
#pragma once
#include "runtime/cuda/attention_kernels.cuh"

namespace lmrt::cuda::attn {

/* The 16-bit operand type of a plan: bf16 or f16 (the host's lmc::bf16 / lmc::f16
   bit patterns under emulation, CUDA's types on a device). */
template <typename H> __device__ __forceinline__ uint32_t bits16(float x) {
#ifdef LMRT_CUDA_EMULATION
  return lmc::fromFloat<H>(x).bits;
#else
  if constexpr (std::is_same_v<H, lmc::bf16>)
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  else
    return __half_as_ushort(__float2half_rn(x));
#endif
}

/* Two 16-bit values as one register: lo in the low half (the lower column). */
template <typename H> __device__ __forceinline__ uint32_t pack16(float lo, float hi) {
  return bits16<H>(lo) | (bits16<H>(hi) << 16);
}

/* d = a b + c, one m16n8k16 product of a warp (fp32 accumulation). Lane l, g = l / 4,
   t = l % 4, holds (PTX ISA, "Matrix Fragments for mma.m16n8k16"): a: {A[g][2t..2t+1],
   A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]}; b: {B[2t..2t+1][g], B[2t+8..2t+9][g]};
   c, d: {C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]}. */
template <typename H>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                         const float (&c)[4]) {
#ifdef LMRT_CUDA_EMULATION
  lmrt_emu::mma16816<H>(d, a, b, c);
#else
  if constexpr (std::is_same_v<H, lmc::bf16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
#endif
}

/* The tiles: 64 rows, 4 warps of 16; 16-bit rows of DMAX (+8) or of 64 (+8) elements. */
template <int DMAX> struct MmaTile {
  static_assert(DMAX % 16 == 0 && DMAX <= 128, "the 16-bit tensor-core attention takes heads of at most 128 columns");
  static constexpr int B = 64, kWarps = 4, kThreads = 128;
  static constexpr int LD = DMAX + 8, LT = B + 8;  // 16-bit elements a row: row-major head rows, transposed tiles
  static constexpr int KD = DMAX / 16, NT = B / 8, ND = DMAX / 8;  // k chunks of a head row; n tiles of a tile row
  static constexpr size_t rowTile = (size_t)B * LD * 2, colTile = (size_t)DMAX * LT * 2;
  // Forward: Q, K; V^T. Key gradient: K, V, Q, dY; Q^T, dY^T; lse, delta (f32). Query gradient: Q, dY, K, V; K^T.
  static constexpr size_t forwardSmem() { return 2 * rowTile + colTile; }
  static constexpr size_t keyGradSmem() { return 4 * rowTile + 2 * colTile + 2 * B * 4; }
  static constexpr size_t queryGradSmem() { return 4 * rowTile + colTile; }
};

/* Rows [r0, r0 + n) of one head of x (f32, row stride `stride`) rounded into 64 16-bit
   rows, 0 beyond n rows and beyond Dh columns: into s row-major (row stride ld) and,
   when st is not null, into st transposed (column e of the head as row e, row stride
   lt), from one read of x; s may be null when only the transposed tile is wanted. */
template <typename H, int DMAX>
__device__ void loadTile16(const float *x, int64_t r0, int64_t n, const AttnDims &d, int64_t stride, uint16_t *s,
                           int ld, uint16_t *st = nullptr, int lt = 0) {
  constexpr int B = MmaTile<DMAX>::B;
  for (int idx = threadIdx.x; idx < B * DMAX; idx += blockDim.x) {
    const int r = idx / DMAX, e = idx - r * DMAX;
    const uint16_t v = (uint16_t)bits16<H>(r < n && e < d.Dh ? x[(r0 + r) * stride + e] : 0.0f);
    if (s) s[r * ld + e] = v;
    if (st) st[e * lt + r] = v;
  }
}

/* The 32-bit word of s (16-bit, row stride ld) holding elements (r, c), (r, c + 1). */
__device__ __forceinline__ uint32_t word(const uint16_t *s, int ld, int r, int c) {
  return *reinterpret_cast<const uint32_t *>(s + r * ld + c);
}

/* The A fragment of rows [r0, r0 + 16) and columns [c0, c0 + 16) of s. */
__device__ __forceinline__ void loadA(uint32_t (&a)[4], const uint16_t *s, int ld, int r0, int c0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  a[0] = word(s, ld, r0 + g, c0 + 2 * t);
  a[1] = word(s, ld, r0 + g + 8, c0 + 2 * t);
  a[2] = word(s, ld, r0 + g, c0 + 2 * t + 8);
  a[3] = word(s, ld, r0 + g + 8, c0 + 2 * t + 8);
}

/* The B fragment (k = 16 by n = 8) whose column n is row n0 + n of s, columns
   [k0, k0 + 16): B = s[n0.., k0..]^T, the operand of X Y^T with Y row-major. */
__device__ __forceinline__ void loadB(uint32_t (&b)[2], const uint16_t *s, int ld, int n0, int k0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  b[0] = word(s, ld, n0 + g, k0 + 2 * t);
  b[1] = word(s, ld, n0 + g, k0 + 2 * t + 8);
}

/* acc[n] (16 x 8 tiles of 16 rows by NT * 8 columns) += rows [r0, r0 + 16) of x times
   the rows of y transposed, over KD chunks of 16 columns: X Y^T of row-major tiles. */
template <typename H, int KD, int NT>
__device__ __forceinline__ void warpXYt(float (&acc)[NT][4], const uint16_t *x, int ldx, int r0, const uint16_t *y,
                                        int ldy) {
#pragma unroll
  for (int kc = 0; kc < KD; ++kc) {
    uint32_t a[4];
    loadA(a, x, ldx, r0, kc * 16);
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      uint32_t b[2];
      loadB(b, y, ldy, n * 8, kc * 16);
      mma16816<H>(acc[n], a, b, acc[n]);
    }
  }
}

/* acc[n] += P yt^T, P a 16 x (KP * 16) tile held as accumulators p[2 KP][4] (rounded
   to 16 bits here), yt the right operand transposed (row n is its column n). */
template <typename H, int KP, int ND>
__device__ __forceinline__ void warpPYt(float (&acc)[ND][4], const float (&p)[2 * KP][4], const uint16_t *yt,
                                        int ldy) {
#pragma unroll
  for (int kc = 0; kc < KP; ++kc) {
    const uint32_t a[4] = {pack16<H>(p[2 * kc][0], p[2 * kc][1]), pack16<H>(p[2 * kc][2], p[2 * kc][3]),
                           pack16<H>(p[2 * kc + 1][0], p[2 * kc + 1][1]),
                           pack16<H>(p[2 * kc + 1][2], p[2 * kc + 1][3])};
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      uint32_t b[2];
      loadB(b, yt, ldy, n * 8, kc * 16);
      mma16816<H>(acc[n], a, b, acc[n]);
    }
  }
}

/* e^x for the probabilities: the SFU's exponential on a device (__expf: ex2.approx, a
   few ulp, far below the 16-bit rounding P gets; the CUDA-core kernels' polynomial
   lmc::exp costs about as much as the two products of a score at 64 columns), the
   polynomial under emulation. e^-inf = 0. */
__device__ __forceinline__ float expFast(float x) {
#ifdef LMRT_CUDA_EMULATION
  return lmc::exp(x);
#else
  return __expf(x);
#endif
}

/* The probability and the score gradient of a visible pair (scoreGrad's math, the
   exponential expFast's); 0 and 0 for a hidden one. */
__device__ __forceinline__ void probAndGrad(float &s, float &dp, float lse, float delta, float scale, bool visible) {
  const float p = visible ? expFast(s * scale - lse) : 0.0f;
  dp = p * (dp - delta) * scale;
  s = p;
}

template <int N> __device__ __forceinline__ void zeroAcc(float (&acc)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
}

/* The lane's half of row u (0: row g of the warp's 16, 1: row g + 8) of an
   accumulator tile, times `factor`, into `row`: its columns below dh. */
template <int N>
__device__ __forceinline__ void storeAccRow(float *row, const float (&acc)[N][4], int u, int t, int64_t dh,
                                            float factor = 1.0f) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = n * 8 + 2 * t + e;
      if (col < dh) row[col] = acc[n][2 * u + e] * factor;
    }
}

/* The maximum and the sum over a row's four lanes (lanes 4g .. 4g + 3), in the same
   order in each. */
__device__ __forceinline__ float quadMax(float x) {
  x = max(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return max(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* The forward (attnForward's contract: y, lse when not null, cached_attention's
   offset) of the query tile blockIdx.x of (batch, head) blockIdx.y. */
template <typename H, int DMAX>
__global__ void __launch_bounds__(128) attnForwardMma(const float *q, const float *k, const float *v, const float *mask,
                                                      float *y, float *lse, AttnDims d, bool causal,
                                                      const int32_t *offset) {
  using Tl = MmaTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LT = Tl::LT, KD = Tl::KD, NT = Tl::NT, ND = Tl::ND;
  LMRT_DYNAMIC_SHARED(uint16_t, Qs);
  uint16_t *Ks = Qs + B * LD, *Vt = Ks + B * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, r0 = warp * 16;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const float scale = (float)d.scale;
  const ForwardKeys keys = forwardKeys(d, causal, offset, q0, B);
  loadTile16<H, DMAX>(q + base, q0, nq, d, d.C, Qs, LD);
  float o[ND][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows g, g + 8 of the warp's 16
  zeroAcc(o);
  for (int64_t k0 = 0; k0 < keys.end; k0 += B) {
    const int64_t nk = min((int64_t)B, keys.end - k0);
    __syncthreads();  // the previous tile's Ks, Vt are no longer read
    if (!tileVisible(mask, d, b, k0, nk)) continue;  // padding: contributes nothing
    loadTile16<H, DMAX>(k + kvBase, k0, nk, d, d.Ck, Ks, LD);
    loadTile16<H, DMAX>(v + kvBase, k0, nk, d, d.Ck, nullptr, 0, Vt, LT);
    __syncthreads();
    float s[NT][4];
    zeroAcc(s);
    warpXYt<H, KD, NT>(s, Qs, LD, r0, Ks, LD);
    // Hidden pairs are -inf; the scaled scores' maximum per row (u = 0: row g, 1: g + 8).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int u = e / 2, col = n * 8 + 2 * t + e % 2;
        const int64_t i = keys.pos0 + q0 + r0 + g + 8 * u, j = k0 + col;
        const bool hidden = col >= nk || (causal && j > i) || keyMasked(mask, d, b, j);
        s[n][e] = hidden ? -INFINITY : s[n][e] * scale;
        mx[u] = max(mx[u], s[n][e]);
      }
    float corr[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const float mNew = max(m[u], quadMax(mx[u]));
      // Nothing visible in this row yet: it stays empty (p = 0, nothing rescaled).
      corr[u] = mNew == -INFINITY ? 1.0f : expFast(m[u] - mNew);
      m[u] = mNew;
      l[u] *= corr[u];
    }
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int u = e / 2;
        s[n][e] = s[n][e] == -INFINITY ? 0.0f : expFast(s[n][e] - m[u]);
        l[u] += s[n][e];
      }
#pragma unroll
    for (int n = 0; n < ND; ++n) o[n][0] *= corr[0], o[n][1] *= corr[0], o[n][2] *= corr[1], o[n][3] *= corr[1];
    warpPYt<H, B / 16, ND>(o, s, Vt, LT);
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const float sum = quadSum(l[u]);
    const int64_t i = q0 + r0 + g + 8 * u;
    if (i >= d.T) continue;
    // sum = 0: no visible key (all masked, or a bad offset): the row is 0, or NaN for a bad offset.
    const float inv = keys.bad ? NAN : sum > 0.0f ? 1.0f / sum : 0.0f;
    storeAccRow(y + base + i * d.C, o, u, t, d.Dh, inv);
    if (lse && t == 0) lse[bh * d.T + i] = sum > 0.0f ? m[u] + log(sum) : 0.0f;
  }
}

/* dk, dv of the key tile blockIdx.x of key/value head (batch, g) = blockIdx.y (as
   attnBackwardKV: every query head of the group in head order, the query tiles in
   order). Warp w owns keys 16 w ..; its score tiles are keys by queries (S^T, dP^T),
   so P^T and dS^T are A operands straight from the accumulators. */
template <typename H, int DMAX>
__global__ void __launch_bounds__(128) attnBackwardKVMma(const float *q, const float *k, const float *v,
                                                         const float *mask, const float *dy, const float *lse,
                                                         const float *delta, float *dk, float *dv, AttnDims d,
                                                         bool causal) {
  using Tl = MmaTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LT = Tl::LT, KD = Tl::KD, NT = Tl::NT, ND = Tl::ND;
  LMRT_DYNAMIC_SHARED(uint16_t, Ks);
  uint16_t *Vs = Ks + B * LD, *Qs = Vs + B * LD, *Ds = Qs + B * LD, *Qt = Ds + B * LD, *Dt = Qt + DMAX * LT;
  float *Ls = reinterpret_cast<float *>(Dt + DMAX * LT), *Dl = Ls + B;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, r0 = warp * 16;
  const int64_t bg = blockIdx.y, b = bg / d.Hkv, kvh = bg % d.Hkv;
  const int64_t kvBase = d.kvBase(b, kvh * d.group());
  const int64_t k0 = blockIdx.x * (int64_t)B, nk = min((int64_t)B, d.Tk - k0);
  // A masked key gets dk = dv = 0; a tile of masked keys does no work.
  const bool live = tileVisible(mask, d, b, k0, nk);
  const float scale = (float)d.scale;
  loadTile16<H, DMAX>(k + kvBase, k0, nk, d, d.Ck, Ks, LD);
  loadTile16<H, DMAX>(v + kvBase, k0, nk, d, d.Ck, Vs, LD);
  // Whether the lane's keys (rows g, g + 8 of the warp's) exist and are not masked.
  bool keyOk[2];
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int kr = r0 + g + 8 * u;
    keyOk[u] = kr < nk && !keyMasked(mask, d, b, k0 + kr);
  }
  float dka[ND][4], dva[ND][4];
  zeroAcc(dka), zeroAcc(dva);
  for (int64_t h = kvh * d.group(); live && h < (kvh + 1) * d.group(); ++h) {
    const int64_t base = d.qBase(b, h), bh = b * d.H + h;
    // Causal: queries before the tile's first key see none of it.
    for (int64_t q0 = causal ? k0 : 0; q0 < d.T; q0 += B) {
      const int64_t nq = min((int64_t)B, d.T - q0);
      __syncthreads();  // the previous tile's Qs, Ds, Qt, Dt, Ls, Dl are no longer read
      loadTile16<H, DMAX>(q + base, q0, nq, d, d.C, Qs, LD, Qt, LT);
      loadTile16<H, DMAX>(dy + base, q0, nq, d, d.C, Ds, LD, Dt, LT);
      for (int r = threadIdx.x; r < B; r += blockDim.x)
        Ls[r] = r < nq ? lse[bh * d.T + q0 + r] : 0.0f, Dl[r] = r < nq ? delta[bh * d.T + q0 + r] : 0.0f;
      __syncthreads();
      float s[NT][4], dp[NT][4];
      zeroAcc(s), zeroAcc(dp);
      warpXYt<H, KD, NT>(s, Ks, LD, r0, Qs, LD);   // S^T: keys by queries
      warpXYt<H, KD, NT>(dp, Vs, LD, r0, Ds, LD);  // dP^T
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int u = e / 2, qr = n * 8 + 2 * t + e % 2;
          const int64_t j = k0 + r0 + g + 8 * u;
          const bool visible = keyOk[u] && qr < nq && !(causal && q0 + qr < j);
          probAndGrad(s[n][e], dp[n][e], Ls[qr], Dl[qr], scale, visible);
        }
      warpPYt<H, B / 16, ND>(dva, s, Dt, LT);   // dV += P^T dY
      warpPYt<H, B / 16, ND>(dka, dp, Qt, LT);  // dK += dS^T Q
    }
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t j = k0 + r0 + g + 8 * u;
    if (j >= d.Tk) continue;
    storeAccRow(dk + kvBase + j * d.Ck, dka, u, t, d.Dh);
    storeAccRow(dv + kvBase + j * d.Ck, dva, u, t, d.Dh);
  }
}

/* dq of the query tile blockIdx.x of (batch, head) blockIdx.y (as attnBackwardQ). */
template <typename H, int DMAX>
__global__ void __launch_bounds__(128) attnBackwardQMma(const float *q, const float *k, const float *v,
                                                        const float *mask, const float *dy, const float *lse,
                                                        const float *delta, float *dq, AttnDims d, bool causal) {
  using Tl = MmaTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LT = Tl::LT, KD = Tl::KD, NT = Tl::NT, ND = Tl::ND;
  LMRT_DYNAMIC_SHARED(uint16_t, Qs);
  uint16_t *Ds = Qs + B * LD, *Ks = Ds + B * LD, *Vs = Ks + B * LD, *Kt = Vs + B * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, r0 = warp * 16;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const float scale = (float)d.scale;
  loadTile16<H, DMAX>(q + base, q0, nq, d, d.C, Qs, LD);
  loadTile16<H, DMAX>(dy + base, q0, nq, d, d.C, Ds, LD);
  float L[2], Dl[2];
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t i = q0 + r0 + g + 8 * u;
    L[u] = i < d.T ? lse[bh * d.T + i] : 0.0f, Dl[u] = i < d.T ? delta[bh * d.T + i] : 0.0f;
  }
  float dqa[ND][4];
  zeroAcc(dqa);
  const int64_t kEnd = causal ? min(d.Tk, q0 + B) : d.Tk;
  for (int64_t k0 = 0; k0 < kEnd; k0 += B) {
    const int64_t nk = min((int64_t)B, kEnd - k0);
    __syncthreads();  // the previous tile's Ks, Vs, Kt are no longer read
    if (!tileVisible(mask, d, b, k0, nk)) continue;
    loadTile16<H, DMAX>(k + kvBase, k0, nk, d, d.Ck, Ks, LD, Kt, LT);
    loadTile16<H, DMAX>(v + kvBase, k0, nk, d, d.Ck, Vs, LD);
    __syncthreads();
    float s[NT][4], dp[NT][4];
    zeroAcc(s), zeroAcc(dp);
    warpXYt<H, KD, NT>(s, Qs, LD, r0, Ks, LD);   // S: queries by keys
    warpXYt<H, KD, NT>(dp, Ds, LD, r0, Vs, LD);  // dP
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int u = e / 2, kc = n * 8 + 2 * t + e % 2, qr = r0 + g + 8 * u;
        const int64_t i = q0 + qr, j = k0 + kc;
        const bool visible = qr < nq && kc < nk && !(causal && i < j) && !keyMasked(mask, d, b, j);
        probAndGrad(s[n][e], dp[n][e], L[u], Dl[u], scale, visible);
      }
    warpPYt<H, B / 16, ND>(dqa, dp, Kt, LT);  // dQ += dS K
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t i = q0 + r0 + g + 8 * u;
    if (i >= d.T) continue;
    storeAccRow(dq + base + i * d.C, dqa, u, t, d.Dh);
  }
}

/* The launch sequences (as launchForward / launchBackward): H is lmc::bf16 or lmc::f16. */
template <typename H, int DMAX, typename L>
void launchForwardMma(L &&launch, const AttnDims &d, bool causal, const float *q, const float *k, const float *v,
                      const float *mask, float *y, float *lse, const int32_t *offset) {
  using Tl = MmaTile<DMAX>;
  launch(attnForwardMma<H, DMAX>, Grid{ceilDiv(d.T, Tl::B), (unsigned)(d.B * d.H)}, Tl::kThreads, Tl::forwardSmem(),
         q, k, v, mask, y, lse, d, causal, offset);
}

template <typename H, int DMAX, typename L>
void launchBackwardMma(L &&launch, const AttnDims &d, bool causal, const float *q, const float *k, const float *v,
                       const float *mask, const float *dy, const float *o, const float *lse, float *delta, float *dq,
                       float *dk, float *dv) {
  using Tl = MmaTile<DMAX>;
  launchBackwardKernels<Tl>(launch, attnBackwardKVMma<H, DMAX>, Tl::keyGradSmem(), attnBackwardQMma<H, DMAX>,
                            Tl::queryGradSmem(), d, causal, q, k, v, mask, dy, o, lse, delta, dq, dk, dv);
}

}  // namespace lmrt::cuda::attn
