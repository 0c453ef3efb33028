/* Tests that every forward kernel matches a naive double-precision reference
   (written from docs/dialect.md, index by index) on small random shapes,
   including broadcasting, transposed matmul operands, causal and non-causal
   attention, and strided slices. */
#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

using Idx = std::vector<int64_t>;

Idx unravel(int64_t flat, const Shape &s) {
  Idx idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

int64_t ravel(const Idx &idx, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

/* Index into `s` of the element that broadcasts to `idx` of a larger shape. */
int64_t broadcastIndex(const Idx &idx, const Shape &s) {
  Idx sub(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    size_t j = idx.size() - s.size() + i;
    sub[i] = s[i] == 1 ? 0 : idx[j];
  }
  return ravel(sub, s);
}

Buf refMatmul(const Buf &a, const Buf &b, bool ta, bool tb, const Shape &outShape) {
  Buf c(DType::F64, outShape);
  const Shape &as = a.type.shape, &bs = b.type.shape;
  size_t r = as.size();
  int64_t k = ta ? as[r - 2] : as[r - 1];
  for (int64_t f = 0; f < c.numel(); ++f) {
    Idx o = unravel(f, outShape);
    int64_t i = o[r - 2], j = o[r - 1];
    double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      Idx ai = o, bi(bs.size());
      ai[r - 2] = ta ? kk : i;
      ai[r - 1] = ta ? i : kk;
      for (size_t d = 0; d + 2 < bs.size(); ++d) bi[d] = o[d];
      bi[bs.size() - 2] = tb ? j : kk;
      bi[bs.size() - 1] = tb ? kk : j;
      s += a.get(ravel(ai, as)) * b.get(ravel(bi, bs));
    }
    c.set(f, s);
  }
  return c;
}

TEST(Forward, Matmul) {
  struct Case {
    Shape a, b;
    bool ta, tb;
    Shape out;
  };
  for (const Case &c : std::vector<Case>{{{3, 4}, {4, 5}, false, false, {3, 5}},
                                         {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}},
                                         {{2, 3, 4}, {5, 4}, false, true, {2, 3, 5}},
                                         {{2, 4, 3}, {4, 5}, true, false, {2, 3, 5}},
                                         {{2, 2, 3, 4}, {2, 2, 4, 5}, false, false, {2, 2, 3, 5}},
                                         {{2, 4, 3}, {2, 5, 4}, true, true, {2, 3, 5}},
                                         {{3, 0}, {0, 2}, false, false, {3, 2}}}) {
    Buf a = randn(c.a), b = randn(c.b);
    auto out = runKernel("matmul", {a, b}, {{DType::F64, c.out}},
                         attrs({{"transpose_lhs", c.ta}, {"transpose_rhs", c.tb}}));
    EXPECT_TRUE(allClose(out[0], refMatmul(a, b, c.ta, c.tb, c.out), 1e-12, 1e-12))
        << shapeStr(c.a) << " x " << shapeStr(c.b);
  }
}

TEST(Forward, Binary) {
  struct Case {
    Shape a, b, out;
  };
  std::vector<Case> cases{{{2, 3}, {2, 3}, {2, 3}},       {{2, 3, 4}, {4}, {2, 3, 4}},
                          {{4}, {2, 3, 4}, {2, 3, 4}},    {{2, 1, 4}, {3, 1}, {2, 3, 4}},
                          {{2, 3}, {}, {2, 3}},           {{}, {}, {}},
                          {{3, 1}, {1, 5}, {3, 5}},       {{2, 3, 4}, {1, 3, 4}, {2, 3, 4}},
                          {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}}};
  const char *ops[] = {"add", "sub", "mul", "div"};
  for (const char *op : ops)
    for (const Case &c : cases) {
      Buf a = randn(c.a), b = randn(c.b);
      auto out = runKernel(op, {a, b}, {{DType::F64, c.out}});
      Buf ref(DType::F64, c.out);
      for (int64_t f = 0; f < ref.numel(); ++f) {
        Idx o = unravel(f, c.out);
        double x = a.get(broadcastIndex(o, c.a)), y = b.get(broadcastIndex(o, c.b));
        std::string s = op;
        ref.set(f, s == "add" ? x + y : s == "sub" ? x - y : s == "mul" ? x * y : x / y);
      }
      EXPECT_TRUE(allClose(out[0], ref, 1e-14, 0)) << op << " " << shapeStr(c.a) << " " << shapeStr(c.b);
    }
}

