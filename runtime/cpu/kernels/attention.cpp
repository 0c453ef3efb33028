/* Implements: lm.attention, lm.masked_attention and their grads (multi-head scaled
   dot-product attention, optional causal mask, optional key padding mask, grouped-query
   heads, cross-attention). q is [B, Tq, H*Dh] with head h in columns h*Dh .. (h+1)*Dh-1,
   read in place with row stride H*Dh; k and v are [B, Tk, Hkv*Dh], and query head h
   reads key/value head h / (H / Hkv). The padding mask [B, Tk] (nonzero: attend) sets
   the scores of masked keys to -inf inside a tile, so their probability is exactly 0,
   and key tiles with no unmasked key are skipped; a row with no visible key outputs 0
   (and passes no gradient).
   Flash-attention style: a head is cut into blocks of kBlock queries x kBlock keys;
   the scores of a block are one small GEMM (CBLAS, whose kernels use the widest
   vector unit of the machine), the softmax is online (running row max and sum, the
   output rescaled when the max grows), so nothing of size T x T is ever stored, and
   causal blocks above the diagonal are never computed. A block the causal diagonal
   crosses goes in panels of kPanel query rows whose GEMMs take only the keys they see
   (on T <= 128, one block a head, this cut a third of the GEMM work).
   Forward: parallel over (batch, head, query block); every item writes its own rows.
   Backward (flash-attention-2): each (batch, key/value head) takes its query heads in
   order; each first recomputes its output and row logsumexp with the forward sweep
   (the op has no saved statistics), then walks query blocks x key blocks recomputing
   the probabilities; the item owns its slices of dq, dk, dv, so GEMMs accumulate
   into them directly and no two threads write the same element. Work items never depend on the thread count, so results are
   bit-identical for any --threads.
   biased_attention adds a score bias broadcast over [B, H, Tq, Tk] after the scaling
   (its own scale, or 1/sqrt(Dh)) and hides keys of another segment (packed rows); its
   grad also returns the bias's gradient, summed over the broadcast dims. Work items
   that would add into one element of it (a bias shared by batch rows or heads) are
   merged into one item that takes them in order, so dbias is deterministic too.
   Its dropout (attribute `dropout` > 0) multiplies each probability, after the row's
   sum took it undropped, by dropout_math.h's factor for (the row's key, the site,
   (h * Tq + i) * Tk + j), before the product with V; the grad regenerates the same
   factors: dV = (D P)^T dY, dS = P (D dP - delta). The factor depends only on the
   element, never on the tile or the thread, so the bits stay thread-count free.
   The packed ops (packed_attention, _stats, _grad_stats) read q, k, v as column blocks
   of one qkv [B, T, (H + 2*Hkv)*Dh] with its row stride, and the grad writes dq, dk, dv
   as the column blocks of one dqkv: the same tile math, only the strides and the heads'
   first columns differ (Dims3), so they compute the unpacked ops' bits. */
#include <cmath>

#include "contract/dropout_math.h"
#include "runtime/cpu/kernels/blas.h"
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

/* Queries and keys per tile: a 128 x 128 score tile (64 KiB in f32) and the q, k, v
   rows it reads stay in L2, and the tile GEMMs run at 150 GFLOP/s on one core where
   64 x 64 tiles reach 125 (oneDNN, Dh 64); at GPT-2's T = 1024 the backward took 12 %
   less CPU time (bench_kernels 1 1024 768 12). */
constexpr int64_t kBlock = 128;

/* Row strides: C of q (and dq), Ck of k and v (and dk, dv), Cy of y and dy. Apart,
   C = Cy = H*Dh and Ck = Hkv*Dh; packed (the packed_attention ops: q, k, v column blocks
   of one qkv [B, T, (H + 2*Hkv)*Dh], and dq, dk, dv of one dqkv) C = Ck is qkv's width,
   and k, v start at columns kCol, vCol of their rows. Query head h reads key/value head
   h / (H / Hkv) (grouped-query attention; Hkv = H is plain MHA). */
struct Dims3 {
  int64_t B, Tq, Tk, C, H, Dh, Ck, Hkv;
  int64_t Cy = C, kCol = 0, vCol = 0;
  int64_t group() const { return H / Hkv; }
};

/* The dims of a call whose input 0 is q (k, v inputs 1, 2) or, packed, qkv. */
Dims3 dimsOf(const KernelCall &call, bool packed = false) {
  const Shape &s = call.in[0].shape();
  int64_t h = call.attrs.getInt("num_heads");
  int64_t hkv = call.attrs.getInt("num_kv_heads");
  if (hkv == 0) hkv = h;
  if (packed) {
    const int64_t dh = s[2] / (h + 2 * hkv);
    Dims3 d{s[0], s[1], s[1], s[2], h, dh, s[2], hkv};
    d.Cy = h * dh, d.kCol = h * dh, d.vCol = (h + hkv) * dh;
    return d;
  }
  return {s[0], s[1], call.in[1].shape()[1], s[2], h, s[2] / h, call.in[1].shape()[2], hkv};
}

/* The key padding mask of batch row b (masked_attention), or null. */
template <typename T> const T *maskRow(const KernelCall &call, bool masked, int64_t b, const Dims3 &d) {
  return masked ? call.in[3].as<T>() + b * d.Tk : nullptr;
}

/* True when keys k0 .. k0+nk-1 are all masked: the tile is skipped. */
template <typename T> inline bool tileMasked(const T *mask, int64_t k0, int64_t nk) {
  if (!mask) return false;
  for (int64_t j = 0; j < nk; ++j)
    if (mask[k0 + j] != (T)0) return false;
  return true;
}
std::string checkAttentionCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs,
                                 Shape &shape, bool masked = false) {
  LMRT_CHECK(expectFloat(op, "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "k", in[1], "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "v", in[2], "q", in[0]));
  if (masked) LMRT_CHECK(expectSameDType(op, "mask", in[3], "q", in[0]));
  const bool causal = attrs.getBool("causal");
  std::string err;
  auto s = shapes::attention(in[0].shape, in[1].shape, in[2].shape, attrs.getInt("num_heads"), err,
                             attrs.getInt("num_kv_heads"), causal, masked ? &in[3].shape : nullptr);
  if (!s) return std::string(op) + err.substr(err.find(':'));
  shape = *s;
  return "";
}

std::string checkAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("attention", in, out, 3, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkAttentionCommon("attention", in, attrs, s));
    return expectType("attention", "out", out[0], in[0].dtype, s);
  });
}

