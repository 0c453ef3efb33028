/* Implements: the device code of lm.attention, lm.masked_attention, lm.cached_attention
   and their grads (runtime/cuda/attention.cu launches them): flash-attention kernels
   on tiles of B queries x B keys, 256 threads to a block as a 16 x 16 grid, each thread
   owning a small register tile of the scores (RM x RM) and of the output rows (RM x RD),
   so a shared-memory load feeds several multiply-adds. Nothing of size Tq x Tk is stored.
   q is [Bt, Tq, H*Dh] (head h in columns h*Dh..), k and v [Bt, Tk, Hkv*Dh], read in
   place; query head h reads key/value head h / (H / Hkv).
   Forward: online softmax over the key tiles (running max and sum per row, the output
   rescaled as the max grows), the row's logsumexp kept for the backward.
   Backward (flash-attention 2): one kernel owns key tiles (dk, dv summed over the
   queries that see them, of every query head of the group, in head order), one owns
   query tiles (dq): no atomics, so the same bits every run.
   biased_attention: the scores get a bias broadcast over [B, H, T, Tk] after the scale,
   and keys of another segment are hidden, in the same three kernels; the bias's
   gradient is one more kernel, a thread to an element of it, summing P (dP - delta)
   over what it broadcasts along in a fixed order (no atomics; the dot products are
   recomputed there, a cost of the order of one more backward product). Its
   probability dropout multiplies each probability, after the row sum took it
   undropped, by dropout_math.h's factor of (the batch row's key, the site,
   (h * T + i) * Tk + j), the CPU kernel's function, so both backends drop the same
   probabilities; the backward regenerates the factors (dV = (D P)^T dY,
   dS = P (D dP - delta)).
   Only __syncthreads synchronises threads (no warp shuffles), so the CPU emulation in
   test/Unit/cuda_emu runs these kernels as they are, which is how they are tested
   without a GPU. */
#pragma once
#include <algorithm>
#include <cstdint>

#include "contract/dropout_math.h"
#include "contract/scalar_math.h"

