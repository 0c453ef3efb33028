/* Tests lm.dropout's CPU kernel: its statistics (the drop rate p within a
   stated tolerance, the mean kept by the 1/(1-p) scale, kept elements scaled
   exactly), and that its mask is a pure function of (row key, site, element):
   the same key and site drop the same elements (what the VJP relies on),
   another site or another row's key drop others, independently. The keys are
   fixed, so the checks give the same result every run; their bounds are 6
   sigma of the binomial counts, so only a wrong distribution fails them. The
   gradient is checked by finite differences in test/GradCheck/dropout.mlir. */
#include <cmath>

#include "KernelTestUtil.h"
#include "contract/dropout_math.h"

namespace lmrt::kernels::test {
namespace {

Buf keysOf(int64_t rows, uint32_t seed) {
  std::mt19937 g(seed);
  Buf b(DType::I32, {rows, 2});
  for (int64_t i = 0; i < 2 * rows; ++i) static_cast<int32_t *>(b.data())[i] = (int32_t)g();
  return b;
}

Buf ones(DType dt, Shape s) {
  Buf b(dt, std::move(s));
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, 1.0);
  return b;
}

Attrs rate(double p, int64_t site) {
  Attrs a;
  a.set("p", p);
  a.set("site", site);
  return a;
}

TEST(Dropout, RateAndMeanWithinTolerance) {
  const int64_t rows = 8, n = 64 * 256;  // 131,072 elements
  for (DType dt : {DType::F32, DType::F64})
    for (double p : {0.1, 0.5, 0.9}) {
      Buf x = ones(dt, {rows, 64, 256});
      auto y = runKernel("dropout", {x, keysOf(rows, 11)}, {x.type}, rate(p, 3));
      const double total = (double)x.numel(), scale = 1.0 / (1.0 - p);
      int64_t dropped = 0;
      double sum = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        double v = y[0].get(i);
        if (v == 0) ++dropped;
        else ASSERT_EQ(v, dt == DType::F32 ? (double)(float)scale : scale) << "element " << i;
        sum += v;
      }
      // The drop count is Binomial(total, p): 6 sigma.
      const double sigma = std::sqrt(total * p * (1 - p));
      EXPECT_LT(std::fabs(dropped - total * p), 6 * sigma)
          << dropped << " of " << total << " dropped at p = " << p << " (" << dtypeName(dt) << ")";
      // The mean of y is (kept / total) / (1 - p): 1 up to the same count's deviation.
      EXPECT_LT(std::fabs(sum / total - 1.0), 6 * sigma / total * scale) << "mean " << sum / total << " at p = " << p;
    }
}

TEST(Dropout, ZeroRateIsTheIdentity) {
  Buf x = randn({4, 5, 6}, DType::F64, 1.0);
  auto y = runKernel("dropout", {x, keysOf(4, 1)}, {x.type}, rate(0.0, 0));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[0].get(i), x.get(i));
}

TEST(Dropout, MaskIsAPureFunctionOfKeySiteAndElement) {
  const int64_t rows = 4, n = 4096;
  const double p = 0.5;
  Buf x = ones(DType::F32, {rows, n}), keys = keysOf(rows, 5);
  auto a = runKernel("dropout", {x, keys}, {x.type}, rate(p, 7));
  auto b = runKernel("dropout", {x, keys}, {x.type}, rate(p, 7));
  auto other = runKernel("dropout", {x, keys}, {x.type}, rate(p, 8));
  // Row 1 given row 0's key drops what row 0 drops; with its own key, others.
  Buf shared = keys;
  static_cast<int32_t *>(shared.data())[2] = static_cast<int32_t *>(keys.data())[0];
  static_cast<int32_t *>(shared.data())[3] = static_cast<int32_t *>(keys.data())[1];
  auto s = runKernel("dropout", {x, shared}, {x.type}, rate(p, 7));
  int64_t same = 0, bothDropped = 0, rowsAgree = 0, rowsAgreeOwn = 0;
  for (int64_t i = 0; i < rows * n; ++i) {
    same += a[0].get(i) == b[0].get(i);
    bothDropped += a[0].get(i) == 0 && other[0].get(i) == 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    rowsAgree += s[0].get(n + i) == s[0].get(i);
    rowsAgreeOwn += a[0].get(n + i) == a[0].get(i);
  }
  EXPECT_EQ(same, rows * n);
  EXPECT_EQ(rowsAgree, n);
  // Independent masks: both drop p^2 of the elements, agree on half (6 sigma).
  const double total = (double)(rows * n), sig = std::sqrt(total * p * p * (1 - p * p));
  EXPECT_LT(std::fabs(bothDropped - total * p * p), 6 * sig) << bothDropped;
  EXPECT_LT(std::fabs(rowsAgreeOwn - n * 0.5), 6 * std::sqrt(n * 0.25)) << rowsAgreeOwn;
}

