/* Implements: the kernel of every op of the elementwise table (contract/elementwise.h:
   the arithmetic, the comparisons and lm.where, neg, the GELU pair and their
   adjoints, the zoo's unary math), instantiated from each op's scalar form
   (contract/elementwise_forms.h, generated from the ODS), which the generated
   kernels compute too, so fused and unfused plans give the same values; plus
   lm.where_int and lm.sum_to (the adjoint of broadcasting). One loop per operand
   count: one operand is a flat parallel loop; two take the fast paths of
   equal shapes (one flat loop) and of an operand that broadcasts along leading
   dims only (a bias: indexed modulo its size), else a strided walk whose
   innermost dim is a plain loop; three or more a strided walk. sum_to reduces
   leading dims (column sums) or trailing dims (row sums: sum and mean over the
   last axes) directly, anything else by a strided scatter. */
#include <optional>
#include <utility>

#include "contract/elementwise_forms.h"
#include "runtime/cpu/kernels/column_sum.h"
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

namespace forms = elementwise::forms;

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

/* The broadcast of an op's operands: two by NumPy rules, three as lm.where's. */
template <typename Fn> std::optional<Shape> broadcastShape(const std::vector<TensorType> &in, std::string &err) {
  static_assert(Fn::arity == 2 || Fn::arity == 3, "a broadcasting elementwise op of this arity needs its shape rule");
  if constexpr (Fn::arity == 2)
    return shapes::broadcast(in[0].shape, in[1].shape, err, Fn::name);
  else
    return shapes::where(in[0].shape, in[1].shape, in[2].shape, err);
}

/* Float operands of one element type that broadcast into the result (or, for an
   op whose operands do not broadcast, all have its shape); the result of that
   type and shape. The operands are named as in the ODS. */
template <typename Fn>
std::string checkElementwise(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck(Fn::name, in, out, Fn::arity, 1, [&]() -> std::string {
    const char *first = Fn::operands[0];
    LMRT_CHECK(expectFloat(Fn::name, first, in[0]));
    for (int k = 1; k < Fn::arity; ++k) {
      LMRT_CHECK(expectSameDType(Fn::name, Fn::operands[k], in[k], first, in[0]));
      if (!Fn::broadcasts && in[k].shape != in[0].shape)
        return std::string(Fn::name) + ": " + Fn::operands[k] + " " + in[k].str() + " must have the shape of " +
               first + " " + in[0].str();
    }
    if constexpr (Fn::broadcasts) {
      std::string err;
      std::optional<Shape> shape = broadcastShape<Fn>(in, err);
      if (!shape) return err;
      return expectType(Fn::name, "out", out[0], in[0].dtype, *shape);
    }
    return expectType(Fn::name, "out", out[0], in[0].dtype, in[0].shape);
  });
}

template <typename Fn, typename T> LMRT_SIMD_CLONES void unaryT(const T *x, T *y, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = Fn::f(x[i]);
}

template <typename Fn, typename T>
LMRT_SIMD_CLONES void binaryT(const TensorRef &lhs, const TensorRef &rhs, const TensorRef &out) {
  const T *a = lhs.as<T>(), *b = rhs.as<T>();
  T *c = out.as<T>();
  const Shape &os = out.shape();
  int64_t n = out.numel(), na = lhs.numel(), nb = rhs.numel();
  if (n == 0) return;
  bool par = n >= kParallelMin;
  if (na == n && nb == n) {
#pragma omp parallel for simd if (par)
    for (int64_t i = 0; i < n; ++i) c[i] = Fn::f(a[i], b[i]);
    return;
  }
  if (na == n && isSuffixOf(rhs.shape(), os)) {  // x + bias
    int64_t rows = n / nb;
#pragma omp parallel for if (par)
    for (int64_t r = 0; r < rows; ++r) {
      const T *ar = a + r * nb;
      T *cr = c + r * nb;
#pragma omp simd
      for (int64_t j = 0; j < nb; ++j) cr[j] = Fn::f(ar[j], b[j]);
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
      for (int64_t j = 0; j < na; ++j) cr[j] = Fn::f(a[j], br[j]);
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
    for (int64_t j = 0; j < inner; ++j) cr[j] = Fn::f(a[offA + j * ia], b[offB + j * ib]);
  }
}

/* Three or more operands: each output element walks to its operands' elements
   through their broadcast strides (lm.where's masks are not hot loops). */
template <typename Fn, typename T, size_t... I>
void stridedT(const KernelCall &call, std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(I);
  const Shape &os = call.out[0].shape();
  const std::vector<int64_t> strides[N] = {broadcastStrides(call.in[I].shape(), os)...};
  const T *in[N] = {call.in[I].as<T>()...};
  T *y = call.out[0].as<T>();
  int64_t n = call.out[0].numel();
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off[N] = {};
    for (size_t d = os.size(); d-- > 0;) {
      int64_t idx = rem % os[d];
      rem /= os[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
    y[i] = Fn::f(in[I][off[I]]...);
  }
}

template <typename Fn> void runElementwise(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (Fn::arity == 1)
      unaryT<Fn, T>(call.in[0].as<T>(), call.out[0].as<T>(), call.in[0].numel());
    else if constexpr (Fn::arity == 2)
      binaryT<Fn, T>(call.in[0], call.in[1], call.out[0]);
    else
      stridedT<Fn, T>(call, std::make_index_sequence<Fn::arity>());
  });
}