#ifndef LMRT_CUDA_EMULATION
#include <cuda_runtime.h>
#define LMRT_DYNAMIC_SHARED(T, name)                               \
  extern __shared__ __align__(128) unsigned char name##Bytes_[];     \
  T *name = reinterpret_cast<T *>(name##Bytes_)
#endif

namespace lmrt::cuda::attn {

/* C: the row stride of q, dy, dq (H*Dh); Ck: that of k, v, dk, dv (Hkv*Dh). */
struct AttnDims {
  int64_t B, T, C, H, Dh, Ck, Hkv;  // T: queries per batch row
  int64_t Tk;  // keys per batch row: Tk (T but for cross-attention), or the cache's W for cached_attention
  double scale;
  /* biased_attention: the score bias (q's element type), its dims [nB, nH, nT, nS]
     broadcasting to [B, H, T, Tk], or null; the segment ids [B, T], or null. */
  const void *bias = nullptr;
  int64_t biasDims[4] = {1, 1, 1, 1};
  const int32_t *seg = nullptr;
  /* biased_attention's probability dropout: the keys [B, 2] or a part's [2, B, 2]
     (dropParts; null: none), the op's site, the threshold and 1 / (1 - p). */
  const int32_t *dropKey = nullptr;
  bool dropParts = false;
  int64_t dropSite = 0;
  uint32_t dropThreshold = 0;
  double dropScale = 1;
  __host__ __device__ int64_t group() const { return H / Hkv; }
  /* The bias element of (b, h, i, j): index 0 along the dims it broadcasts. */
  __host__ __device__ int64_t biasIndex(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t nB = biasDims[0], nH = biasDims[1], nT = biasDims[2], nS = biasDims[3];
    return (((nB == 1 ? 0 : b) * nH + (nH == 1 ? 0 : h)) * nT + (nT == 1 ? 0 : i)) * nS + (nS == 1 ? 0 : j);
  }
  /* Offsets of the first column of query head h and of its key/value head, batch b. */
  __host__ __device__ int64_t qBase(int64_t b, int64_t h) const { return b * T * C + h * Dh; }
  __host__ __device__ int64_t kvBase(int64_t b, int64_t h) const { return b * Tk * Ck + (h / group()) * Dh; }
};

/* The tile shape for element type T and head sizes up to DMAX: B queries and B keys
   (64, or 32 where 64 rows of DMAX elements would not leave shared memory for the
   backward's six tiles), each thread RM rows x RM keys of a score tile and RM rows x
   RD columns of a row tile. Shared-memory rows are padded by one element, so a warp's
   16 different rows fall in 16 different banks. */
template <typename T, int DMAX> struct Tile {
  static constexpr int kThreads = 256, kSide = 16;
  static constexpr int B = sizeof(T) * DMAX <= 256 ? 64 : 32;
  static constexpr int RM = B / kSide, RD = DMAX / kSide;
  static constexpr int LD = DMAX + 1, LS = B + 1;  // padded rows: a head row, a score row
  static constexpr size_t forwardSmem() { return (3 * B * LD + B * LS + 2 * B * kSide) * sizeof(T); }
  static constexpr size_t keyGradSmem() { return (4 * B * LD + 2 * B * LS + 2 * B) * sizeof(T); }
  static constexpr size_t queryGradSmem() { return (4 * B * LD + B * LS) * sizeof(T); }
};

/* True when key j of batch row b is padding (mask, when there is one, is [B, Tk]). */
template <typename T>
__device__ __forceinline__ bool keyMasked(const T *mask, const AttnDims &d, int64_t b, int64_t j) {
  return mask && mask[b * d.Tk + j] == T(0);
}

/* True when query i and key j of batch row b are of different segments (segment ids). */
__device__ __forceinline__ bool otherSegment(const AttnDims &d, int64_t b, int64_t i, int64_t j) {
  return d.seg && d.seg[b * d.T + i] != d.seg[b * d.T + j];
}

/* The dropout factor of (b, h, i, j): 0 or 1 / (1 - p), or 1 without dropout. */
template <typename T>
__device__ __forceinline__ T dropFactor(const AttnDims &d, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!d.dropKey) return T(1);
  const uint64_t base = lmc::dropoutPartBase(d.dropKey, d.dropParts, d.B, b, (uint64_t)(d.H * d.T * d.Tk));
  return lmc::dropoutFactor<T>(lmc::dropoutStream(d.dropKey + 2 * b, d.dropSite), base + (uint64_t)((h * d.T + i) * d.Tk + j),
                               d.dropThreshold, (T)d.dropScale);
}

/* The bias of (b, h, i, j), or null when there is none. */
template <typename T>
__device__ __forceinline__ const T *scoreBias(const AttnDims &d, int64_t b, int64_t h, int64_t i, int64_t j) {
  return d.bias ? static_cast<const T *>(d.bias) + d.biasIndex(b, h, i, j) : nullptr;
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

/* Rows [r0, r0 + n) of one head of x (row stride `stride`, Dh columns) into s (row
   stride ld) for `rows` rows; zero beyond n rows and beyond Dh columns, so padding
   rows and columns add nothing and never carry NaN from uninitialised memory. */
template <typename T, int DMAX>
__device__ void loadTile(const T *x, int64_t r0, int64_t n, int rows, const AttnDims &d, int64_t stride, T *s, int ld) {
  for (int idx = threadIdx.x; idx < rows * DMAX; idx += blockDim.x) {
    const int r = idx / DMAX, e = idx - r * DMAX;
    s[r * ld + e] = r < n && e < d.Dh ? x[(r0 + r) * stride + e] : T(0);
  }
}

template <typename T, int R, int C> __device__ __forceinline__ void zeroTile(T (&t)[R][C]) {
#pragma unroll
  for (int a = 0; a < R; ++a)
#pragma unroll
    for (int c = 0; c < C; ++c) t[a][c] = 0;
}

/* The keys the forward's query tile [q0, q0 + B) visits: [0, end). With `offset`
   (cached_attention, read on the device), query row i sits at position pos0 + i of a
   cache of Tk keys; an offset the cache cannot hold (which the program boundary
   refuses) is `bad`: no key is visited and the rows are NaN instead of reading out of
   bounds. Only a cache offset can be out of range: cross-attention may have fewer
   keys than queries. */
struct ForwardKeys {
  int64_t pos0, end;
  bool bad;
};
__device__ __forceinline__ ForwardKeys forwardKeys(const AttnDims &d, bool causal, const int32_t *offset, int64_t q0,
                                                   int B) {
  ForwardKeys r;
  r.pos0 = offset ? (int64_t)*offset : 0;
  r.bad = offset && (r.pos0 < 0 || r.pos0 > d.Tk - d.T);
  r.end = r.bad ? 0 : causal ? min(d.Tk, r.pos0 + q0 + B) : d.Tk;
  return r;
}

/* acc[a][c] += sum over e < n of x[(ra + 16 a) * ldx + e] * y[(rc + 16 c) * ldy + e]:
   a register tile of X Y^T from row-major tiles in shared memory. */
template <typename T, int RA, int RC>
__device__ __forceinline__ void tileDotRows(T (&acc)[RA][RC], const T *x, int ldx, int ra, const T *y, int ldy, int rc,
                                            int n) {
  for (int e = 0; e < n; ++e) {
    T xa[RA], yc[RC];
#pragma unroll
    for (int a = 0; a < RA; ++a) xa[a] = x[(ra + 16 * a) * ldx + e];
#pragma unroll
    for (int c = 0; c < RC; ++c) yc[c] = y[(rc + 16 * c) * ldy + e];
#pragma unroll
    for (int a = 0; a < RA; ++a)
#pragma unroll
      for (int c = 0; c < RC; ++c) acc[a][c] += xa[a] * yc[c];
  }
}

/* acc[a][c] += sum over j < n of p[(ra + 16 a) * ldp + j] * y[j * ldy + rc + 16 c]:
   a register tile of P Y with P and Y row-major in shared memory. */
template <typename T, int RA, int RC>
__device__ __forceinline__ void tileMatmul(T (&acc)[RA][RC], const T *p, int ldp, int ra, const T *y, int ldy, int rc,
                                           int n) {
  for (int j = 0; j < n; ++j) {
    T pa[RA], yc[RC];
#pragma unroll
    for (int a = 0; a < RA; ++a) pa[a] = p[(ra + 16 * a) * ldp + j];
#pragma unroll
    for (int c = 0; c < RC; ++c) yc[c] = y[j * ldy + rc + 16 * c];
#pragma unroll
    for (int a = 0; a < RA; ++a)
#pragma unroll
      for (int c = 0; c < RC; ++c) acc[a][c] += pa[a] * yc[c];
  }
}

/* The forward of the query tile blockIdx.x of (batch, head) blockIdx.y: y and, when
   lse is not null, each row's logsumexp (0 for a row with no visible key, whose
   output is 0); `offset`: cached_attention's (forwardKeys). */
template <typename T, int DMAX>
__global__ void __launch_bounds__(256) attnForward(const T *q, const T *k, const T *v, const T *mask, T *y, T *lse,
                                                   AttnDims d, bool causal, const int32_t *offset = nullptr) {
  using Tl = Tile<T, DMAX>;
  constexpr int B = Tl::B, RM = Tl::RM, RD = Tl::RD, LD = Tl::LD, LS = Tl::LS, S = Tl::kSide;
  LMRT_DYNAMIC_SHARED(T, Qs);
  T *Ks = Qs + B * LD, *Vs = Ks + B * LD, *Ps = Vs + B * LD, *redMax = Ps + B * LS, *redSum = redMax + B * S;
  const int ty = threadIdx.x / S, tx = threadIdx.x % S;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const T scale = (T)d.scale;
  const ForwardKeys keys = forwardKeys(d, causal, offset, q0, B);
  const int64_t pos0 = keys.pos0, kEnd = keys.end;
  const bool bad = keys.bad;
  loadTile<T, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
  T o[RM][RD], m[RM], l[RM];
  zeroTile(o);
#pragma unroll
  for (int a = 0; a < RM; ++a) m[a] = -INFINITY, l[a] = 0;
  for (int64_t k0 = 0; k0 < kEnd; k0 += B) {
    const int64_t nk = min((int64_t)B, kEnd - k0);
    __syncthreads();  // the previous tile's Ks, Vs, Ps are no longer read
    if (!tileVisible(mask, d, b, k0, nk)) continue;  // padding: contributes nothing
    loadTile<T, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
    loadTile<T, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
    __syncthreads();
    T s[RM][RM];
    zeroTile(s);
    tileDotRows<T, RM, RM>(s, Qs, LD, ty, Ks, LD, tx, (int)d.Dh);
    // Scores of keys the row may not see are -inf; each thread's partial row maxima.
#pragma unroll
    for (int a = 0; a < RM; ++a) {
      const int64_t i = pos0 + q0 + ty + S * a;
      T mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < RM; ++c) {
        const int64_t j = k0 + tx + S * c;
        const bool hidden = j >= k0 + nk || (causal && j > i) || keyMasked(mask, d, b, j) ||
                            (d.seg && (i >= d.T || otherSegment(d, b, i, j)));
        const T *bias = !hidden && i < d.T ? scoreBias<T>(d, b, h, i, j) : nullptr;
        s[a][c] = hidden ? (T)-INFINITY : bias ? s[a][c] * scale + *bias : s[a][c] * scale;
        mx = max(mx, s[a][c]);
      }
      redMax[(ty + S * a) * S + tx] = mx;
    }
    __syncthreads();
    // Each row's new maximum from its 16 partial maxima, in the same order in every
    // thread of the row; then the probabilities and the partial row sums.
    T corr[RM];
#pragma unroll
    for (int a = 0; a < RM; ++a) {
      const int r = ty + S * a;
      T mx = m[a];
      for (int t = 0; t < S; ++t) mx = max(mx, redMax[r * S + t]);
      // Nothing visible in this row yet: it stays empty (p = 0, nothing rescaled).
      corr[a] = mx == (T)-INFINITY ? (T)1 : lmc::exp(m[a] - mx);
      T sum = 0;
#pragma unroll
      for (int c = 0; c < RM; ++c) {
        const T p = s[a][c] == (T)-INFINITY ? (T)0 : lmc::exp(s[a][c] - mx);
        // The sum is of the undropped probabilities; V is weighted by the dropped.
        Ps[r * LS + tx + S * c] = d.dropKey ? p * dropFactor<T>(d, b, h, q0 + r, k0 + tx + S * c) : p;
        sum += p;
      }
      redSum[r * S + tx] = sum;
      m[a] = mx;
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < RM; ++a) {
      const int r = ty + S * a;
      T sum = 0;
      for (int t = 0; t < S; ++t) sum += redSum[r * S + t];
      l[a] = l[a] * corr[a] + sum;
#pragma unroll
      for (int c = 0; c < RD; ++c) o[a][c] *= corr[a];
    }
    tileMatmul<T, RM, RD>(o, Ps, LS, ty, Vs, LD, tx, (int)nk);
  }
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int64_t i = q0 + ty + S * a;
    if (i >= d.T) continue;
    // l = 0: no visible key (all masked, or a bad offset); the row is 0 (o stayed 0),
    // or NaN for a bad offset.
    const T inv = bad ? (T)NAN : l[a] > T(0) ? T(1) / l[a] : T(0);
#pragma unroll
    for (int c = 0; c < RD; ++c) {
      const int e = tx + S * c;
      if (e < d.Dh) y[base + i * d.C + e] = o[a][c] * inv;
    }
    if (lse && tx == 0) lse[bh * d.T + i] = l[a] > T(0) ? m[a] + log(l[a]) : T(0);
  }
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

/* Fills P and dS of one (query tile, key tile) pair, given the register tiles of the
   scores s = q.k and dp = dy.v at rows/keys (qi[a], kj[c]) of the tile: P = exp(s
   scale [+ bias] - lse_i) where the query sees the key, else 0; dS = P (dp - delta_i)
   scale. With dropout (factor f of the element, 1 without) the output read f P:
   dS = P (f dp - delta) scale, and dV takes f P (returned as p). */
template <typename T> struct ScoreGrad {
  T p, ds;
};
template <typename T>
__device__ __forceinline__ ScoreGrad<T> scoreGrad(T s, T dp, T lse, T delta, T scale, bool visible,
                                                  const T *bias = nullptr, bool drop = false, T f = T(1)) {
  if (!visible) return {T(0), T(0)};
  const T p = bias ? lmc::exp(s * scale + *bias - lse) : lmc::exp(s * scale - lse);
  if (drop) return {p * f, p * (f * dp - delta) * scale};
  return {p, p * (dp - delta) * scale};
}

/* dk, dv of the key tile blockIdx.x of key/value head (batch, g) = blockIdx.y: summed
   over every query head of the group in head order and over the query tiles in order.
   A thread owns keys ty + 16 a and columns tx + 16 c; its score tiles are transposed
   (keys by queries), so P^T and dS^T are rows in shared memory. */
template <typename T, int DMAX>
__global__ void __launch_bounds__(256) attnBackwardKV(const T *q, const T *k, const T *v, const T *mask, const T *dy,
                                                      const T *lse, const T *delta, T *dk, T *dv, AttnDims d,
                                                      bool causal) {
  using Tl = Tile<T, DMAX>;
  constexpr int B = Tl::B, RM = Tl::RM, RD = Tl::RD, LD = Tl::LD, LS = Tl::LS, S = Tl::kSide;
  LMRT_DYNAMIC_SHARED(T, Ks);
  T *Vs = Ks + B * LD, *Qs = Vs + B * LD, *Ds = Qs + B * LD, *Pt = Ds + B * LD, *dSt = Pt + B * LS, *Ls = dSt + B * LS,
    *Dl = Ls + B;
  const int ty = threadIdx.x / S, tx = threadIdx.x % S;
  const int64_t bg = blockIdx.y, b = bg / d.Hkv, g = bg % d.Hkv;
  const int64_t kvBase = d.kvBase(b, g * d.group());
  const int64_t k0 = blockIdx.x * (int64_t)B, nk = min((int64_t)B, d.Tk - k0);
  // A masked key gets dk = dv = 0; a tile of masked keys does no work.
  const bool live = tileVisible(mask, d, b, k0, nk);
  const T scale = (T)d.scale;
  loadTile<T, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
  loadTile<T, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
  T dkr[RM][RD], dvr[RM][RD];
  zeroTile(dkr), zeroTile(dvr);
  for (int64_t h = g * d.group(); live && h < (g + 1) * d.group(); ++h) {
    const int64_t base = d.qBase(b, h), bh = b * d.H + h;
    // Causal: queries before the tile's first key see none of it.
    for (int64_t q0 = causal ? k0 : 0; q0 < d.T; q0 += B) {
      const int64_t nq = min((int64_t)B, d.T - q0);
      __syncthreads();  // the previous tile's Qs, Ds, Pt, dSt are no longer read
      loadTile<T, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
      loadTile<T, DMAX>(dy + base, q0, nq, B, d, d.C, Ds, LD);
      for (int r = threadIdx.x; r < B; r += blockDim.x)
        Ls[r] = r < nq ? lse[bh * d.T + q0 + r] : T(0), Dl[r] = r < nq ? delta[bh * d.T + q0 + r] : T(0);
      __syncthreads();
      T s[RM][RM], dp[RM][RM];
      zeroTile(s), zeroTile(dp);
      tileDotRows<T, RM, RM>(s, Ks, LD, ty, Qs, LD, tx, (int)d.Dh);   // s[key][query]
      tileDotRows<T, RM, RM>(dp, Vs, LD, ty, Ds, LD, tx, (int)d.Dh);  // dp[key][query]
#pragma unroll
      for (int a = 0; a < RM; ++a) {
        const int kr = ty + S * a;
        const int64_t j = k0 + kr;
        const bool keyOk = kr < nk && !keyMasked(mask, d, b, j);
#pragma unroll
        for (int c = 0; c < RM; ++c) {
          const int qr = tx + S * c;
          const bool visible = keyOk && qr < nq && !(causal && q0 + qr < j) && !otherSegment(d, b, q0 + qr, j);
          const bool drop = visible && d.dropKey;
          const ScoreGrad<T> g2 = scoreGrad(s[a][c], dp[a][c], Ls[qr], Dl[qr], scale, visible,
                                            visible ? scoreBias<T>(d, b, h, q0 + qr, j) : nullptr, drop,
                                            drop ? dropFactor<T>(d, b, h, q0 + qr, j) : T(1));
          Pt[kr * LS + qr] = g2.p;
          dSt[kr * LS + qr] = g2.ds;
        }
      }
      __syncthreads();
      tileMatmul<T, RM, RD>(dvr, Pt, LS, ty, Ds, LD, tx, (int)nq);   // dV += P^T dY
      tileMatmul<T, RM, RD>(dkr, dSt, LS, ty, Qs, LD, tx, (int)nq);  // dK += dS^T Q
    }
  }
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int64_t j = k0 + ty + S * a;
    if (j >= d.Tk) continue;
#pragma unroll
    for (int c = 0; c < RD; ++c) {
      const int e = tx + S * c;
      if (e < d.Dh) dk[kvBase + j * d.Ck + e] = dkr[a][c], dv[kvBase + j * d.Ck + e] = dvr[a][c];
    }
  }
}

