/* Implements: the shape rules of every lm op (see docs/dialect.md), shared by the
   dialect verifiers, the frontend and the runtime's plan validation. Every error
   message starts with the op name and quotes the offending shapes. */
#include "contract/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace lmrt::shapes {

std::string str(const Dims &d) {
  std::string r = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(d[i]);
  }
  return r + "]";
}

std::string checkDims(const char *op, const char *what, const Dims &d) {
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] < 0)
      return std::string(op) + ": " + what + " " + str(d) + " has negative dimension " +
             std::to_string(d[i]) + " at index " + std::to_string(i);
  return "";
}

namespace {

// Sets err and returns nullopt, so every rule below can `return bad(err, ...)`.
std::nullopt_t bad(std::string &err, std::string msg) {
  err = std::move(msg);
  return std::nullopt;
}

// Checks each named shape for negative dims; returns false with err set on the first bad one.
bool dimsOk(std::string &err, const char *op, std::initializer_list<std::pair<const char *, const Dims *>> all) {
  for (auto &[what, d] : all) {
    std::string e = checkDims(op, what, *d);
    if (!e.empty()) {
      err = e;
      return false;
    }
  }
  return true;
}

std::string S(const Dims &d) { return str(d); }
std::string I(int64_t v) { return std::to_string(v); }

}  // namespace