std::string checkMaskedAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                 const Attrs &attrs) {
  return guardCheck("masked_attention", in, out, 4, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkAttentionCommon("masked_attention", in, attrs, s, true));
    return expectType("masked_attention", "out", out[0], in[0].dtype, s);
  });
}

/* What biased_attention adds to the scores of one (batch, head): the score scale, the
   bias at this (b, h) with the strides of its query and key dims (0 where it
   broadcasts) or null, the batch row's segment ids or null, (its grad) where the
   bias's gradient at this (b, h) accumulates, or null, and its probability dropout:
   the batch row's stream at the op's site, the threshold and 1 / (1 - p), and the
   index of (h, query 0, key 0) in the row's [H, Tq, Tk] (drop false: none). */
template <typename T> struct ScoreExtras {
  T scale;
  const T *bias = nullptr;
  int64_t biasT = 0, biasS = 0;
  const int32_t *seg = nullptr;
  T *dbias = nullptr;
  bool drop = false;
  uint64_t dropStream = 0;
  uint32_t dropThreshold = 0;
  T dropScale = 1;
  int64_t dropBase = 0, dropTk = 0;
  /* The dropout factor of query i, key j of this head: 0 or 1 / (1 - p). */
  T dropFactor(int64_t i, int64_t j) const {
    return lmc::dropoutFactor<T>(dropStream, (uint64_t)(dropBase + i * dropTk + j), dropThreshold, dropScale);
  }
};

/* Scratch of one thread for one query block. */
template <typename T> struct FwdScratch {
  std::vector<T> s, o, m, l, mx;  // mx: the row maxima of the current key tile
  explicit FwdScratch(int64_t Dh) : s(kBlock * kBlock), o(kBlock * Dh), m(kBlock), l(kBlock), mx(kBlock) {}
};

/* Keys a query row may see in the key tile starting at k0: all nk of them, or under a
   causal mask those with index <= the query's (possibly none). */
inline int64_t visibleKeys(bool causal, int64_t query, int64_t k0, int64_t nk) {
  return causal ? std::max<int64_t>(0, std::min(nk, query - k0 + 1)) : nk;
}

/* Row reductions of the softmax, kept in kLanes independent partial results (one
   AVX-512 vector) that combine as a tree at the end: GCC sums the lanes of an
   `omp simd reduction` one after another, a chain of 16 dependent scalar adds per
   row that on 64- and 128-key rows cost about as much as the row's exps. The order
   of the sums is fixed by n alone. always_inline: into each SIMD clone of the callers
   (alone they would be built for baseline x86-64). */
template <typename T> constexpr int kLanes = 64 / sizeof(T);

/* acc[0] = the fold of acc[0 .. 2W-1] by f, as a tree; W a constant, so the levels unroll
   into straight-line vector code (a loop over W had GCC emit one with a scalar tail). */
template <int W, typename T, typename F> inline __attribute__((always_inline)) void foldLanes(T *acc, F f) {
#pragma GCC unroll 16
  for (int u = 0; u < W; ++u) acc[u] = f(acc[u], acc[u + W]);
  if constexpr (W > 1) foldLanes<W / 2>(acc, f);
}
template <typename T> inline __attribute__((always_inline)) T maxOf(T a, T b) { return b > a ? b : a; }
template <typename T> inline __attribute__((always_inline)) T sumOf(T a, T b) { return a + b; }

template <typename T> inline __attribute__((always_inline)) T rowMax(const T *x, int64_t n) {
  constexpr int L = kLanes<T>;
  T acc[L];
  for (int u = 0; u < L; ++u) acc[u] = -INFINITY;
  int64_t j = 0;
  for (; j + L <= n; j += L)
#pragma omp simd
    for (int u = 0; u < L; ++u) acc[u] = x[j + u] > acc[u] ? x[j + u] : acc[u];  // a select vectorises
  for (int u = 0; j + u < n; ++u) acc[u] = x[j + u] > acc[u] ? x[j + u] : acc[u];
  foldLanes<L / 2>(acc, maxOf<T>);
  return acc[0];
}