/* dq of the query tile blockIdx.x of (batch, head) blockIdx.y. */
template <typename T, int DMAX>
__global__ void __launch_bounds__(256) attnBackwardQ(const T *q, const T *k, const T *v, const T *mask, const T *dy,
                                                     const T *lse, const T *delta, T *dq, AttnDims d, bool causal) {
  using Tl = Tile<T, DMAX>;
  constexpr int B = Tl::B, RM = Tl::RM, RD = Tl::RD, LD = Tl::LD, LS = Tl::LS, S = Tl::kSide;
  LMRT_DYNAMIC_SHARED(T, Qs);
  T *Ds = Qs + B * LD, *Ks = Ds + B * LD, *Vs = Ks + B * LD, *dSs = Vs + B * LD;
  const int ty = threadIdx.x / S, tx = threadIdx.x % S;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const T scale = (T)d.scale;
  loadTile<T, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
  loadTile<T, DMAX>(dy + base, q0, nq, B, d, d.C, Ds, LD);
  T L[RM], Dl[RM];
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int64_t i = q0 + ty + S * a;
    L[a] = i < d.T ? lse[bh * d.T + i] : T(0), Dl[a] = i < d.T ? delta[bh * d.T + i] : T(0);
  }
  T dqr[RM][RD];
  zeroTile(dqr);
  const int64_t kEnd = causal ? min(d.Tk, q0 + B) : d.Tk;
  for (int64_t k0 = 0; k0 < kEnd; k0 += B) {
    const int64_t nk = min((int64_t)B, kEnd - k0);
    __syncthreads();  // the previous tile's Ks, Vs, dSs are no longer read
    if (!tileVisible(mask, d, b, k0, nk)) continue;
    loadTile<T, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
    loadTile<T, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
    __syncthreads();
    T s[RM][RM], dp[RM][RM];
    zeroTile(s), zeroTile(dp);
    tileDotRows<T, RM, RM>(s, Qs, LD, ty, Ks, LD, tx, (int)d.Dh);   // s[query][key]
    tileDotRows<T, RM, RM>(dp, Ds, LD, ty, Vs, LD, tx, (int)d.Dh);  // dp[query][key]
#pragma unroll
    for (int a = 0; a < RM; ++a) {
      const int qr = ty + S * a;
      const int64_t i = q0 + qr;
#pragma unroll
      for (int c = 0; c < RM; ++c) {
        const int kc = tx + S * c;
        const int64_t j = k0 + kc;
        const bool visible =
            qr < nq && kc < nk && !(causal && i < j) && !keyMasked(mask, d, b, j) && !otherSegment(d, b, i, j);
        const bool drop = visible && d.dropKey;
        dSs[qr * LS + kc] = scoreGrad(s[a][c], dp[a][c], L[a], Dl[a], scale, visible,
                                      visible ? scoreBias<T>(d, b, h, i, j) : nullptr, drop,
                                      drop ? dropFactor<T>(d, b, h, i, j) : T(1))
                                .ds;
      }
    }
    __syncthreads();
    tileMatmul<T, RM, RD>(dqr, dSs, LS, ty, Ks, LD, tx, (int)nk);  // dQ += dS K
  }
