/* Tests lm.sample (categorical draws from softmax(logits) by given random bits)
   and lm.to_float. The draws are a pure function of (logits, bits); with bits
   from a fixed-seed generator the statistical checks give the same result every
   run (they cannot flake), and their bounds are wide enough (chi-square p ~ 1e-9,
   6 sigma per id) that any other seed would pass too: only a wrong distribution
   fails them. */
#include <cmath>

#include "KernelTestUtil.h"
#include "contract/sample_math.h"

namespace lmrt::kernels::test {
namespace {

Buf bitsOf(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  Buf b(DType::I32, {n});
  for (int64_t i = 0; i < n; ++i) static_cast<int32_t *>(b.data())[i] = (int32_t)g();
  return b;
}

TEST(Sample, DrawsFollowSoftmax) {
  const double p[] = {0.4, 0.25, 0.2, 0.1, 0.04, 0.01};
  const int64_t v = 6, n = 200000;
  for (DType dt : {DType::F32, DType::F64}) {
    Buf logits(dt, {n, v});
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < v; ++i) logits.set(r * v + i, std::log(p[i]) + 3.0);  // softmax ignores the shift
    auto out = runKernel("sample", {logits, bitsOf(n, 42)}, {TensorType{DType::I32, {n}}});
    std::vector<int64_t> count(v, 0);
    for (int64_t r = 0; r < n; ++r) {
      int64_t id = (int64_t)out[0].get(r);
      ASSERT_TRUE(id >= 0 && id < v) << id;
      ++count[id];
    }
    double chi2 = 0;
    for (int64_t i = 0; i < v; ++i) {
      double expect = n * p[i], sigma = std::sqrt(n * p[i] * (1 - p[i]));
      chi2 += (count[i] - expect) * (count[i] - expect) / expect;
      EXPECT_LT(std::fabs(count[i] - expect), 6 * sigma) << "id " << i << ": " << count[i] << " draws, expected "
                                                        << expect << " (" << dtypeName(dt) << ")";
    }
    // 5 degrees of freedom: P(chi2 > 50) ~ 1.4e-9.
    EXPECT_LT(chi2, 50.0) << dtypeName(dt);
  }
}

TEST(Sample, EdgesOfTheUnitInterval) {
  // Ids of probability 0 (-inf logits) are never drawn, not even at u's ends.
  Buf logits(DType::F64, {4, 5});
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i < 5; ++i) logits.set(r * 5 + i, (i == 1 || i == 3) ? 0.0 : -INFINITY);
  Buf bits(DType::I32, {4});
  const uint32_t ends[] = {0u, 1u, 0xfffffffeu, 0xffffffffu};
  for (int r = 0; r < 4; ++r) static_cast<int32_t *>(bits.data())[r] = (int32_t)ends[r];
  auto out = runKernel("sample", {logits, bits}, {TensorType{DType::I32, {4}}});
  EXPECT_EQ(out[0].get(0), 1);
  EXPECT_EQ(out[0].get(1), 1);
  EXPECT_EQ(out[0].get(2), 3);
  EXPECT_EQ(out[0].get(3), 3);
  // u = (bits + 0.5) / 2^32 splits [0, 1) by the cumulative probabilities: with two
  // equal logits, bits below 2^31 draw the first id, the rest the second.
  EXPECT_EQ(lmc::sampleRow((const double *)logits.data(), 5, 0x7fffffffu), 1);
  EXPECT_EQ(lmc::sampleRow((const double *)logits.data(), 5, 0x80000000u), 3);
}

TEST(Sample, PureFunctionOfLogitsAndBits) {
  Buf logits = randn({3, 8, 50}, DType::F32, 2.0);
  Buf bits = bitsOf(24, 7), other = bitsOf(24, 8);
  bits.type.shape = other.type.shape = {3, 8};
  TensorType t{DType::I32, {3, 8}};
  auto a = runKernel("sample", {logits, bits}, {t}), b = runKernel("sample", {logits, bits}, {t});
  auto c = runKernel("sample", {logits, other}, {t});
  int same = 0, differ = 0;
  for (int64_t i = 0; i < 24; ++i) {
    same += a[0].get(i) == b[0].get(i);
    differ += a[0].get(i) != c[0].get(i);
  }
  EXPECT_EQ(same, 24);
  EXPECT_GT(differ, 0);
  // f32 logits and their f64 copies give the same draws (the walk is in f64).
  auto d = runKernel("sample", {logits.as(DType::F64), bits}, {t});
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(a[0].get(i), d[0].get(i)) << i;
}

TEST(Sample, RowsWithoutADistributionAreErrors) {
  Buf logits = randn({2, 4});
  logits.set(5, NAN);
  const KernelDef *k = findKernel("sample");
  ASSERT_NE(k, nullptr);
  Buf bits = bitsOf(2, 1), out(DType::I32, {2});
  KernelCall call{{logits.ref(), bits.ref()}, {out.ref()}, Attrs()};
  try {
    k->run(call);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("sample: logits row 1 (of 2) is not finite"), std::string::npos)
        << e.what();
  }
}