/* x[j] = exp(x[j] - m) for the n columns; returns their sum. */
template <typename T> inline __attribute__((always_inline)) T expRowSum(T *x, int64_t n, T m) {
  constexpr int L = kLanes<T>;
  T acc[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
#pragma omp simd
    for (int u = 0; u < L; ++u) acc[u] += (x[j + u] = expT(x[j + u] - m));
  for (int u = 0; j + u < n; ++u) acc[u] += (x[j + u] = expT(x[j + u] - m));
  foldLanes<L / 2>(acc, sumOf<T>);
  return acc[0];
}

/* The dot product of a and b over n columns. */
template <typename T> inline __attribute__((always_inline)) T rowDot(const T *a, const T *b, int64_t n) {
  constexpr int L = kLanes<T>;
  T acc[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
#pragma omp simd
    for (int u = 0; u < L; ++u) acc[u] += a[j + u] * b[j + u];
  for (int u = 0; j + u < n; ++u) acc[u] += a[j + u] * b[j + u];
  foldLanes<L / 2>(acc, sumOf<T>);
  return acc[0];
}

/* Query rows per GEMM panel where the causal diagonal crosses a tile: each panel's
   GEMMs take only the keys its last row sees, so a 128 x 128 diagonal tile computes
   (1 + 2 + 3 + 4) / 16 of its products instead of all of them. */
constexpr int64_t kPanel = 32;

/* The rows of one GEMM panel for the key tile k0 .. k0+nk-1 and the nq query rows
   from position first: all of them unless the causal diagonal crosses the tile (its
   first row does not see every key), then kPanel. */
inline int64_t panelRows(bool causal, int64_t first, int64_t k0, int64_t nk, int64_t nq) {
  return causal && visibleKeys(causal, first, k0, nk) < nk ? kPanel : nq;
}

/* Softmax attention of queries q0 .. q0+nq-1 of one head (q, k, v point at the head's
   first column, row strides C for q, Ck for k and v): writes the rows of y (stride ldy) and, when lse is not
   null, each row's logsumexp of the scaled scores (0 for a row with no visible key,
   whose output is 0). Query row r sits at position pos0 + r (pos0 > 0: new queries
   over a key/value cache, cached_attention), which the causal mask compares with the
   key index. mask: the batch row's key padding mask [Tk], or null. */
template <typename T>
LMRT_SIMD_CLONES void forwardBlock(const Dims3 &d, bool causal, const T *q, const T *k, const T *v, int64_t q0,
                                   int64_t nq, T *y, int64_t ldy, T *lse, FwdScratch<T> &w, int64_t pos0 = 0,
                                   const T *mask = nullptr, const ScoreExtras<T> *x = nullptr) {
  const T scale = x ? x->scale : (T)(1.0 / std::sqrt((double)d.Dh));
  const int64_t Dh = d.Dh, C = d.C, Ck = d.Ck;
  T *S = w.s.data(), *O = w.o.data(), *m = w.m.data(), *l = w.l.data();
  for (int64_t i = 0; i < nq; ++i) m[i] = -INFINITY, l[i] = 0;
  std::fill(O, O + nq * Dh, (T)0);
  const int64_t kEnd = causal ? pos0 + q0 + nq : d.Tk;
  for (int64_t k0 = 0; k0 < kEnd; k0 += kBlock) {
    const int64_t nk = std::min(kBlock, kEnd - k0);
    if (tileMasked(mask, k0, nk)) continue;  // padding: contributes nothing
    const int64_t step = panelRows(causal, pos0 + q0, k0, nk, nq);
    for (int64_t i0 = 0; i0 < nq; i0 += step) {
      // Rows i0 .. i1-1 (ldS = nk) and the nkp keys of the tile the last of them sees.
      const int64_t i1 = std::min(nq, i0 + step), nkp = visibleKeys(causal, pos0 + q0 + i1 - 1, k0, nk);
      if (nkp == 0) continue;  // the tile lies wholly after these rows
      gemm(false, true, i1 - i0, nkp, Dh, scale, q + (q0 + i0) * C, C, k + k0 * Ck, Ck, (T)0, S + i0 * nk, nk);
      // Two passes over the panel's rows: the bias, masks and row maxima of all, then the
      // exps and sums. Each row's max and sum end in a chain of dependent operations
      // (the lane folds); rows taken whole one after another left the core waiting on
      // them, while a pass of one kind over many rows overlaps the rows' chains.
      for (int64_t i = i0; i < i1; ++i) {
        T *row = S + i * nk;
        const int64_t vis = visibleKeys(causal, pos0 + q0 + i, k0, nk);
        if (x && x->bias) {
          const T *br = x->bias + (q0 + i) * x->biasT + k0 * x->biasS;
          const int64_t bs = x->biasS;
          for (int64_t j = 0; j < vis; ++j) row[j] += br[j * bs];
        }
        if (mask) {
          const T *mk = mask + k0;
#pragma omp simd
          for (int64_t j = 0; j < vis; ++j) row[j] = mk[j] != (T)0 ? row[j] : (T)-INFINITY;
        }
        if (x && x->seg) {  // keys of another document: hidden
          const int32_t si = x->seg[pos0 + q0 + i], *sk = x->seg + k0;
#pragma omp simd
          for (int64_t j = 0; j < vis; ++j) row[j] = sk[j] == si ? row[j] : (T)-INFINITY;
        }
        // The causally hidden columns vis .. nkp-1 join as -inf (probability exactly 0,
        // as the product with V needs): the row's loops then run over all nkp columns,
        // whole vectors (a select on j < vis made GCC split the loop in two, the second
        // half a scalar chain).
        for (int64_t j = vis; j < nkp; ++j) row[j] = (T)-INFINITY;
        w.mx[i] = rowMax(row, nkp);  // NaN keeps mx unchanged, as std::max(mx, NaN) would
      }
      for (int64_t i = i0; i < i1; ++i) {
        T *row = S + i * nk, *oi = O + i * Dh;
        const int64_t vis = visibleKeys(causal, pos0 + q0 + i, k0, nk);
        const T mx = w.mx[i];
        if (vis == 0 || mx == -INFINITY) {  // nothing visible (yet): the row contributes nothing
          std::fill(row, row + nkp, (T)0);
          continue;
        }
        const T mNew = std::max(m[i], mx);
        const T sum = expRowSum(row, nkp, mNew);
        if (x && x->drop)  // the sum above is of the undropped probabilities
          for (int64_t j = 0; j < vis; ++j) row[j] *= x->dropFactor(pos0 + q0 + i, k0 + j);
        if (m[i] == -INFINITY) {  // the row's first visible keys: O and l are still 0
          l[i] = sum;
        } else {
          const T corr = expT(m[i] - mNew);
          l[i] = l[i] * corr + sum;
          if (corr != (T)1)
#pragma omp simd
            for (int64_t e = 0; e < Dh; ++e) oi[e] *= corr;
        }
        m[i] = mNew;
      }
      gemm(false, false, i1 - i0, Dh, nkp, (T)1, S + i0 * nk, nk, v + k0 * Ck, Ck, (T)1, O + i0 * Dh, Dh);
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    // l = 0: every key of the row is masked; its output is 0 (O stayed 0).
    const T inv = l[i] > (T)0 ? (T)1 / l[i] : (T)0;
    T *yi = y + (q0 + i) * ldy;
    const T *oi = O + i * Dh;
#pragma omp simd
    for (int64_t e = 0; e < Dh; ++e) yi[e] = oi[e] * inv;
    if (lse) lse[q0 + i] = l[i] > (T)0 ? m[i] + std::log(l[i]) : (T)0;
  }
}

/* Below this many multiply-adds (B*H*Tq*Tk*Dh) attention runs on one thread. */
constexpr int64_t kParallelWork = 1 << 15;

/* attention, masked_attention and (stats) attention_stats, which also writes each query
   row's logsumexp to out[1], [B, H, Tq]; packed: packed_attention(_stats), whose input 0
   is qkv. */
template <typename T> void attentionT(const KernelCall &call, bool masked, bool stats = false, bool packed = false) {
  Dims3 d = dimsOf(call, packed);
  bool causal = call.attrs.getBool("causal");
  const T *q = call.in[0].as<T>(), *k = call.in[packed ? 0 : 1].as<T>() + d.kCol,
          *v = call.in[packed ? 0 : 2].as<T>() + d.vCol;
  T *y = call.out[0].as<T>(), *lse = stats ? call.out[1].as<T>() : nullptr;
  if (call.out[0].numel() == 0) return;
  singleThreadedBlas();
  const int64_t qBlocks = (d.Tq + kBlock - 1) / kBlock, items = d.B * d.H * qBlocks;
  bool par = items > 1 && d.B * d.H * d.Tq * d.Tk * d.Dh >= kParallelWork;
#pragma omp parallel if (par)
  {
    FwdScratch<T> w(d.Dh);
    // Causal query blocks grow in cost along the sequence: hand them out dynamically.
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      int64_t bh = item / qBlocks, qb = item % qBlocks;
      int64_t b = bh / d.H, h = bh % d.H;
      int64_t base = b * d.Tq * d.C + h * d.Dh, kvBase = b * d.Tk * d.Ck + (h / d.group()) * d.Dh;
      int64_t yBase = b * d.Tq * d.Cy + h * d.Dh, q0 = qb * kBlock;
      forwardBlock(d, causal, q + base, k + kvBase, v + kvBase, q0, std::min(kBlock, d.Tq - q0), y + yBase, d.Cy,
                   lse ? lse + bh * d.Tq : (T *)nullptr, w, 0, maskRow<T>(call, masked, b, d));
    }
  }
}

void runAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call, false); });
}
void runMaskedAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call, true); });
}
void runAttentionStats(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call, false, true); });
}
void runPackedAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call, false, false, true); });
}
void runPackedAttentionStats(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionT<decltype(t)>(call, false, true, true); });
}