std::optional<Dims> broadcast(const Dims &a, const Dims &b, std::string &err, const char *op) {
  if (!dimsOk(err, op, {{"lhs", &a}, {"rhs", &b}})) return std::nullopt;
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    // Align trailing dims: position i counts from the right.
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return bad(err, std::string(op) + ": shapes " + S(a) + " and " + S(b) +
                          " do not broadcast: dimension " + I(da) + " vs " + I(db) + " at position " +
                          I(-(int64_t)i - 1) + " from the end");
    out[r - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

bool sumTo(const Dims &from, const Dims &to, std::string &err) {
  if (!dimsOk(err, "sum_to", {{"operand", &from}, {"result", &to}})) return false;
  if (to.size() > from.size()) {
    err = "sum_to: result " + S(to) + " has higher rank than operand " + S(from);
    return false;
  }
  for (size_t i = 0; i < to.size(); ++i) {
    int64_t dt = to[to.size() - 1 - i], df = from[from.size() - 1 - i];
    if (dt != df && dt != 1) {
      err = "sum_to: result " + S(to) + " does not broadcast to operand " + S(from) + ": dimension " +
            I(dt) + " vs " + I(df) + " at position " + I(-(int64_t)i - 1) + " from the end";
      return false;
    }
  }
  return true;
}

std::optional<Dims> matmul(const Dims &lhs, const Dims &rhs, bool transposeLhs, bool transposeRhs,
                           std::string &err) {
  if (!dimsOk(err, "matmul", {{"lhs", &lhs}, {"rhs", &rhs}})) return std::nullopt;
  if (lhs.size() < 2) return bad(err, "matmul: lhs " + S(lhs) + " must have rank >= 2");
  if (rhs.size() != 2 && rhs.size() != lhs.size())
    return bad(err, "matmul: rhs " + S(rhs) + " must have rank 2 or the rank of lhs " + S(lhs));
  size_t r = lhs.size();
  int64_t m = transposeLhs ? lhs[r - 1] : lhs[r - 2];
  int64_t kl = transposeLhs ? lhs[r - 2] : lhs[r - 1];
  size_t rr = rhs.size();
  int64_t kr = transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  int64_t n = transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  if (kl != kr)
    return bad(err, "matmul: contracted dimensions differ: lhs " + S(lhs) + " has K = " + I(kl) +
                        ", rhs " + S(rhs) + " has K = " + I(kr));
  Dims out(lhs.begin(), lhs.end() - 2);
  if (rr == r)
    for (size_t i = 0; i + 2 < r; ++i)
      if (lhs[i] != rhs[i])
        return bad(err, "matmul: batch dimensions differ: lhs " + S(lhs) + " and rhs " + S(rhs) +
                            " at dimension " + I((int64_t)i) + " (" + I(lhs[i]) + " vs " + I(rhs[i]) + ")");
  out.push_back(m);
  out.push_back(n);
  return out;
}

std::optional<Dims> embedding(const Dims &table, const Dims &ids, std::string &err) {
  if (!dimsOk(err, "embedding", {{"table", &table}, {"ids", &ids}})) return std::nullopt;
  if (table.size() != 2) return bad(err, "embedding: table " + S(table) + " must have rank 2 [V, D]");
  Dims out = ids;
  out.push_back(table[1]);
  return out;
}

std::optional<Dims> embeddingGradAdd(const Dims &base, const Dims &ids, const Dims &dy, std::string &err) {
  if (!dimsOk(err, "embedding_grad_add", {{"base", &base}, {"ids", &ids}, {"dy", &dy}})) return std::nullopt;
  if (base.size() != 2) return bad(err, "embedding_grad_add: base " + S(base) + " must have rank 2 [V, D]");
  Dims rows = ids;
  rows.push_back(base[1]);
  if (dy != rows)
    return bad(err, "embedding_grad_add: dy " + S(dy) + " must be " + S(rows) + " (ids " + S(ids) +
                        " with D of base " + S(base) + ")");
  return base;
}

std::optional<Dims> layerNorm(const Dims &x, const Dims &gamma, const Dims &beta, std::string &err) {
  if (!dimsOk(err, "layer_norm", {{"x", &x}, {"gamma", &gamma}, {"beta", &beta}})) return std::nullopt;
  if (x.empty()) return bad(err, "layer_norm: x " + S(x) + " must have rank >= 1");
  Dims d{x.back()};
  if (gamma != d)
    return bad(err, "layer_norm: gamma " + S(gamma) + " must be " + S(d) + " (the last dim of x " + S(x) + ")");
  if (beta != d)
    return bad(err, "layer_norm: beta " + S(beta) + " must be " + S(d) + " (the last dim of x " + S(x) + ")");
  return x;
}

std::string layerNormEpsilon(double epsilon, const char *op) {
  // Written so that NaN, which fails every comparison, is rejected too.
  if (std::isfinite(epsilon) && epsilon > 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", epsilon);
  return std::string(op) + ": epsilon must be finite and > 0, got " + buf;
}

std::optional<Dims> attention(const Dims &q, const Dims &k, const Dims &v, int64_t numHeads,
                              std::string &err, int64_t numKvHeads, bool causal, const Dims *mask) {
  if (!dimsOk(err, "attention", {{"q", &q}, {"k", &k}, {"v", &v}})) return std::nullopt;
  if (mask && !dimsOk(err, "attention", {{"mask", mask}})) return std::nullopt;
  if (q.size() != 3) return bad(err, "attention: q " + S(q) + " must have rank 3 [B, T, H*Dh]");
  if (numHeads < 1) return bad(err, "attention: num_heads = " + I(numHeads) + " must be >= 1");
  if (q[2] % numHeads != 0)
    return bad(err, "attention: last dim of q " + S(q) + " (" + I(q[2]) + ") is not divisible by num_heads = " +
                        I(numHeads));
  if (numKvHeads < 0) return bad(err, "attention: num_kv_heads = " + I(numKvHeads) + " must be >= 0");
  int64_t kvHeads = numKvHeads == 0 ? numHeads : numKvHeads;
  if (numHeads % kvHeads != 0)
    return bad(err, "attention: num_kv_heads = " + I(kvHeads) + " does not divide num_heads = " + I(numHeads));
  // Keys may be of another length than the queries (cross-attention): k is [B, Tk, Hkv*Dh].
  const int64_t tk = k.size() == 3 ? k[1] : q[1];
  Dims kv{q[0], tk, q[2] / numHeads * kvHeads};
  if (k != kv)
    return bad(err, "attention: k " + S(k) + " must be " + S(kv) + " (" + I(kvHeads) +
                        " key/value heads of q " + S(q) + ", any number of keys)");
  if (v != k) return bad(err, "attention: v " + S(v) + " must have the shape of k " + S(k));
  // A causal mask compares query and key positions, which only means something when
  // both index the same sequence.
  if (causal && tk != q[1])
    return bad(err, "attention: causal attention needs as many keys as queries, got k " + S(k) + " for q " + S(q) +
                        " (cross-attention is not causal)");
  if (mask && *mask != Dims{q[0], tk})
    return bad(err, "attention: mask " + S(*mask) + " must be " + S(Dims{q[0], tk}) +
                        " [B, Tk] (1 on keys to attend, 0 on padding)");
  return q;
}

Dims attentionLse(const Dims &q, int64_t numHeads) { return {q[0], numHeads, q[1]}; }

std::optional<Dims> packedAttention(const Dims &qkv, int64_t numHeads, std::string &err, int64_t numKvHeads,
                                    bool causal) {
  if (!dimsOk(err, "attention", {{"qkv", &qkv}})) return std::nullopt;
  if (qkv.size() != 3) return bad(err, "attention: qkv " + S(qkv) + " must have rank 3 [B, T, (H + 2*Hkv)*Dh]");
  if (numHeads < 1) return bad(err, "attention: num_heads = " + I(numHeads) + " must be >= 1");
  if (numKvHeads < 0) return bad(err, "attention: num_kv_heads = " + I(numKvHeads) + " must be >= 0");
  const int64_t kvHeads = numKvHeads == 0 ? numHeads : numKvHeads, blocks = numHeads + 2 * kvHeads;
  if (qkv[2] % blocks != 0)
    return bad(err, "attention: last dim of qkv " + S(qkv) + " (" + I(qkv[2]) +
                        ") is not divisible by num_heads + 2 * num_kv_heads = " + I(blocks));
  const int64_t dh = qkv[2] / blocks;
  const Dims q{qkv[0], qkv[1], numHeads * dh}, k{qkv[0], qkv[1], kvHeads * dh};
  return attention(q, k, k, numHeads, err, numKvHeads, causal);
}

std::optional<Dims> biasedAttention(const Dims &q, const Dims &k, const Dims &v, const Dims &mask, const Dims &bias,
                                    const Dims &segments, const Dims &key, int64_t numHeads, double scale,
                                    double dropout, std::string &err, int64_t numKvHeads, bool causal) {
  if (!dimsOk(err, "attention", {{"bias", &bias}, {"segments", &segments}, {"key", &key}})) return std::nullopt;
  auto out = attention(q, k, v, numHeads, err, numKvHeads, causal, mask.empty() ? nullptr : &mask);
  if (!out) return std::nullopt;
  // Written so that NaN, which fails every comparison, is rejected too.
  if (!(std::isfinite(scale) && scale >= 0)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", scale);
    return bad(err, std::string("attention: scale must be finite and >= 0 (0 means 1/sqrt(head size)), got ") + buf);
  }
  const Dims full{q[0], numHeads, q[1], k[1]};
  if (bias.size() > 4)
    return bad(err, "attention: bias " + S(bias) + " must have rank <= 4 and broadcast to " + S(full) +
                        " [B, H, Tq, Tk]");
  for (size_t i = 0; i < bias.size(); ++i) {
    const int64_t db = bias[bias.size() - 1 - i], df = full[3 - i];
    if (db != 1 && db != df)
      return bad(err, "attention: bias " + S(bias) + " does not broadcast to " + S(full) +
                          " [B, H, Tq, Tk]: dimension " + I(db) + " vs " + I(df) + " at position " +
                          I(-(int64_t)i - 1) + " from the end");
  }
  if (!segments.empty()) {
    if (k[1] != q[1])
      return bad(err, "attention: segments need self-attention (keys use the queries' ids), got k " + S(k) +
                          " for q " + S(q));
    if (segments != Dims{q[0], q[1]})
      return bad(err, "attention: segments " + S(segments) + " must be " + S(Dims{q[0], q[1]}) +
                          " [B, T] (one document id a token)");
  }
  if (std::string e = dropoutRate(dropout, "attention"); !e.empty()) return bad(err, e);
  if (dropout > 0 && key != Dims{q[0], 2} && key != Dims{2, q[0], 2})
    return bad(err, "attention: dropout > 0 needs key " + S(key) + " to be " + S(Dims{q[0], 2}) +
                        " (two i32 words a batch row: the dropout_key input) or " + S(Dims{2, q[0], 2}) +
                        " (the key of a part of the heads: contract/dropout_math.h)");
  if (dropout == 0 && !key.empty())
    return bad(err, "attention: key " + S(key) + " must be rank 0 (none) without dropout");
  return out;
}

Dims attentionBias4(const Dims &bias) {
  Dims d(4, 1);
  for (size_t i = 0; i < bias.size() && i < 4; ++i) d[3 - i] = bias[bias.size() - 1 - i];
  return d;
}

namespace {
std::optional<Dims> offsetScalar(const char *op, const Dims &offset, std::string &err) {
  if (!offset.empty())
    return bad(err, std::string(op) + ": offset " + S(offset) + " must be a scalar (the position offset)");
  return Dims{};
}
}  // namespace

std::optional<Dims> dynamicSlice(const Dims &x, const Dims &offset, int64_t axis, int64_t start, int64_t size,
                                 std::string &err) {
  if (!dimsOk(err, "dynamic_slice", {{"x", &x}})) return std::nullopt;
  if (!offsetScalar("dynamic_slice", offset, err)) return std::nullopt;
  if (axis < 0 || axis >= (int64_t)x.size())
    return bad(err, "dynamic_slice: axis = " + I(axis) + " is not a dimension of x " + S(x));
  if (start < 0 || size < 1 || start > x[axis] || size > x[axis] - start)
    return bad(err, "dynamic_slice: start = " + I(start) + " and size = " + I(size) + " must satisfy 0 <= start, " +
                        "1 <= size and start + size <= " + I(x[axis]) + " (dimension " + I(axis) + " of x " + S(x) +
                        ")");
  Dims r = x;
  r[axis] = size;
  return r;
}

std::optional<Dims> cacheWrite(const Dims &cache, const Dims &x, const Dims &offset, std::string &err) {
  if (!dimsOk(err, "cache_write", {{"cache", &cache}, {"x", &x}})) return std::nullopt;
  if (!offsetScalar("cache_write", offset, err)) return std::nullopt;
  if (cache.size() != 3) return bad(err, "cache_write: cache " + S(cache) + " must have rank 3 [B, W, D]");
  if (x.size() != 3 || x[0] != cache[0] || x[2] != cache[2] || x[1] > cache[1])
    return bad(err, "cache_write: x " + S(x) + " must be [" + I(cache[0]) + ", C <= " + I(cache[1]) + ", " +
                        I(cache[2]) + "] to fit the cache " + S(cache));
  return cache;
}

std::optional<Dims> cachedAttention(const Dims &q, const Dims &k, const Dims &v, const Dims &offset,
                                    int64_t numHeads, std::string &err, int64_t numKvHeads) {
  if (!dimsOk(err, "cached_attention", {{"q", &q}, {"k", &k}, {"v", &v}})) return std::nullopt;
  if (!offsetScalar("cached_attention", offset, err)) return std::nullopt;
  if (q.size() != 3) return bad(err, "cached_attention: q " + S(q) + " must have rank 3 [B, C, H*Dh]");
  if (numHeads < 1) return bad(err, "cached_attention: num_heads = " + I(numHeads) + " must be >= 1");
  if (q[2] % numHeads != 0)
    return bad(err, "cached_attention: last dim of q " + S(q) + " (" + I(q[2]) +
                        ") is not divisible by num_heads = " + I(numHeads));
  if (numKvHeads < 0) return bad(err, "cached_attention: num_kv_heads = " + I(numKvHeads) + " must be >= 0");
  int64_t kvHeads = numKvHeads == 0 ? numHeads : numKvHeads;
  if (numHeads % kvHeads != 0)
    return bad(err, "cached_attention: num_kv_heads = " + I(kvHeads) + " does not divide num_heads = " +
                        I(numHeads));
  const int64_t width = q[2] / numHeads * kvHeads;
  if (k.size() != 3 || k[0] != q[0] || k[1] < q[1] || k[2] != width)
    return bad(err, "cached_attention: the cache k " + S(k) + " must be [" + I(q[0]) + ", W >= " + I(q[1]) + ", " +
                        I(width) + "] (" + I(kvHeads) + " key/value heads of q " + S(q) + ")");
  if (v != k) return bad(err, "cached_attention: v " + S(v) + " must have the shape of k " + S(k));
  return q;
}

std::optional<Dims> rmsNorm(const Dims &x, const Dims &gamma, std::string &err) {
  if (!dimsOk(err, "rms_norm", {{"x", &x}, {"gamma", &gamma}})) return std::nullopt;
  if (x.empty()) return bad(err, "rms_norm: x " + S(x) + " must have rank >= 1");
  Dims d{x.back()};
  if (gamma != d)
    return bad(err, "rms_norm: gamma " + S(gamma) + " must be " + S(d) + " (the last dim of x " + S(x) + ")");
  return x;
}

std::optional<Dims> where(const Dims &cond, const Dims &a, const Dims &b, std::string &err) {
  auto ab = broadcast(a, b, err, "where");
  if (!ab) return std::nullopt;
  auto all = broadcast(cond, *ab, err, "where");
  if (!all) err = "where: cond " + S(cond) + " does not broadcast with the values " + S(*ab);
  return all;
}

std::optional<Dims> concat(const Dims &a, const Dims &b, int64_t axis, std::string &err) {
  if (!dimsOk(err, "concat", {{"lhs", &a}, {"rhs", &b}})) return std::nullopt;
  if (a.size() != b.size())
    return bad(err, "concat: lhs " + S(a) + " and rhs " + S(b) + " have different ranks");
  if (axis < 0 || axis >= (int64_t)a.size())
    return bad(err, "concat: axis " + I(axis) + " is outside the rank " + I((int64_t)a.size()) + " of " + S(a));
  Dims out = a;
  for (size_t i = 0; i < a.size(); ++i)
    if ((int64_t)i != axis && a[i] != b[i])
      return bad(err, "concat: lhs " + S(a) + " and rhs " + S(b) + " differ in dimension " + I((int64_t)i) +
                          " (only axis " + I(axis) + " may differ)");
  out[axis] = a[axis] + b[axis];
  return out;
}

std::optional<Dims> reduceAxes(const Dims &x, const Dims &axes, std::string &err, const char *op) {
  if (!dimsOk(err, op, {{"x", &x}})) return std::nullopt;
  if (axes.empty()) return bad(err, std::string(op) + ": axes must list at least one dimension");
  Dims out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= (int64_t)x.size())
      return bad(err, std::string(op) + ": axis " + I(axes[i]) + " is outside the rank " + I((int64_t)x.size()) +
                          " of x " + S(x));
    if (i && axes[i] <= axes[i - 1])
      return bad(err, std::string(op) + ": axes " + S(axes) + " must be sorted and distinct");
    if (x[axes[i]] == 0) return bad(err, std::string(op) + ": cannot reduce the empty dimension " + I(axes[i]) + " of x " + S(x));
    out[axes[i]] = 1;
  }
  return out;
}

std::optional<Dims> collective(const char *op, const Dims &x, int64_t meshAxis, int64_t groupSize, int64_t dim,
                               std::string &err) {
  if (!dimsOk(err, op, {{"x", &x}})) return std::nullopt;
  const std::string o = op;
  if (meshAxis != 0 && meshAxis != 1)
    return bad(err, o + ": mesh_axis must be 0 (data) or 1 (tensor), got " + I(meshAxis));
  if (groupSize < 1) return bad(err, o + ": group_size must be at least 1, got " + I(groupSize));
  if (o == "all_reduce") return x;
  if (dim < 0 || dim >= (int64_t)x.size())
    return bad(err, o + ": dim " + I(dim) + " is outside the rank " + I((int64_t)x.size()) + " of x " + S(x));
  Dims out = x;
  if (o == "all_gather") {
    out[dim] *= groupSize;
    return out;
  }
  if (x[dim] % groupSize != 0)
    return bad(err, o + ": dimension " + I(dim) + " of x " + S(x) + " is not divisible by group_size " +
                        I(groupSize));
  out[dim] /= groupSize;
  return out;
}

std::optional<Dims> axisIndex(int64_t meshAxis, int64_t groupSize, std::string &err) {
  if (meshAxis != 0 && meshAxis != 1)
    return bad(err, "axis_index: mesh_axis must be 0 (data) or 1 (tensor), got " + I(meshAxis));
  if (groupSize < 1) return bad(err, "axis_index: group_size must be at least 1, got " + I(groupSize));
  return Dims{};
}

std::optional<Dims> transpose(const Dims &x, const Dims &permutation, std::string &err) {
  if (!dimsOk(err, "transpose", {{"x", &x}})) return std::nullopt;
  if (permutation.size() != x.size())
    return bad(err, "transpose: permutation " + S(permutation) + " has " + I((int64_t)permutation.size()) +
                        " entries but x " + S(x) + " has rank " + I((int64_t)x.size()));
  std::vector<bool> seen(x.size(), false);
  Dims out(x.size());
  for (size_t i = 0; i < permutation.size(); ++i) {
    int64_t p = permutation[i];
    if (p < 0 || p >= (int64_t)x.size() || seen[p])
      return bad(err, "transpose: " + S(permutation) + " is not a permutation of the dims of x " + S(x));
    seen[p] = true;
    out[i] = x[p];
  }
  return out;
}

std::optional<Dims> reshape(const Dims &x, const Dims &to, std::string &err) {
  if (!dimsOk(err, "reshape", {{"x", &x}, {"result", &to}})) return std::nullopt;
  int64_t nx = 1, nt = 1;
  for (int64_t d : x) nx *= d;
  for (int64_t d : to) nt *= d;
  if (nx != nt)
    return bad(err, "reshape: cannot reshape " + S(x) + " (" + I(nx) + " elements) to " + S(to) + " (" + I(nt) +
                        " elements)");
  return to;
}

std::optional<Dims> slice(const Dims &x, const Dims &start, const Dims &limit, const Dims &stride,
                          std::string &err) {
  if (!dimsOk(err, "slice", {{"x", &x}})) return std::nullopt;
  size_t r = x.size();
  if (start.size() != r || limit.size() != r || stride.size() != r)
    return bad(err, "slice: start " + S(start) + ", limit " + S(limit) + " and stride " + S(stride) +
                        " must each have one entry per dim of x " + S(x));
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    if (stride[i] < 1)
      return bad(err, "slice: stride " + S(stride) + " must be >= 1 (dimension " + I((int64_t)i) + ")");
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > x[i])
      return bad(err, "slice: dimension " + I((int64_t)i) + " of x " + S(x) + " needs 0 <= start <= limit <= " +
                          I(x[i]) + ", got start " + I(start[i]) + " and limit " + I(limit[i]));
    out[i] = (limit[i] - start[i] + stride[i] - 1) / stride[i];
  }
  return out;
}