TEST(Forward, NegAndGelu) {
  Buf x = randn({3, 7}, DType::F64, 2.0);
  auto neg = runKernel("neg", {x}, {x.type});
  auto gelu = runKernel("gelu", {x}, {x.type});
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.get(i);
    EXPECT_EQ(neg[0].get(i), -v);
    EXPECT_NEAR(gelu[0].get(i), 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))), 1e-14);
  }
}

TEST(Forward, SumTo) {
  struct Case {
    Shape from, to;
  };
  for (const Case &c : std::vector<Case>{{{2, 3, 4}, {4}},
                                         {{2, 3, 4}, {3, 4}},
                                         {{2, 3, 4}, {3, 1}},
                                         {{2, 3, 4}, {2, 1, 4}},
                                         {{2, 3, 4}, {}},
                                         {{2, 3, 4}, {1, 1, 1}},
                                         {{2, 3, 4}, {2, 3, 4}},
                                         {{5, 130}, {130}},
                                         {{2, 3, 4}, {2, 3, 1}},  // row sums (sum over the last axis)
                                         {{2, 3, 4}, {2, 1, 1}},
                                         {{64, 300}, {64, 1}}}) {
    Buf x = randn(c.from);
    auto out = runKernel("sum_to", {x}, {{DType::F64, c.to}});
    Buf ref(DType::F64, c.to);
    for (int64_t f = 0; f < ref.numel(); ++f) ref.set(f, 0);
    for (int64_t f = 0; f < x.numel(); ++f) {
      int64_t t = broadcastIndex(unravel(f, c.from), c.to);
      ref.set(t, ref.get(t) + x.get(f));
    }
    EXPECT_TRUE(allClose(out[0], ref, 1e-12, 1e-12)) << shapeStr(c.from) << " -> " << shapeStr(c.to);
  }
}

TEST(Forward, LayerNorm) {
  Buf x = randn({2, 3, 8}, DType::F64, 3.0), g = randn({8}), b = randn({8});
  double eps = 1e-3;
  auto out = runKernel("layer_norm", {x, g, b}, {x.type}, attrs({{"epsilon", eps}}));
  Buf ref(DType::F64, x.type.shape);
  for (int64_t r = 0; r < 6; ++r) {
    double m = 0, v = 0;
    for (int j = 0; j < 8; ++j) m += x.get(r * 8 + j) / 8;
    for (int j = 0; j < 8; ++j) v += (x.get(r * 8 + j) - m) * (x.get(r * 8 + j) - m) / 8;
    for (int j = 0; j < 8; ++j) ref.set(r * 8 + j, (x.get(r * 8 + j) - m) / std::sqrt(v + eps) * g.get(j) + b.get(j));
  }
  EXPECT_TRUE(allClose(out[0], ref, 1e-12, 1e-12));
  // epsilon defaults to 1e-5 when absent.
  auto def = runKernel("layer_norm", {x, g, b}, {x.type});
  auto explicitDefault = runKernel("layer_norm", {x, g, b}, {x.type}, attrs({{"epsilon", 1e-5}}));
  EXPECT_TRUE(allClose(def[0], explicitDefault[0], 0, 0));
}

/* softmax(q kᵀ / sqrt(Dh) + mask) v per head, with the full T x T matrix. */
Buf refAttention(const Buf &q, const Buf &k, const Buf &v, int64_t H, bool causal) {
  const Shape &s = q.type.shape;
  int64_t B = s[0], T = s[1], C = s[2], Dh = C / H;
  Buf y(DType::F64, s);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> sc(T);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < Dh; ++e) d += q.get((b * T + i) * C + h * Dh + e) * k.get((b * T + j) * C + h * Dh + e);
          sc[j] = (causal && j > i) ? -INFINITY : d / std::sqrt((double)Dh);
          mx = std::max(mx, sc[j]);
        }
        double z = 0;
        for (double &x : sc) z += (x = std::exp(x - mx));
        for (int64_t e = 0; e < Dh; ++e) {
          double o = 0;
          for (int64_t j = 0; j < T; ++j) o += sc[j] / z * v.get((b * T + j) * C + h * Dh + e);
          y.set((b * T + i) * C + h * Dh + e, o);
        }
      }
  return y;
}