/* One kernel per functor of the table. */
template <typename... Fn> void addTableKernels(std::vector<KernelDef> &k, forms::List<Fn...>) {
  (k.push_back({Fn::name, Fn::arity, 1, checkElementwise<Fn>, runElementwise<Fn>}), ...);
}

// ----------------------------------------------------------------------------
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

// C: the mask's element type.
template <typename C> void whereIntT(const KernelCall &call) {
  const TensorRef &c = call.in[0], &a = call.in[1], &b = call.in[2], &o = call.out[0];
  const Shape &os = o.shape();
  auto sc = broadcastStrides(c.shape(), os), sa = broadcastStrides(a.shape(), os), sb = broadcastStrides(b.shape(), os);
  const C *cp = c.as<C>();
  const int32_t *ap = a.as<int32_t>(), *bp = b.as<int32_t>();
  int32_t *op = o.as<int32_t>();
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
    op[i] = cp[ic] != (C)0 ? ap[ia] : bp[ib];
  }
}

void runWhereInt(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { whereIntT<decltype(t)>(call); });
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

/* Column sums of rows [r0, r1) of x ([rows, m]) for columns [c0, c1), in row order, into acc. */
template <typename T>
LMRT_SIMD_CLONES void sumToTile(const T *xs, int64_t m, int64_t r0, int64_t r1, int64_t c0, int64_t c1, T *acc) {
  for (int64_t j = c0; j < c1; ++j) acc[j] = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const T *xr = xs + r * m;
#pragma omp simd
    for (int64_t j = c0; j < c1; ++j) acc[j] += xr[j];
  }
}

/* o[j] = the partial sums part[k * m + j] of every chunk k, added in chunk order. */
template <typename T>
LMRT_SIMD_CLONES void sumToCombine(const T *part, int64_t m, int64_t c0, int64_t c1, int64_t chunks, T *o) {
#pragma omp simd
  for (int64_t j = c0; j < c1; ++j) {
    T t = part[j];
    for (int64_t k = 1; k < chunks; ++k) t += part[k * m + j];
    o[j] = t;
  }
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
    // Column sums over the leading dims, in the order of column_sum.h (the one the
    // generated column reduces use): a fused bias gradient has these bits.
    int64_t rows = n / m;
    thread_local std::vector<T> part;  // the chunks' partial sums (none with one chunk)
    const int64_t chunks = columnChunks(rows).chunks;
    const size_t need = chunks > 1 ? (size_t)chunks * (size_t)m : 0;
    if (part.size() < need) part.resize(need);
    T *pp = part.data();
    columnSum(
        rows, m, 1024, n,
        [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t chunk) {
          sumToTile(xs, m, r0, r1, c0, c1, chunk < 0 ? o : pp + chunk * m);
        },
        [&](int64_t c0, int64_t c1, int64_t chunks) { sumToCombine(pp, m, c0, c1, chunks, o); });
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
  addTableKernels(k, forms::All{});
  k.push_back({"where_int", 3, 1, checkWhereInt, runWhereInt});
  k.push_back({"sum_to", 1, 1, checkSumTo, runSumTo});
}

}  // namespace lmrt::kernels::detail
