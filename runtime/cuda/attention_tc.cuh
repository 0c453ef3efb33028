/* Implements: the TF32 tensor-core variants of the attention kernels of
   attention_kernels.cuh, which runtime/cuda/attention.cu runs for f32 when the session
   asked for TF32 (lmrt --tf32, as the GEMMs), heads have at most 64 columns and
   LMRT_CUDA_ATTENTION=tensor-cores: measured on an H200 they are slower than the
   CUDA-core kernels so far (1.5-2x; the per-lane softmax over 32 columns and the
   output's trips through shared memory, at 8 warps an SM, dominate), so they are a
   correct, tested starting point for register-level mma.sync kernels, not the default.
   The math, the masks and the tiling order are those of the CUDA-core kernels; the
   score and output products run as WMMA m16n16k8 TF32 fragments (inputs rounded to
   10-bit mantissas, f32 accumulation): results differ from f32 by about 1e-3 relative.
   A block is 4 warps over 64 rows (queries, or keys in the key-gradient kernel), each
   warp owning 16 of them; tiles of 64 keys (or queries). A warp's products go through
   shared memory row tiles of its own, so only its 32 lanes exchange them (__syncwarp);
   the forward's output rows live in shared memory, where the online softmax rescales
   them before each P V product. The gradients accumulate in fragments across tiles.
   Only __syncthreads and __syncwarp synchronise (no shuffles), so the CPU emulation in
   test/Unit/cuda_emu runs these kernels too. */
#pragma once
#include "runtime/cuda/attention_kernels.cuh"

#ifndef LMRT_CUDA_EMULATION
#include <mma.h>
#endif

namespace lmrt::cuda::attn {

namespace wmma = nvcuda::wmma;

template <int DMAX> struct TcTile {
  static_assert(DMAX % 16 == 0 && DMAX <= 64, "the tensor-core attention takes heads of at most 64 columns");
  static constexpr int B = 64, kWarps = 4, kThreads = 128, kRows = 16;  // rows of a warp
  // Rows padded by 4 floats: wmma wants 16-byte multiples, and the pad spreads banks.
  static constexpr int LD = DMAX + 4, LS = B + 4;
  static constexpr size_t forwardSmem() { return (4 * B * LD + B * LS + 4 * B) * sizeof(float); }
  static constexpr size_t gradSmem() { return (4 * B * LD + 2 * B * LS + 2 * B) * sizeof(float); }
};

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

template <typename F> __device__ __forceinline__ void toTf32(F &f) {
#pragma unroll
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}

/* out[16 x 64] (row stride LS) = x[16 x n] y^T for 64 rows of y (both row-major,
   row stride ld): scores of a warp's 16 rows against a 64-row tile. */
__device__ __forceinline__ void warpScores(float *out, int ls, const float *x, const float *y, int ld, int n) {
#pragma unroll
  for (int nb = 0; nb < 4; ++nb) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int ks = 0; ks < n; ks += 8) {
      FragA a;
      FragBCol b;  // y^T: column j of y^T is row j of y
      wmma::load_matrix_sync(a, x + ks, ld);
      wmma::load_matrix_sync(b, y + nb * 16 * ld + ks, ld);
      toTf32(a), toTf32(b);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(out + nb * 16, acc, ls, wmma::mem_row_major);
  }
}

/* acc[n] += p[16 x kn] (row stride ls) y[kn x 16 n ..] (row-major, stride ld). */
template <int DMAX>
__device__ __forceinline__ void warpProduct(FragC (&acc)[DMAX / 16], const float *p, int ls, const float *y, int ld,
                                            int kn) {
  for (int ks = 0; ks < kn; ks += 8) {
    FragA a;
    wmma::load_matrix_sync(a, p + ks, ls);
    toTf32(a);
#pragma unroll
    for (int n = 0; n < DMAX / 16; ++n) {
      FragBRow b;
      wmma::load_matrix_sync(b, y + ks * ld + n * 16, ld);
      toTf32(b);
      wmma::mma_sync(acc[n], a, b, acc[n]);
    }
  }
}

