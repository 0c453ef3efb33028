/* Implements: lm.add/sub/mul/div and the comparisons lm.gt/ge/lt/le/eq/ne with
   NumPy broadcasting, lm.where and lm.where_int, lm.neg, and lm.sum_to
   (the adjoint of broadcasting). Fast paths: equal shapes (one flat loop), an
   operand that broadcasts along leading dims only (a bias: indexed modulo its
   size) and, for sum_to, reducing leading dims (column sums) or trailing dims
   (row sums: sum and mean over the last axes). Anything else goes
   through a strided walk whose innermost dim is a plain loop. */
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

struct Add { template <typename T> static T f(T a, T b) { return a + b; } };
struct Sub { template <typename T> static T f(T a, T b) { return a - b; } };
struct Mul { template <typename T> static T f(T a, T b) { return a * b; } };
struct Div { template <typename T> static T f(T a, T b) { return a / b; } };
// Comparisons: 1 or 0 in the operands' type, as their scalar forms (lmc::mask).
struct Gt { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a > b); } };
struct Ge { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a >= b); } };
struct Lt { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a < b); } };
struct Le { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a <= b); } };
struct Eq { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a == b); } };
struct Ne { template <typename T> static T f(T a, T b) { return lmc::mask<T>(a != b); } };

/* Drops leading 1s: [1, 1, 3, 4] -> [3, 4]. */
Shape stripLeadingOnes(const Shape &s) {
  size_t i = 0;
  while (i < s.size() && s[i] == 1) ++i;
  return Shape(s.begin() + i, s.end());
}

/* True when `s` is (after dropping leading 1s) the trailing dims of `full`, so
   element i of the broadcast equals s[i % numel(s)]. */
bool isSuffixOf(const Shape &s, const Shape &full) {
  Shape t = stripLeadingOnes(s);
  if (t.size() > full.size()) return false;
  return std::equal(t.begin(), t.end(), full.end() - t.size());
}

/* True when `s` is `full` with a trailing run of dims set to 1 ([B, T, 1] of
   [B, T, D]), so element i of the reduction is the sum of row i of `full`. */
bool isRowPrefixOf(const Shape &s, const Shape &full) {
  if (s.size() != full.size()) return false;
  size_t k = s.size();
  while (k > 0 && s[k - 1] == 1) --k;
  return std::equal(s.begin(), s.begin() + k, full.begin());
}

/* Strides of `s` viewed in the index space of `full` (rank-aligned on the right);
   0 where s broadcasts. */
std::vector<int64_t> broadcastStrides(const Shape &s, const Shape &full) {
  std::vector<int64_t> st(full.size(), 0);
  int64_t acc = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t si = s.size() - 1 - i, fi = full.size() - 1 - i;
    st[fi] = s[si] == 1 ? 0 : acc;
    acc *= s[si];
  }
  return st;
}

std::string checkBinary(const char *op, const std::vector<TensorType> &in, const std::vector<TensorType> &out) {
  return guardCheck(op, in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat(op, "lhs", in[0]));
    LMRT_CHECK(expectSameDType(op, "rhs", in[1], "lhs", in[0]));
    std::string err;
    auto shape = shapes::broadcast(in[0].shape, in[1].shape, err, op);
    if (!shape) return err;
    return expectType(op, "out", out[0], in[0].dtype, *shape);
  });
}

template <typename Op, typename T>
LMRT_SIMD_CLONES void binaryT(const TensorRef &lhs, const TensorRef &rhs, const TensorRef &out) {
  const T *a = lhs.as<T>(), *b = rhs.as<T>();
  T *c = out.as<T>();
  const Shape &os = out.shape();
  int64_t n = out.numel(), na = lhs.numel(), nb = rhs.numel();
  if (n == 0) return;
  bool par = n >= kParallelMin;
  if (na == n && nb == n) {
#pragma omp parallel for simd if (par)
    for (int64_t i = 0; i < n; ++i) c[i] = Op::f(a[i], b[i]);
    return;
  }
  if (na == n && isSuffixOf(rhs.shape(), os)) {  // x + bias
    int64_t rows = n / nb;
#pragma omp parallel for if (par)
    for (int64_t r = 0; r < rows; ++r) {
      const T *ar = a + r * nb;
      T *cr = c + r * nb;
#pragma omp simd
      for (int64_t j = 0; j < nb; ++j) cr[j] = Op::f(ar[j], b[j]);
    }
    return;
  }
  if (nb == n && isSuffixOf(lhs.shape(), os)) {  // bias + x
    int64_t rows = n / na;
#pragma omp parallel for if (par)
    for (int64_t r = 0; r < rows; ++r) {
      const T *br = b + r * na;
      T *cr = c + r * na;
#pragma omp simd
      for (int64_t j = 0; j < na; ++j) cr[j] = Op::f(a[j], br[j]);
    }
    return;
  }
  // General broadcast: walk the outer dims, innermost dim as a strided loop.
  size_t rank = os.size();
  auto sa = broadcastStrides(lhs.shape(), os), sb = broadcastStrides(rhs.shape(), os);
  int64_t inner = os[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  int64_t rows = n / inner;
#pragma omp parallel for if (par)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offA = 0, offB = 0, rem = r;
    for (size_t d = rank - 1; d-- > 0;) {
      int64_t idx = rem % os[d];
      rem /= os[d];
      offA += idx * sa[d];
      offB += idx * sb[d];
    }
    T *cr = c + r * inner;
    for (int64_t j = 0; j < inner; ++j) cr[j] = Op::f(a[offA + j * ia], b[offB + j * ib]);
  }
}