#pragma unroll
  for (int a = 0; a < RM; ++a) {
    const int64_t i = q0 + ty + S * a;
    if (i >= d.T) continue;
#pragma unroll
    for (int c = 0; c < RD; ++c) {
      const int e = tx + S * c;
      if (e < d.Dh) dq[base + i * d.C + e] = dqr[a][c];
    }
  }
}

/* dbias of biased_attention: thread e owns element e of the bias's gradient [nB, nH,
   nT, nS] and sums P (dP - delta) = dS / scale over the batch rows, heads, queries and
   keys it broadcasts along, in order, recomputing each score and dP from q, k, dy, v
   (with dropout, P (f dP - delta)). */
template <typename T>
__global__ void attnBiasGrad(const T *q, const T *k, const T *v, const T *mask, const T *dy, const T *lse,
                             const T *delta, T *dbias, AttnDims d, bool causal) {
  const int64_t nB = d.biasDims[0], nH = d.biasDims[1], nT = d.biasDims[2], nS = d.biasDims[3];
  const int64_t n = nB * nH * nT * nS;
  const T scale = (T)d.scale, *bias = static_cast<const T *>(d.bias);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t js = e % nS, it = e / nS % nT, hs = e / (nS * nT) % nH, bs = e / (nS * nT * nH);
    T acc = 0;
    for (int64_t b = nB == 1 ? 0 : bs; b < (nB == 1 ? d.B : bs + 1); ++b)
      for (int64_t h = nH == 1 ? 0 : hs; h < (nH == 1 ? d.H : hs + 1); ++h) {
        const int64_t qb = d.qBase(b, h), kb = d.kvBase(b, h), bh = b * d.H + h;
        for (int64_t i = nT == 1 ? 0 : it; i < (nT == 1 ? d.T : it + 1); ++i)
          for (int64_t j = nS == 1 ? 0 : js; j < (nS == 1 ? d.Tk : js + 1); ++j) {
            if ((causal && j > i) || keyMasked(mask, d, b, j) || otherSegment(d, b, i, j)) continue;
            T s = 0, dp = 0;
            for (int64_t x = 0; x < d.Dh; ++x) {
              s += q[qb + i * d.C + x] * k[kb + j * d.Ck + x];
              dp += dy[qb + i * d.C + x] * v[kb + j * d.Ck + x];
            }
            const T p = lmc::exp(s * scale + bias[e] - lse[bh * d.T + i]);
            acc += d.dropKey ? p * (dropFactor<T>(d, b, h, i, j) * dp - delta[bh * d.T + i])
                             : p * (dp - delta[bh * d.T + i]);
          }
      }
    dbias[e] = acc;
  }
}