/* The forward (see attnForward) of the query tile blockIdx.x of (batch, head) blockIdx.y. */
template <int DMAX>
__global__ void __launch_bounds__(128) attnForwardTc(const float *q, const float *k, const float *v, const float *mask,
                                                     float *y, float *lse, AttnDims d, bool causal,
                                                     const int32_t *offset) {
  using Tl = TcTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LS = Tl::LS, R = Tl::kRows;
  LMRT_DYNAMIC_SHARED(float, Qs);
  float *Ks = Qs + B * LD, *Vs = Ks + B * LD, *Os = Vs + B * LD, *Ss = Os + B * LD, *mRow = Ss + B * LS,
        *lRow = mRow + B, *red = lRow + B;  // red: [64 rows][2 halves]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const float scale = (float)d.scale;
  const ForwardKeys keys = forwardKeys(d, causal, offset, q0, B);
  const int64_t pos0 = keys.pos0, kEnd = keys.end;
  const bool bad = keys.bad;
  loadTile<float, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
  for (int idx = threadIdx.x; idx < B * LD; idx += blockDim.x) Os[idx] = 0;
  for (int r = threadIdx.x; r < B; r += blockDim.x) mRow[r] = -INFINITY, lRow[r] = 0;
  // A lane's row of the warp's 16 and its half of the 64 columns.
  const int row = warp * R + lane / 2, half = lane % 2;
  float *Sw = Ss + warp * R * LS, *Ow = Os + warp * R * LD;
  for (int64_t k0 = 0; k0 < kEnd; k0 += B) {
    const int64_t nk = min((int64_t)B, kEnd - k0);
    __syncthreads();  // the previous tile's Ks, Vs are no longer read
    if (!tileVisible(mask, d, b, k0, nk)) continue;
    loadTile<float, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
    loadTile<float, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
    __syncthreads();
    warpScores(Sw, LS, Qs + warp * R * LD, Ks, LD, DMAX);
    __syncwarp();
    // Online softmax of the lane's half row: scaled scores, -inf where hidden.
    const int64_t i = pos0 + q0 + row;
    float *s = Ss + row * LS + half * 32;
    float mx = -INFINITY;
    for (int c = 0; c < 32; ++c) {
      const int64_t j = k0 + half * 32 + c;
      const bool hidden = half * 32 + c >= nk || (causal && j > i) || keyMasked(mask, d, b, j);
      s[c] = hidden ? -INFINITY : s[c] * scale;
      mx = max(mx, s[c]);
    }
    red[row * 2 + half] = mx;
    __syncwarp();
    const float mOld = mRow[row], mNew = max(mOld, max(red[row * 2], red[row * 2 + 1]));
    const float corr = mNew == -INFINITY ? 1.0f : lmc::exp(mOld - mNew);
    float sum = 0;
    for (int c = 0; c < 32; ++c) {
      const float p = s[c] == -INFINITY ? 0.0f : lmc::exp(s[c] - mNew);
      s[c] = p;
      sum += p;
    }
    __syncwarp();  // both halves have read red's maxima
    red[row * 2 + half] = sum;
    float *o = Os + row * LD + half * (DMAX / 2);
    for (int e = 0; e < DMAX / 2; ++e) o[e] *= corr;
    __syncwarp();
    if (half == 0) lRow[row] = lRow[row] * corr + (red[row * 2] + red[row * 2 + 1]), mRow[row] = mNew;
    FragC acc[DMAX / 16];
#pragma unroll
    for (int n = 0; n < DMAX / 16; ++n) wmma::load_matrix_sync(acc[n], Ow + n * 16, LD, wmma::mem_row_major);
    warpProduct<DMAX>(acc, Sw, LS, Vs, LD, B);
#pragma unroll
    for (int n = 0; n < DMAX / 16; ++n) wmma::store_matrix_sync(Ow + n * 16, acc[n], LD, wmma::mem_row_major);
    __syncwarp();
  }
  __syncthreads();
  const int64_t i = q0 + row;
  if (i < d.T) {
    const float l = lRow[row], inv = bad ? NAN : l > 0.0f ? 1.0f / l : 0.0f;
    const float *o = Os + row * LD;
    for (int e = half; e < d.Dh; e += 2) y[base + i * d.C + e] = o[e] * inv;
    if (lse && half == 0) lse[bh * d.T + i] = l > 0.0f ? mRow[row] + log(l) : 0.0f;
  }
}

/* P and dS of a lane's half row of a warp's score tiles (s: scores, then P; g: dP,
   then dS), `visible` saying which pairs see each other. */
template <typename V>
__device__ __forceinline__ void scoreGradRow(float *s, float *g, int half, float scale, V &&visible,
                                             const float *lseOf, const float *deltaOf, bool byColumn, float lseRow,
                                             float deltaRow) {
  for (int c = 0; c < 32; ++c) {
    const int col = half * 32 + c;
    const float L = byColumn ? lseOf[col] : lseRow, Dl = byColumn ? deltaOf[col] : deltaRow;
    const ScoreGrad<float> r = scoreGrad(s[c], g[c], L, Dl, scale, visible(col));
    s[c] = r.p, g[c] = r.ds;
  }
}