std::optional<Dims> crossEntropy(const Dims &logits, const Dims &targets, std::string &err) {
  if (!dimsOk(err, "cross_entropy", {{"logits", &logits}, {"targets", &targets}})) return std::nullopt;
  if (logits.empty()) return bad(err, "cross_entropy: logits " + S(logits) + " must have rank >= 1 [..., V]");
  Dims s(logits.begin(), logits.end() - 1);
  if (targets != s)
    return bad(err, "cross_entropy: targets " + S(targets) + " must be " + S(s) + " (logits " + S(logits) +
                        " without the vocabulary dim)");
  return Dims{};
}

std::optional<Dims> linearCrossEntropy(const Dims &h, const Dims &w, const Dims &targets, bool transposeRhs,
                                       std::string &err) {
  const char *op = "linear_cross_entropy";
  if (!dimsOk(err, op, {{"h", &h}, {"w", &w}, {"targets", &targets}})) return std::nullopt;
  if (h.size() < 2) return bad(err, std::string(op) + ": h " + S(h) + " must have rank >= 2 [..., D]");
  if (w.size() != 2)
    return bad(err, std::string(op) + ": w " + S(w) + " must have rank 2 ([V, D] with transpose_rhs, else [D, V])");
  // The rules of the two ops it fuses, their messages renamed to this op.
  auto renamed = [&]() -> std::optional<Dims> { return bad(err, op + err.substr(err.find(':'))); };
  std::optional<Dims> logits = matmul(h, w, false, transposeRhs, err);
  if (!logits) return renamed();
  std::optional<Dims> loss = crossEntropy(*logits, targets, err);
  if (!loss) return renamed();
  return loss;
}