std::string checkAttentionStats(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                const Attrs &attrs) {
  return guardCheck("attention_stats", in, out, 3, 2, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkAttentionCommon("attention_stats", in, attrs, s));
    LMRT_CHECK(expectType("attention_stats", "y", out[0], in[0].dtype, s));
    return expectType("attention_stats", "lse", out[1], in[0].dtype,
                      shapes::attentionLse(in[0].shape, attrs.getInt("num_heads")));
  });
}

/* The packed ops' qkv (input 0): `shape` gets y's, [B, T, H*Dh]. */
std::string checkPackedCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs, Shape &shape) {
  LMRT_CHECK(expectFloat(op, "qkv", in[0]));
  std::string err;
  auto s = shapes::packedAttention(in[0].shape, attrs.getInt("num_heads"), err, attrs.getInt("num_kv_heads"),
                                   attrs.getBool("causal"));
  if (!s) return std::string(op) + err.substr(err.find(':'));
  shape = *s;
  return "";
}
std::string checkPackedAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                 const Attrs &attrs) {
  return guardCheck("packed_attention", in, out, 1, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkPackedCommon("packed_attention", in, attrs, s));
    return expectType("packed_attention", "out", out[0], in[0].dtype, s);
  });
}
std::string checkPackedAttentionStats(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                      const Attrs &attrs) {
  return guardCheck("packed_attention_stats", in, out, 1, 2, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkPackedCommon("packed_attention_stats", in, attrs, s));
    LMRT_CHECK(expectType("packed_attention_stats", "y", out[0], in[0].dtype, s));
    return expectType("packed_attention_stats", "lse", out[1], in[0].dtype,
                      shapes::attentionLse(s, attrs.getInt("num_heads")));
  });
}

// ----------------------------------------------------------------------------
// attention_grad: (q, k, v, dy) -> (dq, dk, dv)

/* The inputs of the attention grads, dy last: attention_grad (q, k, v, dy),
   masked_attention_grad (q, k, v, mask, dy) and attention_grad_stats (q, k, v, y,
   lse, dy), which reads the forward's output and row logsumexp. */
enum class GradForm { Plain, Masked, Stats };

std::string checkGradCommon(const char *op, GradForm form, const std::vector<TensorType> &in,
                            const std::vector<TensorType> &out, const Attrs &attrs) {
  const size_t n = form == GradForm::Plain ? 4 : form == GradForm::Masked ? 5 : 6;
  return guardCheck(op, in, out, n, 3, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkAttentionCommon(op, in, attrs, s, form == GradForm::Masked));
    auto likeQ = [&](size_t i, const char *what) -> std::string {
      LMRT_CHECK(expectSameDType(op, what, in[i], "q", in[0]));
      if (in[i].shape != s) return std::string(op) + ": " + what + " " + in[i].str() + " must have the shape of q " + in[0].str();
      return "";
    };
    LMRT_CHECK(likeQ(n - 1, "dy"));
    if (form == GradForm::Stats) {
      LMRT_CHECK(likeQ(3, "y"));
      LMRT_CHECK(expectSameDType(op, "lse", in[4], "q", in[0]));
      Shape lse = shapes::attentionLse(in[0].shape, attrs.getInt("num_heads"));
      if (in[4].shape != lse)
        return std::string(op) + ": lse " + in[4].str() + " must be " + shapes::str(lse) + " [B, H, Tq]";
    }
    LMRT_CHECK(expectType(op, "dq", out[0], in[0].dtype, s));
    LMRT_CHECK(expectType(op, "dk", out[1], in[0].dtype, in[1].shape));
    return expectType(op, "dv", out[2], in[0].dtype, in[1].shape);
  });
}
std::string checkAttentionGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                               const Attrs &attrs) {
  return checkGradCommon("attention_grad", GradForm::Plain, in, out, attrs);
}
std::string checkMaskedAttentionGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                     const Attrs &attrs) {
  return checkGradCommon("masked_attention_grad", GradForm::Masked, in, out, attrs);
}
std::string checkAttentionGradStats(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                    const Attrs &attrs) {
  return checkGradCommon("attention_grad_stats", GradForm::Stats, in, out, attrs);
}
/* packed_attention_grad_stats (qkv, y, lse, dy) -> dqkv. */
std::string checkPackedAttentionGradStats(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                          const Attrs &attrs) {
  const char *op = "packed_attention_grad_stats";
  return guardCheck(op, in, out, 4, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkPackedCommon(op, in, attrs, s));
    for (size_t i : {1, 3}) {
      const char *what = i == 1 ? "y" : "dy";
      LMRT_CHECK(expectSameDType(op, what, in[i], "qkv", in[0]));
      if (in[i].shape != s)
        return std::string(op) + ": " + what + " " + in[i].str() + " must be " + shapes::str(s) + " [B, T, H*Dh]";
    }
    LMRT_CHECK(expectSameDType(op, "lse", in[2], "qkv", in[0]));
    Shape lse = shapes::attentionLse(s, attrs.getInt("num_heads"));
    if (in[2].shape != lse)
      return std::string(op) + ": lse " + in[2].str() + " must be " + shapes::str(lse) + " [B, H, T]";
    return expectType(op, "dqkv", out[0], in[0].dtype, in[0].shape);
  });
}