template <typename Op> struct Binary {
  static const char *name;
  static std::string check(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
    return checkBinary(name, in, out);
  }
  static void run(const KernelCall &call) {
    dispatchFloat(call.in[0].type.dtype,
                  [&](auto t) { binaryT<Op, decltype(t)>(call.in[0], call.in[1], call.out[0]); });
  }
};
template <> const char *Binary<Add>::name = "add";
template <> const char *Binary<Sub>::name = "sub";
template <> const char *Binary<Mul>::name = "mul";
template <> const char *Binary<Div>::name = "div";
template <> const char *Binary<Gt>::name = "gt";
template <> const char *Binary<Ge>::name = "ge";
template <> const char *Binary<Lt>::name = "lt";
template <> const char *Binary<Le>::name = "le";
template <> const char *Binary<Eq>::name = "eq";
template <> const char *Binary<Ne>::name = "ne";

// ----------------------------------------------------------------------------
// where(cond, lhs, rhs): three operands broadcast together; a strided walk (the
// zoo's uses are masks, not hot loops).

std::string checkWhere(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("where", in, out, 3, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("where", "cond", in[0]));
    LMRT_CHECK(expectSameDType("where", "lhs", in[1], "cond", in[0]));
    LMRT_CHECK(expectSameDType("where", "rhs", in[2], "cond", in[0]));
    std::string err;
    auto shape = shapes::where(in[0].shape, in[1].shape, in[2].shape, err);
    if (!shape) return err;
    return expectType("where", "out", out[0], in[0].dtype, *shape);
  });
}

// C: the mask's element type; T: the values' (C for lm.where, int32_t for
// lm.where_int).
template <typename C, typename T> void whereT(const KernelCall &call) {
  const TensorRef &c = call.in[0], &a = call.in[1], &b = call.in[2], &o = call.out[0];
  const Shape &os = o.shape();
  auto sc = broadcastStrides(c.shape(), os), sa = broadcastStrides(a.shape(), os), sb = broadcastStrides(b.shape(), os);
  const C *cp = c.as<C>();
  const T *ap = a.as<T>(), *bp = b.as<T>();
  T *op = o.as<T>();
  int64_t n = o.numel();
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ic = 0, ia = 0, ib = 0;
    for (size_t d = os.size(); d-- > 0;) {
      int64_t idx = rem % os[d];
      rem /= os[d];
      ic += idx * sc[d];
      ia += idx * sa[d];
      ib += idx * sb[d];
    }
    op[i] = cp[ic] != (C)0 ? ap[ia] : bp[ib];  // lmc::select, with the mask of its own type
  }
}

void runWhere(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { whereT<decltype(t), decltype(t)>(call); });
}

// where_int(cond, lhs, rhs): i32 values selected by a float mask (f32 or f64),
// broadcasting as where.
std::string checkWhereInt(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("where_int", in, out, 3, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("where_int", "cond", in[0]));
    LMRT_CHECK(expectI32("where_int", "lhs", in[1]));
    LMRT_CHECK(expectI32("where_int", "rhs", in[2]));
    std::string err;
    auto shape = shapes::where(in[0].shape, in[1].shape, in[2].shape, err);
    if (!shape) return err;
    return expectType("where_int", "ids", out[0], DType::I32, *shape);
  });
}

void runWhereInt(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { whereT<decltype(t), int32_t>(call); });
}

// ----------------------------------------------------------------------------
// neg