TEST(Forward, Attention) {
  for (bool causal : {false, true})
    for (int64_t H : {1, 2, 3}) {
      Shape s{2, 5, 6};
      Buf q = randn(s), k = randn(s), v = randn(s);
      auto out = runKernel("attention", {q, k, v}, {q.type}, attrs({{"num_heads", H}, {"causal", causal}}));
      EXPECT_TRUE(allClose(out[0], refAttention(q, k, v, H, causal), 1e-12, 1e-12)) << "H=" << H << " causal=" << causal;
    }
}

TEST(Forward, SoftmaxAndCrossEntropy) {
  Buf x = randn({2, 3, 7}, DType::F64, 3.0);
  auto y = runKernel("softmax", {x}, {x.type});
  Buf t = randIds({2, 3}, 7);
  t.set(4, -100);  // ignored
  auto loss = runKernel("cross_entropy", {x, t}, {{DType::F64, {}}});
  double total = 0;
  int n = 0;
  for (int64_t r = 0; r < 6; ++r) {
    double mx = -INFINITY, z = 0;
    for (int j = 0; j < 7; ++j) mx = std::max(mx, x.get(r * 7 + j));
    for (int j = 0; j < 7; ++j) z += std::exp(x.get(r * 7 + j) - mx);
    for (int j = 0; j < 7; ++j) EXPECT_NEAR(y[0].get(r * 7 + j), std::exp(x.get(r * 7 + j) - mx) / z, 1e-14);
    if (t.get(r) == -100) continue;
    total += mx + std::log(z) - x.get(r * 7 + (int64_t)t.get(r));
    ++n;
  }
  EXPECT_NEAR(loss[0].get(0), total / n, 1e-12);
  // A custom ignore_index, and the all-ignored case (loss 0).
  Buf all(DType::I32, {2, 3});
  for (int i = 0; i < 6; ++i) all.set(i, 5);
  auto zero = runKernel("cross_entropy", {x, all}, {{DType::F64, {}}}, attrs({{"ignore_index", (int64_t)5}}));
  EXPECT_EQ(zero[0].get(0), 0.0);
}

TEST(Forward, Accuracy) {
  // Rows: target is the unique max (correct); target ties an earlier max (not
  // the first maximal class: wrong); target ties a later max (first: correct);
  // ignored; target below the max (wrong); a NaN at the target (wrong).
  Buf x(DType::F64, {2, 3, 3});
  const double v[] = {0, 5, 1, /**/ 4, 4, 1, /**/ 7, 2, 7, /**/ 9, 0, 0, /**/ 1, 2, 3, /**/ NAN, 0, 0};
  for (int i = 0; i < 18; ++i) x.set(i, v[i]);
  Buf t(DType::I32, {2, 3});
  const int32_t tg[] = {1, 1, 0, -100, 1, 0};
  for (int i = 0; i < 6; ++i) t.set(i, tg[i]);
  auto acc = runKernel("accuracy", {x, t}, {{DType::F64, {}}});
  EXPECT_DOUBLE_EQ(acc[0].get(0), 2.0 / 5.0);
  // A custom ignore_index; all ignored gives 0.
  const int32_t tg2[] = {1, 1, 0, 2, 1, 0};  // ignoring 1 leaves rows 2 (correct), 3 and 5 (wrong)
  for (int i = 0; i < 6; ++i) t.set(i, tg2[i]);
  auto some = runKernel("accuracy", {x, t}, {{DType::F64, {}}}, attrs({{"ignore_index", (int64_t)1}}));
  EXPECT_DOUBLE_EQ(some[0].get(0), 1.0 / 3.0);
  Buf all(DType::I32, {2, 3});
  for (int i = 0; i < 6; ++i) all.set(i, 2);
  auto zero = runKernel("accuracy", {x, all}, {{DType::F64, {}}}, attrs({{"ignore_index", (int64_t)2}}));
  EXPECT_EQ(zero[0].get(0), 0.0);
}