/* Scratch of one thread for the backward of one head. */
template <typename T> struct BwdScratch {
  FwdScratch<T> fwd;
  std::vector<T> o, lse, delta, p, dp;
  // Per key tile of the current (batch, key/value head): no GEMM has written its rows of
  // dk and dv yet, so the first one sets them (beta 0) instead of adding to a zero fill.
  std::vector<char> fresh;
  explicit BwdScratch(const Dims3 &d)
      : fwd(d.Dh), o(d.Tq * d.Dh), lse(d.Tq), delta(d.Tq), p(kBlock * kBlock), dp(kBlock * kBlock),
        fresh((d.Tk + kBlock - 1) / kBlock) {}
  /* Before the query heads of one (batch, key/value head). */
  void beginKeyHead() { std::fill(fresh.begin(), fresh.end(), 1); }
  /* After them: the rows of dk and dv (head's first column, row stride Ck) in key tiles
     no query head wrote (every key masked) are 0. */
  void endKeyHead(const Dims3 &d, T *dk, T *dv) {
    for (int64_t t = 0; t < d.Tk; ++t)
      if (fresh[t / kBlock]) {
        std::fill(dk + t * d.Ck, dk + t * d.Ck + d.Dh, (T)0);
        std::fill(dv + t * d.Ck, dv + t * d.Ck + d.Dh, (T)0);
      }
  }
};

/* The backward of one (batch, head); q .. dv point at the head's first column (row
   stride C for q, dq; Cy for dy and savedY; Ck for k, v, dk, dv). dk and dv are accumulated in place
   (the query heads of a group add into one key/value head): a key tile's first GEMM
   sets its rows (w.fresh), later ones add.
   mask: the batch row's key padding mask, or null; masked keys get P = 0. */
template <typename T>
LMRT_SIMD_CLONES void backwardHead(const Dims3 &d, bool causal, const T *q, const T *k, const T *v, const T *dy,
                                   T *dq, T *dk, T *dv, BwdScratch<T> &w, const T *mask, const T *savedY = nullptr,
                                   const T *savedLse = nullptr, const ScoreExtras<T> *x = nullptr) {
  const T scale = x ? x->scale : (T)(1.0 / std::sqrt((double)d.Dh));
  const int64_t Dh = d.Dh, C = d.C, Ck = d.Ck, Cy = d.Cy;
  // Output and logsumexp of every row, recomputed unless the forward saved them
  // (attention_grad_stats: y with dy's row stride Cy, lse of this head); then
  // delta_i = dy_i . y_i = sum_j P_ij dP_ij.
  const T *o = savedY, *lseRow = savedLse;
  int64_t ldo = Cy;
  if (!savedY) {
    for (int64_t q0 = 0; q0 < d.Tq; q0 += kBlock)
      forwardBlock(d, causal, q, k, v, q0, std::min(kBlock, d.Tq - q0), w.o.data(), Dh, w.lse.data(), w.fwd, 0,
                   mask, x);
    o = w.o.data(), lseRow = w.lse.data(), ldo = Dh;
  }
  for (int64_t i = 0; i < d.Tq; ++i) {
    const T *dyi = dy + i * Cy, *oi = o + i * ldo;
    w.delta[i] = rowDot(dyi, oi, Dh);
  }
  T *P = w.p.data(), *dP = w.dp.data();
  for (int64_t q0 = 0; q0 < d.Tq; q0 += kBlock) {
    const int64_t nq = std::min(kBlock, d.Tq - q0), kEnd = causal ? q0 + nq : d.Tk;
    bool first = true;  // no key tile has written these rows of dq yet: the first GEMM sets them
    for (int64_t k0 = 0; k0 < kEnd; k0 += kBlock) {
      const int64_t nk = std::min(kBlock, kEnd - k0);
      if (tileMasked(mask, k0, nk)) continue;  // P = 0 there: nothing to add
      // On the causal diagonal (k0 = q0: causal attention has Tk = Tq) the rows go in
      // panels of kPanel, each computing the nkp keys its last row sees; the products
      // with dY and Q below then take, for each panel of keys, only the query rows that
      // see them (key j is seen by rows j and later). Elsewhere one panel of nq rows.
      const bool diagonal = causal && k0 == q0;
      const int64_t step = diagonal ? kPanel : nq;
      for (int64_t i0 = 0; i0 < nq; i0 += step) {
        const int64_t i1 = std::min(nq, i0 + step), nkp = visibleKeys(causal, q0 + i1 - 1, k0, nk);
        gemm(false, true, i1 - i0, nkp, Dh, scale, q + (q0 + i0) * C, C, k + k0 * Ck, Ck, (T)0, P + i0 * nk, nk);
        gemm(false, true, i1 - i0, nkp, Dh, (T)1, dy + (q0 + i0) * Cy, Cy, v + k0 * Ck, Ck, (T)0, dP + i0 * nk, nk);
        // P_ij = exp(s_ij - lse_i); dS_ij = P_ij (dP_ij - delta_i), times the score scale.
        for (int64_t i = i0; i < i1; ++i) {
          T *pi = P + i * nk, *dpi = dP + i * nk;
          const int64_t vis = visibleKeys(causal, q0 + i, k0, nk);
          const T lse = lseRow[q0 + i], delta = w.delta[q0 + i];
          if (x && !x->bias && !x->dbias && !x->seg) {
            // biased_attention with dropout (and padding) only, as BERT's attention
            // dropout makes it: the general loop below without its bias and segment
            // terms. The row's dropout factors first (the hash stays scalar), then the
            // exponentials in a simd loop: the scalar loop was half the op's time.
            const T *mk = mask ? mask + k0 : nullptr;
            T f[kBlock];
            for (int64_t j = 0; j < vis; ++j) f[j] = x->drop ? x->dropFactor(q0 + i, k0 + j) : (T)1;
#pragma omp simd
            for (int64_t j = 0; j < vis; ++j) {
              const T p = (mk && mk[j] == (T)0) ? (T)0 : expT(pi[j] - lse);
              dpi[j] = p * (f[j] * dpi[j] - delta) * scale;
              pi[j] = p * f[j];
            }
            for (int64_t j = vis; j < nkp; ++j) pi[j] = dpi[j] = 0;
          } else if (x) {
            // biased_attention: the bias joins the scaled score; dS = P (dP - delta) is
            // also the bias's gradient (summed where the bias broadcasts: not a simd loop).
            const int64_t bs = x->biasS, boff = (q0 + i) * x->biasT + k0 * bs;
            const T *br = x->bias ? x->bias + boff : nullptr;
            T *dbr = x->dbias ? x->dbias + boff : nullptr;
            const int32_t *sk = x->seg ? x->seg + k0 : nullptr, si = x->seg ? x->seg[q0 + i] : 0;
            const T *mk = mask ? mask + k0 : nullptr;
            for (int64_t j = 0; j < vis; ++j) {
              const bool hidden = (mk && mk[j] == (T)0) || (sk && sk[j] != si);
              pi[j] = hidden ? (T)0 : expT((br ? pi[j] + br[j * bs] : pi[j]) - lse);
              // Dropout: the output read D P, so dP of the undropped P is D dP, and
              // dV takes D P (pi is rescaled after its use in dS).
              const T f = x->drop ? x->dropFactor(q0 + i, k0 + j) : (T)1;
              const T ds = pi[j] * (x->drop ? f * dpi[j] - delta : dpi[j] - delta);
              if (dbr) dbr[j * bs] += ds;
              dpi[j] = ds * scale;
              if (x->drop) pi[j] *= f;
            }
            for (int64_t j = vis; j < nkp; ++j) pi[j] = dpi[j] = 0;
          } else if (mask) {
            // All nkp columns, the causally hidden ones and masked keys selected to 0:
            // whole vectors, no scalar tail.
            const T *mk = mask + k0;
            for (int64_t j = vis; j < nkp; ++j) pi[j] = (T)-INFINITY;
#pragma omp simd
            for (int64_t j = 0; j < nkp; ++j) {
              const T p = mk[j] != (T)0 ? expT(pi[j] - lse) : (T)0;
              dpi[j] = p * (dpi[j] - delta) * scale;
              pi[j] = p;
            }
          } else {
            // The causally hidden columns as -inf: exp gives 0 (a select on j < vis made
            // GCC split the loop, its second half scalar).
            for (int64_t j = vis; j < nkp; ++j) pi[j] = (T)-INFINITY;
#pragma omp simd
            for (int64_t j = 0; j < nkp; ++j) {
              const T p = expT(pi[j] - lse);
              dpi[j] = p * (dpi[j] - delta) * scale;
              pi[j] = p;
            }
          }
        }
        gemm(false, false, i1 - i0, Dh, nkp, (T)1, dP + i0 * nk, nk, k + k0 * Ck, Ck, first ? (T)0 : (T)1,
             dq + (q0 + i0) * C, C);  // dQ += dS K
      }
      const int64_t keyStep = diagonal ? kPanel : nk;
      const T kvBeta = w.fresh[k0 / kBlock] ? (T)0 : (T)1;
      w.fresh[k0 / kBlock] = 0;
      for (int64_t j0 = 0; j0 < nk; j0 += keyStep) {
        // Keys j0 .. j0+keyStep-1: seen by the query rows from iFirst on.
        const int64_t nj = std::min(nk, j0 + keyStep) - j0, iFirst = diagonal ? j0 : 0;
        gemm(true, false, nj, Dh, nq - iFirst, (T)1, P + iFirst * nk + j0, nk, dy + (q0 + iFirst) * Cy, Cy, kvBeta,
             dv + (k0 + j0) * Ck, Ck);  // dV += P^T dY
        gemm(true, false, nj, Dh, nq - iFirst, (T)1, dP + iFirst * nk + j0, nk, q + (q0 + iFirst) * C, C, kvBeta,
             dk + (k0 + j0) * Ck, Ck);  // dK += dS^T Q
      }
      first = false;
    }
    if (first)  // every key tile masked: no gradient
      for (int64_t i = 0; i < nq; ++i) std::fill(dq + (q0 + i) * C, dq + (q0 + i) * C + Dh, (T)0);
  }
}

