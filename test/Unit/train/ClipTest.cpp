/* Tests the global gradient norm (across parameters and precisions) and
   clipping by max_norm / (norm + 1e-6). */
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "contract/contract.h"
#include "runtime/cpu/grad_clip.h"
#include "runtime/cpu/zero_grad_norm.h"

using namespace lmrt;

TEST(Clip, GlobalNormSpansAllParameters) {
  float a[2] = {3, 0};
  double b[1] = {4};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 2, false}, {DType::F64, nullptr, b, 1, true}};
  EXPECT_DOUBLE_EQ(globalGradNorm(v), 5.0);
}

TEST(Clip, ScalesOnlyAboveTheLimit) {
  float a[2] = {3, 0};
  double b[1] = {4};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 2, false}, {DType::F64, nullptr, b, 1, true}};
  EXPECT_EQ(clipGradients(v, 5.0, 10.0), 1.0);
  EXPECT_EQ(a[0], 3.0f);
  EXPECT_EQ(clipGradients(v, 5.0, 0.0), 1.0);  // 0 = off
  double c = clipGradients(v, 5.0, 1.0);
  EXPECT_DOUBLE_EQ(c, 1.0 / (5.0 + 1e-6));
  EXPECT_NEAR(globalGradNorm(v), 1.0, 1e-6);
  EXPECT_FLOAT_EQ(a[0], float(3.0 * c));
  EXPECT_DOUBLE_EQ(b[0], 4.0 * c);
}

TEST(Clip, NormIsAccumulatedInDouble) {
  // 2^24 + 1 terms of 1: a float accumulator would stop at 2^24.
  const int64_t n = (1 << 24) + 4;
  std::vector<float> g(n, 1.0f);
  std::vector<ParamView> v = {{DType::F32, nullptr, g.data(), n, false}};
  EXPECT_DOUBLE_EQ(globalGradNorm(v), std::sqrt(double(n)));
}

TEST(Clip, NonFiniteNormIsAnError) {
  float a[1] = {1};
  std::vector<ParamView> v = {{DType::F32, nullptr, a, 1, false}};
  EXPECT_THROW(clipGradients(v, NAN, 1.0), Error);
  EXPECT_THROW(clipGradients(v, INFINITY, 1.0), Error);
}