/* The launch sequences, shared by runtime/cuda/attention.cu (which launches on a
   stream) and the CPU emulation test: `launch(kernel, Grid, threads, smem bytes,
   args...)` runs one kernel. */
struct Grid {
  unsigned x, y;
};
inline unsigned ceilDiv(int64_t n, int64_t d) { return (unsigned)((n + d - 1) / d); }

template <typename T, int DMAX, typename L>
void launchForward(L &&launch, const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask, T *y,
                   T *lse, const int32_t *offset) {
  using Tl = Tile<T, DMAX>;
  launch(attnForward<T, DMAX>, Grid{ceilDiv(d.T, Tl::B), (unsigned)(d.B * d.H)}, Tl::kThreads, Tl::forwardSmem(), q,
         k, v, mask, y, lse, d, causal, offset);
}

/* The backward's launches, for each family of kernels (CUDA-core here, TF32 in
   attention_tc.cuh, 16-bit in attention_mma.cuh): delta (the rows of dy . o), then the
   key-tile kernel (dK, dV) over (key tile, batch x key/value head) and the query-tile
   kernel (dQ) over (query tile, batch x head). Tl: the family's tile (B, kThreads);
   kvSmem, qSmem: its two kernels' shared memory. */
template <typename Tl, typename T, typename L, typename KeyKernel, typename QueryKernel>
void launchBackwardKernels(L &&launch, KeyKernel keyKernel, size_t kvSmem, QueryKernel queryKernel, size_t qSmem,
                           const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask,
                           const T *dy, const T *o, const T *lse, T *delta, T *dq, T *dk, T *dv) {
  const int64_t rows = d.B * d.H * d.T;
  launch(attnDelta<T>, Grid{(unsigned)std::min<int64_t>(ceilDiv(rows, 256), 1 << 16), 1}, 256, (size_t)0, dy, o,
         delta, d);
  launch(keyKernel, Grid{ceilDiv(d.Tk, Tl::B), (unsigned)(d.B * d.Hkv)}, Tl::kThreads, kvSmem, q, k, v, mask, dy, lse,
         (const T *)delta, dk, dv, d, causal);
  launch(queryKernel, Grid{ceilDiv(d.T, Tl::B), (unsigned)(d.B * d.H)}, Tl::kThreads, qSmem, q, k, v, mask, dy, lse,
         (const T *)delta, dq, d, causal);
}