/* biased_attention's bias (input 4) as strides over [B, H, Tq, Tk], 0 along the dims
   it broadcasts; none (null) for a rank-0 bias, which shifts every score alike. */
struct BiasLayout {
  bool present = false;
  Shape dims;  // [nB, nH, nT, nS]
  int64_t sB = 0, sH = 0, sT = 0, sS = 0;
};
BiasLayout biasLayout(const KernelCall &call) {
  BiasLayout L;
  const Shape &bias = call.in[4].shape();
  if (bias.empty()) return L;
  L.present = true;
  L.dims = shapes::attentionBias4(bias);
  L.sS = L.dims[3] == 1 ? 0 : 1;
  L.sT = L.dims[2] == 1 ? 0 : L.dims[3];
  L.sH = L.dims[1] == 1 ? 0 : L.dims[2] * L.dims[3];
  L.sB = L.dims[0] == 1 ? 0 : L.dims[1] * L.dims[2] * L.dims[3];
  return L;
}

/* The scale of biased_attention: its attribute, or 1/sqrt(Dh) for 0. */
template <typename T> T scoreScale(const KernelCall &call, const Dims3 &d) {
  const double s = call.attrs.getFloat("scale");
  return s == 0 ? (T)(1.0 / std::sqrt((double)d.Dh)) : (T)s;
}

/* The extras of (b, h); dbias: the bias's gradient (whole), or null. */
template <typename T>
ScoreExtras<T> extrasOf(const KernelCall &call, const Dims3 &d, const BiasLayout &L, int64_t b, int64_t h, T *dbias) {
  ScoreExtras<T> x;
  x.scale = scoreScale<T>(call, d);
  if (L.present) {
    const int64_t off = b * L.sB + h * L.sH;
    x.bias = call.in[4].as<T>() + off, x.biasT = L.sT, x.biasS = L.sS;
    if (dbias) x.dbias = dbias + off;
  }
  if (!call.in[5].shape().empty()) x.seg = call.in[5].as<int32_t>() + b * d.Tq;
  const double p = call.attrs.getFloat("dropout");
  if (p > 0) {
    x.drop = true;
    const bool parts = call.in[6].shape().size() == 3;  // a rank's heads (dropout_math.h)
    const int32_t *key = call.in[6].as<int32_t>();
    x.dropStream = lmc::dropoutStream(key + 2 * b, call.attrs.getInt("site"));
    x.dropThreshold = lmc::dropoutThreshold(p);
    x.dropScale = (T)(1.0 / (1.0 - p));
    x.dropBase = (int64_t)lmc::dropoutPartBase(key, parts, d.B, b, (uint64_t)(d.H * d.Tq * d.Tk)) + h * d.Tq * d.Tk;
    x.dropTk = d.Tk;
  }
  return x;
}

/* attention_grad, masked_attention_grad and (stats) attention_grad_stats, which reads the
   forward's y and lse (inputs 3 and 4) instead of recomputing them; packed:
   packed_attention_grad_stats (qkv, y, lse, dy) -> dqkv. */