TEST(Clip, ScaleWithoutTouchingGradients) {
  EXPECT_EQ(clipScale(5.0, 10.0), 1.0);
  EXPECT_EQ(clipScale(5.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(clipScale(5.0, 1.0), 1.0 / (5.0 + 1e-6));
  EXPECT_THROW(clipScale(NAN, 1.0), Error);
}

/* The norm sums fixed blocks in block order: any thread count gives the same bits. */
TEST(Clip, NormHasTheSameBitsForAnyThreadCount) {
  const int64_t n = 1000003;
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = std::sin(0.001f * float(i)) * (1.0f + float(i % 7));
  std::vector<ParamView> v = {{DType::F32, nullptr, g.data(), n, false}};
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double one = globalGradNorm(v);
  omp_set_num_threads(3);
  double three = globalGradNorm(v);
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(&one, &three, sizeof one), 0);
  double ref = 0;
  for (float x : g) ref += double(x) * double(x);
  EXPECT_NEAR(one, std::sqrt(ref), 1e-9 * std::sqrt(ref));
}

/* ZeRO-2's norm from slices (runtime/cpu/zero_grad_norm.h): every rank sums the blocks
   that begin in its slice, putting together a block that runs into the next ranks'
   slices from their heads; the sums added in rank (= block) order are DP's sum of the
   whole gradient, bit for bit. Sizes around the 65,536-element block and rank counts
   whose slices cut blocks anywhere, slices smaller than a block, and empty slices. */
template <typename T> void checkShardedSum(int64_t n, int ranks) {
  std::vector<T> g((size_t)n);
  for (int64_t i = 0; i < n; ++i)
    g[(size_t)i] = T(std::sin(0.37 * double(i) + 1.0) * (1.0 + 1e-3 * double(i % 97)) * std::exp(-double(i % 1000) / 50));
  const DType dtype = sizeof(T) == 8 ? DType::F64 : DType::F32;
  const int64_t slot = cpu::zeroHeadSlot(n, ranks);
  std::vector<T> heads((size_t)(slot * ranks) + 1, T(0));
  for (int q = 0; q < ranks; ++q) {
    const ShardRange r = zeroShard(n, ranks, q);
    const int64_t len = cpu::zeroHeadLength(n, ranks, q);
    ASSERT_LE(len, slot);
    std::memcpy(heads.data() + q * slot, g.data() + r.begin, (size_t)len * sizeof(T));
  }
  double sum = 0;
  int64_t blocks = 0;
  for (int q = 0; q < ranks; ++q) {
    const ShardRange r = zeroShard(n, ranks, q);
    const std::vector<double> mine =
        cpu::zeroOwnedBlockSums(g.data() + r.begin, dtype, n, ranks, q, heads.data(), slot);
    ASSERT_EQ((int64_t)mine.size(), cpu::zeroOwnedBlocks(n, ranks, q)) << "n " << n << " rank " << q << " of " << ranks;
    for (double s : mine) sum += s;
    blocks += (int64_t)mine.size();
  }
  EXPECT_EQ(blocks, (n + kGradNormBlock - 1) / kGradNormBlock);
  const double whole = gradSumSquares(g.data(), dtype, n);
  EXPECT_EQ(std::memcmp(&sum, &whole, sizeof sum), 0) << "n " << n << " on " << ranks << " ranks: " << sum << " vs "
                                                       << whole;
}

/* Why the blocks are put together: each rank summing its own slice (grad_clip's way) and
   the slices' sums added in rank order is another order of the same additions, and gives
   other bits (a 100,000-element f32 gradient on 3 ranks; the sums in double of f32
   squares are nearly exact, so some sizes happen to agree). */
TEST(Clip, ZeroTwoNormOfSlicesAloneDiffers) {
  const int64_t n = 100000;
  const int ranks = 3;
  std::vector<float> g((size_t)n);
  for (int64_t i = 0; i < n; ++i)
    g[(size_t)i] = float(std::sin(0.37 * double(i) + 1.0) * (1.0 + 1e-3 * double(i % 97)) * std::exp(-double(i % 1000) / 50));
  double sliced = 0;
  for (int q = 0; q < ranks; ++q) {
    const ShardRange r = zeroShard(n, ranks, q);
    sliced += gradSumSquares(g.data() + r.begin, DType::F32, r.size());
  }
  const double whole = gradSumSquares(g.data(), DType::F32, n);
  EXPECT_NE(std::memcmp(&sliced, &whole, sizeof sliced), 0);
  EXPECT_NEAR(sliced, whole, 1e-12 * whole);
}

TEST(Clip, ZeroTwoNormFromSlicesIsTheWholeNorm) {
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(1000), kGradNormBlock - 1, kGradNormBlock, kGradNormBlock + 1,
                    3 * kGradNormBlock + 17, int64_t(1000003)})
    for (int ranks : {1, 2, 3, 4, 7}) {
      checkShardedSum<float>(n, ranks);
      checkShardedSum<double>(n, ranks);
    }
}

/* fp16's overflow check under ZeRO stages 2 and 3 (docs/distributed.md, "ZeRO with
   mixed precision and rematerialization"): an infinity or NaN in any one rank's slice
   of a reduced gradient makes the norm every rank puts together non-finite (the owners'
   block sums, all-gathered, added by every rank), so every rank's loss scaler sees the
   overflow and skips the step. Each position: rank 0's slice, a head that ends a block
   begun on an earlier rank, and the last rank's slice. */
TEST(Clip, ZeroNormOfSlicesSeesAnOverflowInAnyRanksSlice) {
  const int64_t n = 100000;
  const int ranks = 3;
  for (float bad : {INFINITY, -INFINITY, NAN})
    for (int64_t at : {int64_t(5), int64_t(40000), int64_t(99999)}) {
      std::vector<float> g((size_t)n, 0.25f);
      g[(size_t)at] = bad;
      const int64_t slot = cpu::zeroHeadSlot(n, ranks);
      std::vector<float> heads((size_t)(slot * ranks) + 1, 0.0f);
      for (int q = 0; q < ranks; ++q)
        std::memcpy(heads.data() + q * slot, g.data() + zeroShard(n, ranks, q).begin,
                    (size_t)cpu::zeroHeadLength(n, ranks, q) * sizeof(float));
      double sum = 0;
      for (int q = 0; q < ranks; ++q)
        for (double s : cpu::zeroOwnedBlockSums(g.data() + zeroShard(n, ranks, q).begin, DType::F32, n, ranks, q,
                                                heads.data(), slot))
          sum += s;
      EXPECT_FALSE(std::isfinite(sum)) << bad << " at element " << at;
    }
}