std::string checkNeg(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("neg", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("neg", "x", in[0]));
    return expectType("neg", "out", out[0], in[0].dtype, in[0].shape);
  });
}

void runNeg(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *x = call.in[0].as<T>();
    T *y = call.out[0].as<T>();
    int64_t n = call.in[0].numel();
#pragma omp parallel for simd if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
  });
}

// ----------------------------------------------------------------------------
// sum_to

std::string checkSumTo(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("sum_to", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("sum_to", "x", in[0]));
    std::string err;
    if (!shapes::sumTo(in[0].shape, out[0].shape, err)) return err;
    return expectType("sum_to", "out", out[0], in[0].dtype, out[0].shape);
  });
}

template <typename T> LMRT_SIMD_CLONES void sumToT(const TensorRef &x, const TensorRef &out) {
  const T *xs = x.as<T>();
  T *o = out.as<T>();
  int64_t n = x.numel(), m = out.numel();
  if (m == 0) return;
  if (n == m) {
    std::memcpy(o, xs, sizeof(T) * n);
    return;
  }
  if (m == 1) {  // a full reduction: accumulate in double for accuracy
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += xs[i];
    o[0] = (T)s;
    return;
  }
  if (isRowPrefixOf(out.shape(), x.shape())) {
    // Row sums over the trailing dims (sum/mean over the last axes, as the
    // frontend writes them): each row is contiguous and summed by one thread.
    int64_t len = n / m;
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t r = 0; r < m; ++r) {
      const T *xr = xs + r * len;
      T acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < len; ++j) acc += xr[j];
      o[r] = acc;
    }
    return;
  }
  if (isSuffixOf(out.shape(), x.shape())) {
    // Column sums over the leading dims; threads own disjoint column ranges so
    // the result does not depend on the thread count.
    int64_t rows = n / m;
#pragma omp parallel for if (n >= kParallelMin && m >= 64)
    for (int64_t c0 = 0; c0 < m; c0 += 64) {
      int64_t c1 = std::min(m, c0 + 64);
      T acc[64] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const T *xr = xs + r * m;
        for (int64_t j = c0; j < c1; ++j) acc[j - c0] += xr[j];
      }
      for (int64_t j = c0; j < c1; ++j) o[j] = acc[j - c0];
    }
    return;
  }
  // General: scatter-add every element into its reduced position (serial: outputs collide).
  const Shape &xsh = x.shape();
  auto so = broadcastStrides(out.shape(), xsh);
  std::memset(o, 0, sizeof(T) * m);
  size_t rank = xsh.size();
  int64_t inner = xsh[rank - 1], io = so[rank - 1];
  for (int64_t r = 0; r < n / inner; ++r) {
    int64_t off = 0, rem = r;
    for (size_t d = rank - 1; d-- > 0;) {
      off += (rem % xsh[d]) * so[d];
      rem /= xsh[d];
    }
    const T *xr = xs + r * inner;
    for (int64_t j = 0; j < inner; ++j) o[off + j * io] += xr[j];
  }
}

void runSumTo(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { sumToT<decltype(t)>(call.in[0], call.out[0]); });
}

}  // namespace

void addElementwiseKernels(std::vector<KernelDef> &k) {
  k.push_back({"add", 2, 1, Binary<Add>::check, Binary<Add>::run});
  k.push_back({"sub", 2, 1, Binary<Sub>::check, Binary<Sub>::run});
  k.push_back({"mul", 2, 1, Binary<Mul>::check, Binary<Mul>::run});
  k.push_back({"div", 2, 1, Binary<Div>::check, Binary<Div>::run});
  k.push_back({"gt", 2, 1, Binary<Gt>::check, Binary<Gt>::run});
  k.push_back({"ge", 2, 1, Binary<Ge>::check, Binary<Ge>::run});
  k.push_back({"lt", 2, 1, Binary<Lt>::check, Binary<Lt>::run});
  k.push_back({"le", 2, 1, Binary<Le>::check, Binary<Le>::run});
  k.push_back({"eq", 2, 1, Binary<Eq>::check, Binary<Eq>::run});
  k.push_back({"ne", 2, 1, Binary<Ne>::check, Binary<Ne>::run});
  k.push_back({"where", 3, 1, checkWhere, runWhere});
  k.push_back({"where_int", 3, 1, checkWhereInt, runWhereInt});
  k.push_back({"neg", 1, 1, checkNeg, runNeg});
  k.push_back({"sum_to", 1, 1, checkSumTo, runSumTo});
}

}  // namespace lmrt::kernels::detail