template <typename T> void attentionGradT(const KernelCall &call, bool masked, bool stats = false, bool packed = false) {
  Dims3 d = dimsOf(call, packed);
  bool causal = call.attrs.getBool("causal");
  const size_t yIn = packed ? 1 : 3;  // the saved y, then lse and dy (stats)
  const T *q = call.in[0].as<T>(), *k = call.in[packed ? 0 : 1].as<T>() + d.kCol,
          *v = call.in[packed ? 0 : 2].as<T>() + d.vCol, *dy = call.in[stats ? yIn + 2 : masked ? 4 : 3].as<T>();
  const T *savedY = stats ? call.in[yIn].as<T>() : nullptr, *savedLse = stats ? call.in[yIn + 1].as<T>() : nullptr;
  T *dq = call.out[0].as<T>(), *dk = call.out[packed ? 0 : 1].as<T>() + d.kCol,
    *dv = call.out[packed ? 0 : 2].as<T>() + d.vCol;
  if (call.out[0].numel() == 0) return;
  singleThreadedBlas();
  // One work item per (batch, key/value head): it owns that head's dk and dv, and its
  // query heads add into them in head order, so no two threads write one element.
  int64_t pairs = d.B * d.Hkv;
  bool par = pairs > 1 && d.B * d.H * d.Tq * d.Tk * d.Dh >= kParallelWork;
#pragma omp parallel if (par)
  {
    BwdScratch<T> w(d);
#pragma omp for schedule(dynamic, 1)
    for (int64_t bg = 0; bg < pairs; ++bg) {
      int64_t b = bg / d.Hkv, g = bg % d.Hkv;
      int64_t kvBase = b * d.Tk * d.Ck + g * d.Dh;
      w.beginKeyHead();
      for (int64_t h = g * d.group(); h < (g + 1) * d.group(); ++h) {
        int64_t base = b * d.Tq * d.C + h * d.Dh, yBase = b * d.Tq * d.Cy + h * d.Dh;
        backwardHead(d, causal, q + base, k + kvBase, v + kvBase, dy + yBase, dq + base, dk + kvBase, dv + kvBase, w,
                     maskRow<T>(call, masked, b, d), savedY ? savedY + yBase : nullptr,
                     savedLse ? savedLse + (b * d.H + h) * d.Tq : nullptr);
      }
      w.endKeyHead(d, dk + kvBase, dv + kvBase);
    }
  }
}

void runAttentionGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionGradT<decltype(t)>(call, false); });
}
void runMaskedAttentionGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionGradT<decltype(t)>(call, true); });
}
void runAttentionGradStats(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionGradT<decltype(t)>(call, false, true); });
}
void runPackedAttentionGradStats(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { attentionGradT<decltype(t)>(call, false, true, true); });
}

// ----------------------------------------------------------------------------
// biased_attention: (q, k, v, mask, bias, segments, key) -> y, and its grad (.., dy)
// -> (dq, dk, dv, dbias). A rank-0 mask, segments or key operand is none.

std::string checkBiasedCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs, Shape &shape) {
  LMRT_CHECK(expectFloat(op, "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "k", in[1], "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "v", in[2], "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "mask", in[3], "q", in[0]));
  LMRT_CHECK(expectSameDType(op, "bias", in[4], "q", in[0]));
  LMRT_CHECK(expectI32(op, "segments", in[5]));
  LMRT_CHECK(expectI32(op, "key", in[6]));
  std::string err;
  auto s = shapes::biasedAttention(in[0].shape, in[1].shape, in[2].shape, in[3].shape, in[4].shape, in[5].shape,
                                   in[6].shape, attrs.getInt("num_heads"), attrs.getFloat("scale"),
                                   attrs.getFloat("dropout"), err, attrs.getInt("num_kv_heads"),
                                   attrs.getBool("causal"));
  if (!s) return std::string(op) + err.substr(err.find(':'));
  shape = *s;
  return "";
}

std::string checkBiasedAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                 const Attrs &attrs) {
  return guardCheck("biased_attention", in, out, 7, 1, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkBiasedCommon("biased_attention", in, attrs, s));
    return expectType("biased_attention", "out", out[0], in[0].dtype, s);
  });
}

std::string checkBiasedAttentionGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                     const Attrs &attrs) {
  const char *op = "biased_attention_grad";
  return guardCheck(op, in, out, 8, 4, [&]() -> std::string {
    Shape s;
    LMRT_CHECK(checkBiasedCommon(op, in, attrs, s));
    LMRT_CHECK(expectType(op, "dy", in[7], in[0].dtype, s));
    LMRT_CHECK(expectType(op, "dq", out[0], in[0].dtype, s));
    LMRT_CHECK(expectType(op, "dk", out[1], in[0].dtype, in[1].shape));
    LMRT_CHECK(expectType(op, "dv", out[2], in[0].dtype, in[1].shape));
    return expectType(op, "dbias", out[3], in[0].dtype, in[4].shape);
  });
}

template <typename T> const T *maskOf(const KernelCall &call, int64_t b, const Dims3 &d) {
  return call.in[3].shape().empty() ? nullptr : call.in[3].as<T>() + b * d.Tk;
}

template <typename T> void biasedAttentionT(const KernelCall &call) {
  Dims3 d = dimsOf(call);
  bool causal = call.attrs.getBool("causal");
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>();
  T *y = call.out[0].as<T>();
  if (call.out[0].numel() == 0) return;
  const BiasLayout L = biasLayout(call);
  singleThreadedBlas();
  const int64_t qBlocks = (d.Tq + kBlock - 1) / kBlock, items = d.B * d.H * qBlocks;
  bool par = items > 1 && d.B * d.H * d.Tq * d.Tk * d.Dh >= kParallelWork;
#pragma omp parallel if (par)
  {
    FwdScratch<T> w(d.Dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      int64_t bh = item / qBlocks, qb = item % qBlocks;
      int64_t b = bh / d.H, h = bh % d.H;
      int64_t base = b * d.Tq * d.C + h * d.Dh, kvBase = b * d.Tk * d.Ck + (h / d.group()) * d.Dh;
      int64_t q0 = qb * kBlock;
      const ScoreExtras<T> x = extrasOf<T>(call, d, L, b, h, nullptr);
      forwardBlock(d, causal, q + base, k + kvBase, v + kvBase, q0, std::min(kBlock, d.Tq - q0), y + base, d.C,
                   (T *)nullptr, w, 0, maskOf<T>(call, b, d), &x);
    }
  }
}

/* One work item per (batch, key/value head) as attention_grad's, except that batch rows
   (heads) sharing the bias's gradient, where it broadcasts over B (H), are one item
   taking them in order: no two threads add into one element of dbias. */