TEST(Forward, Embedding) {
  Buf table = randn({10, 4}), ids = randIds({2, 3}, 10);
  auto out = runKernel("embedding", {table, ids}, {{DType::F64, {2, 3, 4}}});
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(out[0].get(i * 4 + j), table.get((int64_t)ids.get(i) * 4 + j));
}

TEST(Forward, ShapeOps) {
  Buf x = randn({2, 3, 4});
  auto r = runKernel("reshape", {x}, {{DType::F64, {6, 4}}});
  EXPECT_TRUE(allClose(r[0], [&] { Buf b = x; b.type.shape = {6, 4}; return b; }(), 0, 0));
  auto c = runKernel("copy", {x}, {x.type});
  EXPECT_TRUE(allClose(c[0], x, 0, 0));

  for (Idx perm : std::vector<Idx>{{0, 1, 2}, {2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}}) {
    Shape os{x.type.shape[perm[0]], x.type.shape[perm[1]], x.type.shape[perm[2]]};
    auto t = runKernel("transpose", {x}, {{DType::F64, os}}, attrs({{"permutation", perm}}));
    for (int64_t f = 0; f < x.numel(); ++f) {
      Idx o = unravel(f, os), i(3);
      for (int d = 0; d < 3; ++d) i[perm[d]] = o[d];
      EXPECT_EQ(t[0].get(f), x.get(ravel(i, x.type.shape)));
    }
  }

  // Larger than one 32 x 32 tile, with ragged edges: the tiled transpose path.
  Buf big = randn({3, 70, 45});
  auto bt = runKernel("transpose", {big}, {{DType::F64, {45, 3, 70}}}, attrs({{"permutation", Idx{2, 0, 1}}}));
  for (int64_t f = 0; f < big.numel(); ++f) {
    Idx o = unravel(f, {45, 3, 70});
    ASSERT_EQ(bt[0].get(f), big.get(ravel({o[1], o[2], o[0]}, big.type.shape))) << f;
  }

  // fill writes every element (the outputs start as NaN): zeros by memset, other
  // values (and -0.0, whose sign a memset would lose) element by element.
  for (double v : {0.0, -2.5, -0.0}) {
    for (DType t : {DType::F64, DType::F32}) {
      auto f = runKernel("fill", {}, {{t, {3, 70}}}, attrs({{"value", v}}));
      for (int64_t i = 0; i < f[0].numel(); ++i) {
        ASSERT_EQ(f[0].get(i), v) << i;
        ASSERT_EQ(std::signbit(f[0].get(i)), std::signbit(v)) << i;
      }
    }
  }

  // Strided slices, on f64 and on i32 (token ids are sliced too).
  Buf ids = randIds({3, 9}, 100);
  for (const Buf *src : {&x, &ids}) {
    const Shape &s = src->type.shape;
    Idx start(s.size(), 0), limit = s, stride(s.size(), 1);
    start.back() = 1;
    stride.back() = 3;
    limit[0] = s[0] - 1;
    Shape os(s.size());
    for (size_t d = 0; d < s.size(); ++d) os[d] = (limit[d] - start[d] + stride[d] - 1) / stride[d];
    auto sl = runKernel("slice", {*src}, {{src->type.dtype, os}},
                        attrs({{"start", start}, {"limit", limit}, {"stride", stride}}));
    for (int64_t f = 0; f < numel(os); ++f) {
      Idx o = unravel(f, os);
      for (size_t d = 0; d < o.size(); ++d) o[d] = start[d] + o[d] * stride[d];
      EXPECT_EQ(sl[0].get(f), src->get(ravel(o, s)));
    }
  }
}

}  // namespace
}  // namespace lmrt::kernels::test