/* A part's key [2, rows, 2] (the rows' keys, then the part index c in word 0
   of each row): x [rows, S/P, d] is positions c * S/P ... of x [rows, S, d],
   and drops exactly what the whole row's dropout drops there (what sequence
   parallelism relies on: contract/dropout_math.h). */
Buf partKey(const Buf &keys, int64_t rows, int32_t c) {
  Buf k(DType::I32, {2, rows, 2});
  int32_t *w = static_cast<int32_t *>(k.data());
  for (int64_t i = 0; i < 2 * rows; ++i) w[i] = static_cast<const int32_t *>(keys.data())[i];
  for (int64_t r = 0; r < rows; ++r) w[2 * rows + 2 * r] = w[2 * rows + 2 * r + 1] = c;
  return k;
}

TEST(Dropout, APartsKeyDropsTheWholeRowsElements) {
  const int64_t rows = 3, S = 8, d = 16, parts = 4, s = S / parts;
  Buf x = randn({rows, S, d}, DType::F32), keys = keysOf(rows, 9);
  auto whole = runKernel("dropout", {x, keys}, {x.type}, rate(0.5, 2));
  for (int32_t c = 0; c < parts; ++c) {
    Buf xp(DType::F32, {rows, s, d});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < s * d; ++i) xp.set(r * s * d + i, x.get(r * S * d + c * s * d + i));
    auto part = runKernel("dropout", {xp, partKey(keys, rows, c)}, {xp.type}, rate(0.5, 2));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < s * d; ++i)
        ASSERT_EQ(part[0].get(r * s * d + i), whole[0].get(r * S * d + c * s * d + i)) << "part " << c << " row " << r;
  }
  // The mutant: part 1 keyed as a whole row drops part 0's elements, not its own.
  Buf xp(DType::F32, {rows, s, d});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < s * d; ++i) xp.set(r * s * d + i, x.get(r * S * d + s * d + i));
  auto wrong = runKernel("dropout", {xp, keys}, {xp.type}, rate(0.5, 2));
  int64_t differ = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < s * d; ++i) differ += wrong[0].get(r * s * d + i) != whole[0].get(r * S * d + s * d + i);
  EXPECT_GT(differ, 0);
}

TEST(Dropout, ThresholdEdges) {
  EXPECT_EQ(lmc::dropoutThreshold(0.0), 0u);
  EXPECT_EQ(lmc::dropoutThreshold(0.5), 0x80000000u);
  // p = 0 keeps every element whatever its hash.
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_TRUE(lmc::dropoutKeep(12345, i, 0));
}

TEST(Dropout, CheckNamesTheRule) {
  const KernelDef *k = findKernel("dropout");
  ASSERT_NE(k, nullptr);
  TensorType x{DType::F32, {4, 3}}, key{DType::I32, {4, 2}};
  EXPECT_EQ(k->check({x, key}, {x}, withDefaults("dropout", rate(0.1, 0))), "");
  EXPECT_NE(k->check({x, TensorType{DType::I32, {3, 2}}}, {x}, withDefaults("dropout", rate(0.1, 0))).find("must be [4, 2]"),
            std::string::npos);
  EXPECT_NE(k->check({x, key}, {x}, withDefaults("dropout", rate(1.0, 0))).find("must be in [0, 1)"), std::string::npos);
  EXPECT_EQ(k->check({x, TensorType{DType::I32, {2, 4, 2}}}, {x}, withDefaults("dropout", rate(0.1, 0))), "");
  EXPECT_NE(k->check({x, TensorType{DType::I32, {2, 3, 2}}}, {x}, withDefaults("dropout", rate(0.1, 0))).find("or [2, 4, 2] (the key of a part"),
            std::string::npos);
}

}  // namespace
}  // namespace lmrt::kernels::test