/* dk, dv (see attnBackwardKV) of the key tile blockIdx.x of (batch, kv head) blockIdx.y:
   warp w owns keys 16 w ..; its score tiles are keys by queries. */
template <int DMAX>
__global__ void __launch_bounds__(128) attnBackwardKVTc(const float *q, const float *k, const float *v,
                                                        const float *mask, const float *dy, const float *lse,
                                                        const float *delta, float *dk, float *dv, AttnDims d,
                                                        bool causal) {
  using Tl = TcTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LS = Tl::LS, R = Tl::kRows;
  LMRT_DYNAMIC_SHARED(float, Ks);
  float *Vs = Ks + B * LD, *Qs = Vs + B * LD, *Ds = Qs + B * LD, *St = Ds + B * LD, *Gt = St + B * LS,
        *Ls = Gt + B * LS, *Dl = Ls + B;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = warp * R + lane / 2, half = lane % 2;
  const int64_t bg = blockIdx.y, b = bg / d.Hkv, g = bg % d.Hkv;
  const int64_t kvBase = d.kvBase(b, g * d.group());
  const int64_t k0 = blockIdx.x * (int64_t)B, nk = min((int64_t)B, d.Tk - k0);
  const bool live = tileVisible(mask, d, b, k0, nk);
  const float scale = (float)d.scale;
  loadTile<float, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
  loadTile<float, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
  FragC dkf[DMAX / 16], dvf[DMAX / 16];
#pragma unroll
  for (int n = 0; n < DMAX / 16; ++n) wmma::fill_fragment(dkf[n], 0.0f), wmma::fill_fragment(dvf[n], 0.0f);
  float *Sw = St + warp * R * LS, *Gw = Gt + warp * R * LS;
  const int64_t j = k0 + row;
  const bool keyOk = row < nk && !keyMasked(mask, d, b, j);
  for (int64_t h = g * d.group(); live && h < (g + 1) * d.group(); ++h) {
    const int64_t base = d.qBase(b, h), bh = b * d.H + h;
    for (int64_t q0 = causal ? k0 : 0; q0 < d.T; q0 += B) {
      const int64_t nq = min((int64_t)B, d.T - q0);
      __syncthreads();
      loadTile<float, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
      loadTile<float, DMAX>(dy + base, q0, nq, B, d, d.C, Ds, LD);
      for (int r = threadIdx.x; r < B; r += blockDim.x)
        Ls[r] = r < nq ? lse[bh * d.T + q0 + r] : 0.0f, Dl[r] = r < nq ? delta[bh * d.T + q0 + r] : 0.0f;
      __syncthreads();
      warpScores(Sw, LS, Ks + warp * R * LD, Qs, LD, DMAX);  // S^T: keys by queries
      warpScores(Gw, LS, Vs + warp * R * LD, Ds, LD, DMAX);  // dP^T
      __syncwarp();
      scoreGradRow(
          St + row * LS + half * 32, Gt + row * LS + half * 32, half, scale,
          [&](int col) { return keyOk && col < nq && !(causal && q0 + col < j); }, Ls, Dl, true, 0.0f, 0.0f);
      __syncwarp();
      warpProduct<DMAX>(dvf, Sw, LS, Ds, LD, B);  // dV += P^T dY
      warpProduct<DMAX>(dkf, Gw, LS, Qs, LD, B);  // dK += dS^T Q
    }
  }
  __syncwarp();  // the warp's St, Gt rows are free
#pragma unroll
  for (int n = 0; n < DMAX / 16; ++n) {
    wmma::store_matrix_sync(Sw + n * 16, dkf[n], LS, wmma::mem_row_major);
    wmma::store_matrix_sync(Gw + n * 16, dvf[n], LS, wmma::mem_row_major);
  }
  __syncwarp();
  if (j < d.Tk)
    for (int e = half; e < d.Dh; e += 2)
      dk[kvBase + j * d.Ck + e] = St[row * LS + e], dv[kvBase + j * d.Ck + e] = Gt[row * LS + e];
}