std::optional<Dims> linearCrossEntropyStats(const Dims &h, const Dims &w, const Dims &targets, const Dims &bias,
                                            bool transposeRhs, std::string &err, const char *op,
                                            const std::vector<std::pair<const char *, const Dims *>> &rows) {
  if (!linearCrossEntropy(h, w, targets, transposeRhs, err)) return bad(err, op + err.substr(err.find(':')));
  if (!dimsOk(err, op, {{"bias", &bias}})) return std::nullopt;
  const int64_t vr = w[transposeRhs ? 0 : 1];
  if (bias != Dims{vr})
    return bad(err, std::string(op) + ": bias " + S(bias) + " must be [" + I(vr) + "] (one per class of w " + S(w) +
                        ")");
  for (const auto &[name, dims] : rows) {
    if (!dimsOk(err, op, {{name, dims}})) return std::nullopt;
    if (*dims != targets)
      return bad(err, std::string(op) + ": " + name + " " + S(*dims) + " must be " + S(targets) +
                          " (one value per row, the shape of targets)");
  }
  return targets;
}

std::optional<Dims> takeAlongAxis(const Dims &x, const Dims &indices, int64_t axis, std::string &err,
                                  const char *op) {
  if (!dimsOk(err, op, {{"x", &x}, {"indices", &indices}})) return std::nullopt;
  if (x.empty()) return bad(err, std::string(op) + ": x " + S(x) + " must have rank >= 1");
  if (x.size() != indices.size())
    return bad(err, std::string(op) + ": indices " + S(indices) + " must have the rank of x " + S(x));
  if (axis < 0 || axis >= (int64_t)x.size())
    return bad(err, std::string(op) + ": axis " + I(axis) + " is outside the rank " + I((int64_t)x.size()) +
                        " of x " + S(x));
  if (x[axis] == 0 && indices[axis] != 0)
    return bad(err, std::string(op) + ": cannot take from the empty axis " + I(axis) + " of x " + S(x));
  Dims out = x;
  for (size_t i = 0; i < x.size(); ++i)
    if ((int64_t)i != axis && indices[i] != x[i] && indices[i] != 1)
      return bad(err, std::string(op) + ": indices " + S(indices) + " do not broadcast to x " + S(x) +
                          " in dimension " + I((int64_t)i) + " (only axis " + I(axis) + " may differ)");
  out[axis] = indices[axis];
  return out;
}