/* The backward from the forward's output o and row logsumexp lse (saved by
   attention_stats, or recomputed into scratch); delta: B*H*T scratch. dbias: the
   bias's gradient when d.bias is set (biased_attention). */
template <typename T, int DMAX, typename L>
void launchBackward(L &&launch, const AttnDims &d, bool causal, const T *q, const T *k, const T *v, const T *mask,
                    const T *dy, const T *o, const T *lse, T *delta, T *dq, T *dk, T *dv, T *dbias = nullptr) {
  using Tl = Tile<T, DMAX>;
  launchBackwardKernels<Tl>(launch, attnBackwardKV<T, DMAX>, Tl::keyGradSmem(), attnBackwardQ<T, DMAX>,
                            Tl::queryGradSmem(), d, causal, q, k, v, mask, dy, o, lse, delta, dq, dk, dv);
  if (d.bias && dbias) {
    const int64_t n = d.biasDims[0] * d.biasDims[1] * d.biasDims[2] * d.biasDims[3];
    launch(attnBiasGrad<T>, Grid{(unsigned)std::min<int64_t>(ceilDiv(n, 256), 1 << 16), 1}, 256, (size_t)0, q, k, v,
           mask, dy, lse, (const T *)delta, dbias, d, causal);
  }
}

}  // namespace lmrt::cuda::attn
