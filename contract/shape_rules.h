/* Implements: the shape rules of every lm op, in plain C++ (no MLIR, no BLAS).
   One source of truth used by the dialect's verifiers, the frontend's type checks
   and the runtime's plan validation, so the three can never disagree.
   Each function returns the result shape, or std::nullopt with `err` set to a
   message that names the op and both offending shapes. */
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lmrt::shapes {

using Dims = std::vector<int64_t>;

std::string str(const Dims &d);  // "[2, 3, 4]"

/* NumPy broadcasting of two shapes ("add", "sub", "mul", "div"); `op` names the
   op in the message. */
std::optional<Dims> broadcast(const Dims &a, const Dims &b, std::string &err,
                              const char *op = "broadcast");
/* True when `to` broadcasts to `from` (the rule of lm.sum_to). */
bool sumTo(const Dims &from, const Dims &to, std::string &err);
/* "" when every dim is >= 0, else a message naming `what` and the shape. */
std::string checkDims(const char *op, const char *what, const Dims &d);
std::optional<Dims> matmul(const Dims &lhs, const Dims &rhs, bool transposeLhs, bool transposeRhs,
                           std::string &err);
std::optional<Dims> embedding(const Dims &table, const Dims &ids, std::string &err);
/* base [V, D] plus the rows dy [...ids, D] scattered by ids (embedding_grad_add): base. */
std::optional<Dims> embeddingGradAdd(const Dims &base, const Dims &ids, const Dims &dy, std::string &err);
std::optional<Dims> layerNorm(const Dims &x, const Dims &gamma, const Dims &beta, std::string &err);
/* q [B, Tq, H*Dh], k and v [B, Tk, Hkv*Dh] with Hkv = numKvHeads (0: H) dividing H;
   Tk may differ from Tq (cross-attention) only when not causal. With `mask` (the key
   padding mask of masked_attention) it must be [B, Tk]. Returns q's shape. */
std::optional<Dims> attention(const Dims &q, const Dims &k, const Dims &v, int64_t numHeads,
                              std::string &err, int64_t numKvHeads = 0, bool causal = false,
                              const Dims *mask = nullptr);
/* biased_attention (and its grad): attention() of q, k, v with `mask` [B, Tk] or rank 0
   (none); `bias` of rank <= 4 broadcasting (NumPy rules) to [B, H, Tq, Tk]; `segments`
   [B, Tq] with Tq = Tk (self-attention) or rank 0 (none); `scale` >= 0 and finite
   (0: 1/sqrt(Dh)); `dropout` (the probabilities' rate) in [0, 1), with `key` [B, 2]
   (the dropout_key input) when it is > 0 and rank 0 (none) when it is 0. Returns q's
   shape. */
std::optional<Dims> biasedAttention(const Dims &q, const Dims &k, const Dims &v, const Dims &mask, const Dims &bias,
                                    const Dims &segments, const Dims &key, int64_t numHeads, double scale,
                                    double dropout, std::string &err, int64_t numKvHeads = 0, bool causal = false);
/* A bias broadcasting to [B, H, Tq, Tk] as its four dims, 1 where it has none. */
Dims attentionBias4(const Dims &bias);
/* The row logsumexp of attention over q [B, Tq, H*Dh] (attention_stats, attention_grad_stats):
   [B, H, Tq]. q must already satisfy attention(). */
Dims attentionLse(const Dims &q, int64_t numHeads);
/* The packed attention ops: qkv [B, T, (H + 2*Hkv)*Dh] holds q, k, v as column blocks
   (q's H*Dh columns, then k's and v's Hkv*Dh each), which must satisfy attention()
   (Tk = Tq: one sequence). Returns q's shape [B, T, H*Dh]. */
std::optional<Dims> packedAttention(const Dims &qkv, int64_t numHeads, std::string &err, int64_t numKvHeads = 0,
                                    bool causal = false);
/* x [..., D] and gamma [D]. */
std::optional<Dims> rmsNorm(const Dims &x, const Dims &gamma, std::string &err);
/* The broadcast of cond, a and b (lm.where). */
std::optional<Dims> where(const Dims &cond, const Dims &a, const Dims &b, std::string &err);
/* a and b agreeing but along `axis`, which adds up. */
std::optional<Dims> concat(const Dims &a, const Dims &b, int64_t axis, std::string &err);
/* x with the sorted, distinct `axes` set to 1 (lm.reduce_max; `op` names it). */
std::optional<Dims> reduceAxes(const Dims &x, const Dims &axes, std::string &err, const char *op = "reduce_max");
std::optional<Dims> transpose(const Dims &x, const Dims &permutation, std::string &err);
/* The collectives (docs/distributed.md): `meshAxis` 0 (data) or 1 (tensor), `groupSize` >= 1.
   all_reduce: x; all_gather: x with dim `dim` times groupSize; reduce_scatter: x with dim `dim`
   divided by groupSize, which must divide it. `op` names the op in messages. */
std::optional<Dims> collective(const char *op, const Dims &x, int64_t meshAxis, int64_t groupSize, int64_t dim,
                               std::string &err);
/* axis_index: a rank-0 result, on the mesh axes and group sizes the collectives accept. */
std::optional<Dims> axisIndex(int64_t meshAxis, int64_t groupSize, std::string &err);
std::optional<Dims> reshape(const Dims &x, const Dims &to, std::string &err);
std::optional<Dims> slice(const Dims &x, const Dims &start, const Dims &limit, const Dims &stride,
                          std::string &err);
/* Incremental decoding (docs/runtime.md). dynamic_slice: x with dim `axis` set
   to `size` (offset is i32[], checked at run time); `start` >= 0 and
   start + size <= the dim. */
std::optional<Dims> dynamicSlice(const Dims &x, const Dims &offset, int64_t axis, int64_t start, int64_t size,
                                 std::string &err);
/* cache_write: cache [B, W, D] and x [B, C, D] with C <= W; returns the cache's shape. */
std::optional<Dims> cacheWrite(const Dims &cache, const Dims &x, const Dims &offset, std::string &err);
/* cached_attention: q [B, C, H*Dh] over k, v [B, W, Hkv*Dh] (C <= W); returns q's shape. */
std::optional<Dims> cachedAttention(const Dims &q, const Dims &k, const Dims &v, const Dims &offset,
                                    int64_t numHeads, std::string &err, int64_t numKvHeads = 0);
/* "" when layer_norm's epsilon, which sits under a square root next to a
   variance that may be 0, is finite and > 0; else "layer_norm: epsilon must be
   finite and > 0, got <eps>" (`op` names layer_norm or layer_norm_grad). The one
   rule of the verifiers, the frontend and the kernel checks. */
std::string layerNormEpsilon(double epsilon, const char *op = "layer_norm");
/* Returns the scalar shape {} when logits [...S, V] and targets [...S] agree. */
std::optional<Dims> crossEntropy(const Dims &logits, const Dims &targets, std::string &err);
/* lm.linear_cross_entropy(_with_grad): h [...S, D] (rank >= 2), w [V, D] with
   transposeRhs or [D, V] without, targets [...S]. Returns the loss's scalar shape {};
   dh and dw have the shapes of h and w. */
std::optional<Dims> linearCrossEntropy(const Dims &h, const Dims &w, const Dims &targets, bool transposeRhs,
                                       std::string &err);
/* lm.linear_cross_entropy_stats: linearCrossEntropy's operands (w the rank's
   vocabulary rows) and bias [Vr], messages naming `op`. Returns the per-row shape
   [...S] (targets') of lse, target_logit, max and argmax; `rows`, when given (the _grad
   op's lse, dlse, dtarget), must each be that shape. */
std::optional<Dims> linearCrossEntropyStats(const Dims &h, const Dims &w, const Dims &targets, const Dims &bias,
                                            bool transposeRhs, std::string &err,
                                            const char *op = "linear_cross_entropy_stats",
                                            const std::vector<std::pair<const char *, const Dims *>> &rows = {});
/* lm.take_along_axis: x and indices of one rank; along every dim but `axis`
   (in [0, rank)) indices has x's size or 1 (it broadcasts). The result is x's
   shape with indices' size along `axis`. `op` names the op in the message. */
std::optional<Dims> takeAlongAxis(const Dims &x, const Dims &indices, int64_t axis, std::string &err,
                                  const char *op = "take_along_axis");
/* lm.sample: logits [...S, V] (V >= 1) and bits [...S] give ids [...S]. */
std::optional<Dims> sample(const Dims &logits, const Dims &bits, std::string &err);
/* lm.dropout: x [R, ...] (rank >= 1) and its rows' keys [R, 2] give x's shape. */
std::optional<Dims> dropout(const Dims &x, const Dims &key, std::string &err);
/* dropout's rate: "" when 0 <= p < 1, else the message (`op` names the op). */
std::string dropoutRate(double p, const char *op = "dropout");

}  // namespace lmrt::shapes