/* dq (see attnBackwardQ) of the query tile blockIdx.x of (batch, head) blockIdx.y. */
template <int DMAX>
__global__ void __launch_bounds__(128) attnBackwardQTc(const float *q, const float *k, const float *v,
                                                       const float *mask, const float *dy, const float *lse,
                                                       const float *delta, float *dq, AttnDims d, bool causal) {
  using Tl = TcTile<DMAX>;
  constexpr int B = Tl::B, LD = Tl::LD, LS = Tl::LS, R = Tl::kRows;
  LMRT_DYNAMIC_SHARED(float, Qs);
  float *Ds = Qs + B * LD, *Ks = Ds + B * LD, *Vs = Ks + B * LD, *Ss = Vs + B * LD, *Gs = Ss + B * LS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = warp * R + lane / 2, half = lane % 2;
  const int64_t bh = blockIdx.y, b = bh / d.H, h = bh % d.H, base = d.qBase(b, h), kvBase = d.kvBase(b, h);
  const int64_t q0 = blockIdx.x * (int64_t)B, nq = min((int64_t)B, d.T - q0);
  const float scale = (float)d.scale;
  loadTile<float, DMAX>(q + base, q0, nq, B, d, d.C, Qs, LD);
  loadTile<float, DMAX>(dy + base, q0, nq, B, d, d.C, Ds, LD);
  const int64_t i = q0 + row;
  const float L = i < d.T ? lse[bh * d.T + i] : 0.0f, Dl = i < d.T ? delta[bh * d.T + i] : 0.0f;
  FragC dqf[DMAX / 16];
#pragma unroll
  for (int n = 0; n < DMAX / 16; ++n) wmma::fill_fragment(dqf[n], 0.0f);
  float *Sw = Ss + warp * R * LS, *Gw = Gs + warp * R * LS;
  const int64_t kEnd = causal ? min(d.Tk, q0 + B) : d.Tk;
  for (int64_t k0 = 0; k0 < kEnd; k0 += B) {
    const int64_t nk = min((int64_t)B, kEnd - k0);
    __syncthreads();
    if (!tileVisible(mask, d, b, k0, nk)) continue;
    loadTile<float, DMAX>(k + kvBase, k0, nk, B, d, d.Ck, Ks, LD);
    loadTile<float, DMAX>(v + kvBase, k0, nk, B, d, d.Ck, Vs, LD);
    __syncthreads();
    warpScores(Sw, LS, Qs + warp * R * LD, Ks, LD, DMAX);  // S: queries by keys
    warpScores(Gw, LS, Ds + warp * R * LD, Vs, LD, DMAX);  // dP
    __syncwarp();
    scoreGradRow(
        Ss + row * LS + half * 32, Gs + row * LS + half * 32, half, scale,
        [&](int col) { return row < nq && col < nk && !(causal && i < k0 + col) && !keyMasked(mask, d, b, k0 + col); },
        nullptr, nullptr, false, L, Dl);
    __syncwarp();
    warpProduct<DMAX>(dqf, Gw, LS, Ks, LD, B);  // dQ += dS K
  }
  __syncwarp();
#pragma unroll
  for (int n = 0; n < DMAX / 16; ++n) wmma::store_matrix_sync(Sw + n * 16, dqf[n], LS, wmma::mem_row_major);
  __syncwarp();
  if (i < d.T)
    for (int e = half; e < d.Dh; e += 2) dq[base + i * d.C + e] = Ss[row * LS + e];
}

template <int DMAX, typename L>
void launchForwardTc(L &&launch, const AttnDims &d, bool causal, const float *q, const float *k, const float *v,
                     const float *mask, float *y, float *lse, const int32_t *offset) {
  using Tl = TcTile<DMAX>;
  launch(attnForwardTc<DMAX>, Grid{ceilDiv(d.T, Tl::B), (unsigned)(d.B * d.H)}, Tl::kThreads, Tl::forwardSmem(), q, k,
         v, mask, y, lse, d, causal, offset);
}

template <int DMAX, typename L>
void launchBackwardTc(L &&launch, const AttnDims &d, bool causal, const float *q, const float *k, const float *v,
                      const float *mask, const float *dy, const float *o, const float *lse, float *delta, float *dq,
                      float *dk, float *dv) {
  using Tl = TcTile<DMAX>;
  launchBackwardKernels<Tl>(launch, attnBackwardKVTc<DMAX>, Tl::gradSmem(), attnBackwardQTc<DMAX>, Tl::gradSmem(), d,
                            causal, q, k, v, mask, dy, o, lse, delta, dq, dk, dv);
}

}  // namespace lmrt::cuda::attn