TEST(Sample, ChecksNameTheProblem) {
  TensorType logits{DType::F32, {2, 3, 7}}, bits{DType::I32, {2, 3}}, ids{DType::I32, {2, 3}};
  EXPECT_EQ(checkMsg("sample", {logits, bits}, {ids}), "");
  EXPECT_EQ(checkMsg("sample", {logits, TensorType{DType::I32, {2, 7}}}, {ids}),
            "sample: bits [2, 7] must be [2, 3] (logits [2, 3, 7] without the vocabulary dim)");
  EXPECT_EQ(checkMsg("sample", {logits, TensorType{DType::F32, {2, 3}}}, {ids}),
            "sample: bits f32[2, 3] must be i32");
  EXPECT_EQ(checkMsg("sample", {logits, bits}, {TensorType{DType::F32, {2, 3}}}),
            "sample: result ids must be i32[2, 3], got f32[2, 3]");
  EXPECT_EQ(checkMsg("to_float", {TensorType{DType::F32, {2}}}, {TensorType{DType::F32, {2}}}),
            "to_float: x f32[2] must be i32");
  EXPECT_EQ(checkMsg("to_float", {TensorType{DType::I32, {2}}}, {TensorType{DType::F32, {3}}}),
            "to_float: result result must be f32[2], got f32[3]");
}

/* lm.to_int: truncation toward zero from f32 and f64, back from to_float exactly; a
   value that is no i32 is an error naming it, and the checks name the types. */
TEST(Sample, ToIntTruncates) {
  const double v[] = {-100.0, 0.0, 259.0, 30521.0, 2.75, -2.75, 16777215.0};
  const int32_t want[] = {-100, 0, 259, 30521, 2, -2, 16777215};
  for (DType dt : {DType::F32, DType::F64}) {
    Buf x(dt, {7});
    for (int i = 0; i < 7; ++i) x.set(i, v[i]);
    auto out = runKernel("to_int", {x}, {TensorType{DType::I32, {7}}});
    for (int i = 0; i < 7; ++i) EXPECT_EQ(out[0].get(i), (double)want[i]) << i;
  }
  Buf bad(DType::F32, {3});
  bad.set(0, 1.0);
  bad.set(1, 3e9);
  bad.set(2, std::nan(""));
  try {
    runKernel("to_int", {bad}, {TensorType{DType::I32, {3}}});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("to_int: element 1 (of 3) is 3e+09, which is not an i32 value"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(checkMsg("to_int", {TensorType{DType::I32, {2}}}, {TensorType{DType::I32, {2}}}),
            "to_int: x i32[2] must be f32 or f64");
  EXPECT_EQ(checkMsg("to_int", {TensorType{DType::F32, {2}}}, {TensorType{DType::I32, {3}}}),
            "to_int: result result must be i32[2], got i32[3]");
}

TEST(Sample, ToFloatConvertsIds) {
  Buf ids(DType::I32, {4});
  const int32_t v[] = {-100, 0, 259, 30521};
  for (int i = 0; i < 4; ++i) ids.set(i, v[i]);
  for (DType dt : {DType::F32, DType::F64}) {
    auto out = runKernel("to_float", {ids}, {TensorType{dt, {4}}});
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].get(i), (double)v[i]);
  }
}

/* lm.where_int: the i32 value of lhs where the float mask is not 0, else rhs's,
   with broadcasting (rhs a row, the mask a column), for f32 and f64 masks; the
   checks name a float value, an i32 mask and a shape that does not broadcast. */
TEST(WhereInt, SelectsIdsByMask) {
  const int32_t a[6] = {7, -100, 259, 0, 30521, 5}, b[3] = {11, 12, 13};
  for (DType dt : {DType::F32, DType::F64}) {
    Buf cond(dt, {2, 1}), lhs(DType::I32, {2, 3}), rhs(DType::I32, {3});
    cond.set(0, 1.0);
    cond.set(1, 0.0);
    for (int i = 0; i < 6; ++i) lhs.set(i, a[i]);
    for (int i = 0; i < 3; ++i) rhs.set(i, b[i]);
    auto out = runKernel("where_int", {cond, lhs, rhs}, {TensorType{DType::I32, {2, 3}}});
    const int32_t want[6] = {7, -100, 259, 11, 12, 13};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].get(i), (double)want[i]) << i;
  }
}

/* A rank-0 i32 operand (the DSL's `where(masked, ids, -100)`) broadcasts to every
   position, on either side. */
TEST(WhereInt, ScalarValueBroadcasts) {
  Buf cond(DType::F32, {2, 2}), ids(DType::I32, {2, 2}), fill(DType::I32, {});
  const double mask[4] = {1, 0, 0, 1};
  for (int i = 0; i < 4; ++i) cond.set(i, mask[i]), ids.set(i, 40 + i);
  fill.set(0, -100);
  auto kept = runKernel("where_int", {cond, ids, fill}, {TensorType{DType::I32, {2, 2}}});
  auto filled = runKernel("where_int", {cond, fill, ids}, {TensorType{DType::I32, {2, 2}}});
  const int32_t wantKept[4] = {40, -100, -100, 43}, wantFilled[4] = {-100, 41, 42, -100};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(kept[0].get(i), (double)wantKept[i]) << i;
    EXPECT_EQ(filled[0].get(i), (double)wantFilled[i]) << i;
  }
}

TEST(WhereInt, ChecksNameTheProblem) {
  TensorType m{DType::F32, {2, 3}}, ids{DType::I32, {2, 3}};
  EXPECT_EQ(checkMsg("where_int", {m, ids, ids}, {ids}), "");
  EXPECT_EQ(checkMsg("where_int", {m, ids, m}, {ids}), "where_int: rhs f32[2, 3] must be i32");
  EXPECT_EQ(checkMsg("where_int", {ids, ids, ids}, {ids}), "where_int: cond i32[2, 3] must be f32 or f64");
  EXPECT_EQ(checkMsg("where_int", {m, ids, TensorType{DType::I32, {4}}}, {ids}),
            "where: shapes [2, 3] and [4] do not broadcast: dimension 3 vs 4 at position -1 from the end");
  EXPECT_EQ(checkMsg("where_int", {m, ids, ids}, {m}), "where_int: result ids must be i32[2, 3], got f32[2, 3]");
}

}  // namespace
}  // namespace lmrt::kernels::test