template <typename T> void biasedAttentionGradT(const KernelCall &call) {
  Dims3 d = dimsOf(call);
  bool causal = call.attrs.getBool("causal");
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>(), *dy = call.in[7].as<T>();
  T *dq = call.out[0].as<T>(), *dk = call.out[1].as<T>(), *dv = call.out[2].as<T>(), *dbias = call.out[3].as<T>();
  std::fill(dbias, dbias + call.out[3].numel(), (T)0);  // a rank-0 bias's gradient stays 0
  if (call.out[0].numel() == 0) return;
  const BiasLayout L = biasLayout(call);
  singleThreadedBlas();
  const bool sharedB = L.present && L.dims[0] == 1, sharedH = L.present && L.dims[1] == 1;
  const int64_t bItems = sharedB ? 1 : d.B, gItems = sharedH ? 1 : d.Hkv, items = bItems * gItems;
  bool par = items > 1 && d.B * d.H * d.Tq * d.Tk * d.Dh >= kParallelWork;
#pragma omp parallel if (par)
  {
    BwdScratch<T> w(d);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t bi = item / gItems, gi = item % gItems;
      for (int64_t b = sharedB ? 0 : bi; b < (sharedB ? d.B : bi + 1); ++b)
        for (int64_t g = sharedH ? 0 : gi; g < (sharedH ? d.Hkv : gi + 1); ++g) {
          int64_t kvBase = b * d.Tk * d.Ck + g * d.Dh;
          w.beginKeyHead();
          for (int64_t h = g * d.group(); h < (g + 1) * d.group(); ++h) {
            int64_t base = b * d.Tq * d.C + h * d.Dh;
            const ScoreExtras<T> x = extrasOf<T>(call, d, L, b, h, dbias);
            backwardHead(d, causal, q + base, k + kvBase, v + kvBase, dy + base, dq + base, dk + kvBase, dv + kvBase,
                         w, maskOf<T>(call, b, d), (const T *)nullptr, (const T *)nullptr, &x);
          }
          w.endKeyHead(d, dk + kvBase, dv + kvBase);
        }
    }
  }
}

void runBiasedAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { biasedAttentionT<decltype(t)>(call); });
}
void runBiasedAttentionGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { biasedAttentionGradT<decltype(t)>(call); });
}

// ----------------------------------------------------------------------------
// cached_attention: (q [B, C, H*Dh], k, v [B, W, Hkv*Dh], offset i32[]) -> y [B, C, H*Dh]

std::string checkCachedAttention(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                 const Attrs &attrs) {
  return guardCheck("cached_attention", in, out, 4, 1, [&]() -> std::string {
    const char *op = "cached_attention";
    LMRT_CHECK(expectFloat(op, "q", in[0]));
    LMRT_CHECK(expectSameDType(op, "k", in[1], "q", in[0]));
    LMRT_CHECK(expectSameDType(op, "v", in[2], "q", in[0]));
    LMRT_CHECK(expectI32(op, "offset", in[3]));
    std::string err;
    auto s = shapes::cachedAttention(in[0].shape, in[1].shape, in[2].shape, in[3].shape, attrs.getInt("num_heads"),
                                     err, attrs.getInt("num_kv_heads"));
    if (!s) return err;
    return expectType(op, "out", out[0], in[0].dtype, *s);
  });
}

/* The forward sweep of attention with the queries at positions offset ... offset + C - 1
   and the keys 0 ... W - 1 of the cache: query i sees keys 0 ... offset + i, as row
   offset + i of causal attention does. */
template <typename T> void cachedAttentionT(const KernelCall &call) {
  const Shape &qs = call.in[0].shape(), &ks = call.in[1].shape();
  const int64_t h = call.attrs.getInt("num_heads"), hkvAttr = call.attrs.getInt("num_kv_heads");
  const int64_t B = qs[0], Cq = qs[1], C = qs[2], W = ks[1], Ck = ks[2], hkv = hkvAttr == 0 ? h : hkvAttr;
  const int64_t offset = call.in[3].as<int32_t>()[0];
  if (offset < 0 || offset > W - Cq)
    fail("cached_attention: offset %lld with %lld new positions leaves the cache of %lld positions "
         "(it must be in [0, %lld])", (long long)offset, (long long)Cq, (long long)W, (long long)(W - Cq));
  Dims3 d{B, Cq, W, C, h, C / h, Ck, hkv};
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(), *v = call.in[2].as<T>();
  T *y = call.out[0].as<T>();
  if (call.out[0].numel() == 0) return;
  singleThreadedBlas();
  const int64_t qBlocks = (Cq + kBlock - 1) / kBlock, items = B * h * qBlocks;
  bool par = items > 1 && B * h * Cq * (offset + Cq) * d.Dh >= kParallelWork;
#pragma omp parallel if (par)
  {
    FwdScratch<T> w(d.Dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      int64_t bh = item / qBlocks, qb = item % qBlocks;
      int64_t b = bh / h, hh = bh % h;
      int64_t base = b * Cq * C + hh * d.Dh, kvBase = b * W * Ck + (hh / d.group()) * d.Dh;
      int64_t q0 = qb * kBlock;
      forwardBlock(d, true, q + base, k + kvBase, v + kvBase, q0, std::min(kBlock, Cq - q0), y + base, C,
                   (T *)nullptr, w, offset);
    }
  }
}

void runCachedAttention(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { cachedAttentionT<decltype(t)>(call); });
}

}  // namespace

void addAttentionKernels(std::vector<KernelDef> &k) {
  k.push_back({"cached_attention", 4, 1, checkCachedAttention, runCachedAttention});
  k.push_back({"attention", 3, 1, checkAttention, runAttention});
  k.push_back({"attention_grad", 4, 3, checkAttentionGrad, runAttentionGrad});
  k.push_back({"masked_attention", 4, 1, checkMaskedAttention, runMaskedAttention});
  k.push_back({"masked_attention_grad", 5, 3, checkMaskedAttentionGrad, runMaskedAttentionGrad});
  k.push_back({"attention_stats", 3, 2, checkAttentionStats, runAttentionStats});
  k.push_back({"attention_grad_stats", 6, 3, checkAttentionGradStats, runAttentionGradStats});
  k.push_back({"biased_attention", 7, 1, checkBiasedAttention, runBiasedAttention});
  k.push_back({"biased_attention_grad", 8, 4, checkBiasedAttentionGrad, runBiasedAttentionGrad});
  k.push_back({"packed_attention", 1, 1, checkPackedAttention, runPackedAttention});
  k.push_back({"packed_attention_stats", 1, 2, checkPackedAttentionStats, runPackedAttentionStats});
  k.push_back({"packed_attention_grad_stats", 4, 1, checkPackedAttentionGradStats, runPackedAttentionGradStats});
}

}  // namespace lmrt::kernels::detail