std::optional<Dims> sample(const Dims &logits, const Dims &bits, std::string &err) {
  if (!dimsOk(err, "sample", {{"logits", &logits}, {"bits", &bits}})) return std::nullopt;
  if (logits.empty()) return bad(err, "sample: logits " + S(logits) + " must have rank >= 1 [..., V]");
  Dims s(logits.begin(), logits.end() - 1);
  if (bits != s)
    return bad(err, "sample: bits " + S(bits) + " must be " + S(s) + " (logits " + S(logits) +
                        " without the vocabulary dim)");
  return s;
}

std::optional<Dims> dropout(const Dims &x, const Dims &key, std::string &err) {
  if (!dimsOk(err, "dropout", {{"x", &x}, {"key", &key}})) return std::nullopt;
  if (x.empty()) return bad(err, "dropout: x must have rank >= 1 [rows, ...] (one key a row), got a scalar");
  if (key != Dims{x[0], 2} && key != Dims{2, x[0], 2})
    return bad(err, "dropout: key " + S(key) + " must be [" + std::to_string(x[0]) + ", 2] (two i32 words for each of x " +
                        S(x) + "'s rows: the dropout_key input) or [2, " + std::to_string(x[0]) +
                        ", 2] (the key of a part of each row: contract/dropout_math.h)");
  return x;
}

std::string dropoutRate(double p, const char *op) {
  if (p >= 0 && p < 1) return "";  // NaN fails both
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", p);
  return std::string(op) + ": the dropout rate p must be in [0, 1), got " + buf;
}

}  // namespace lmrt::shapes
