/* Tests the gradient norm's block kernels (runtime/cuda/norm_kernels.cuh) without a GPU, on
   the CPU emulation of emulation.h: for 2 to 5 ranks and gradients around the block size
   (empty, one element, a few, one block, a block and one, several blocks with an uneven tail,
   a frozen one), the blocks each rank owns, summed from its padded slices and every rank's
   heads (norm_blocks.h's SliceNorm: the CUDA backend's norm under ZeRO stages 2 and 3) and
   added as runtime/exec/zero_norm_blocks.h adds them, give the norm of the whole gradients
   (blockSumSquares over each whole gradient, the backend's norm without ZeRO) bit for bit;
   f32 and f64. And one rank's slice summed alone, the ranks' sums added, gives other bits:
   the test can tell. */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "emulation.h"
#include "runtime/cuda/norm_kernels.cuh"

namespace lmrt::cuda {
namespace {

constexpr unsigned kThreads = 256;  // the backend's (kernels.cuh)

template <typename T> double wholeNorm(const std::vector<T> &g, const std::vector<int64_t> &at,
                                       const std::vector<int64_t> &numel) {
  const NormBlocks t = normBlocks(at, numel);
  std::vector<double> sums(t.blocks.size());
  if (!t.blocks.empty())
    lmrt_emu::launch(norm::blockSumSquares<T>, {(unsigned)t.blocks.size(), 1, 1}, {kThreads, 1, 1}, 0, g.data(),
                     t.blocks.data(), sums.data());
  double s = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    double p = 0;
    for (int64_t b = t.first[i]; b < t.first[i + 1]; ++b) p += sums[(size_t)b];
    s += p;
  }
  return s;
}

/* Whether the naive sum differs from the whole norm (the main check is an EXPECT). */
template <typename T> bool check(int ranks) {
  const std::vector<int64_t> numel = {0, 1, 7, 65536, 65537, 200003, 33, 131077};
  const std::vector<bool> frozen = {false, false, false, false, false, false, true, false};
  std::mt19937 rng(17 + ranks);
  std::normal_distribution<double> normal(0.0, 1.0);
  // The whole gradients, each at an offset of its own (gaps between them); a frozen one is zeros.
  std::vector<int64_t> at;
  int64_t total = 0;
  for (int64_t n : numel) at.push_back(total), total += n + 5;
  std::vector<T> g((size_t)total, T(0));
  for (size_t i = 0; i < numel.size(); ++i)
    for (int64_t e = 0; !frozen[i] && e < numel[i]; ++e) g[(size_t)(at[i] + e)] = T(normal(rng));
  const double whole = wholeNorm(g, at, numel);

  OwnedSumsLayout layout;
  std::vector<double> all;
  double naive = 0;  // each rank's slices summed alone, then the ranks' sums in order
  for (int r = 0; r < ranks; ++r) {
    // Rank r's padded slices, packed (64-element aligned, as the backend packs them).
    std::vector<int64_t> sliceAt;
    std::vector<T> slices;
    std::vector<int64_t> mineCount;
    for (size_t i = 0; i < numel.size(); ++i) {
      const int64_t c = (numel[i] + ranks - 1) / ranks;
      const ShardRange mine = zeroShard(numel[i], ranks, r);
      sliceAt.push_back((int64_t)slices.size());
      for (int64_t j = 0; j < c; ++j)
        slices.push_back(mine.begin + j < mine.end ? g[(size_t)(at[i] + mine.begin + j)] : T(0));
      slices.resize((slices.size() + 63) / 64 * 64, T(0));
      mineCount.push_back(frozen[i] ? 0 : mine.size());
    }
    naive += wholeNorm(slices, sliceAt, mineCount);
    const SliceNorm t = sliceNorm(numel, frozen, sliceAt, r, ranks);
    // Every rank's heads, where the all-gather leaves them.
    std::vector<T> heads((size_t)std::max<int64_t>(1, t.headStride * ranks), T(0));
    for (int q = 0; q < ranks; ++q)
      for (size_t i = 0; i < numel.size(); ++i)
        for (int64_t j = 0; !frozen[i] && j < zeroHeadLength(numel[i], ranks, q); ++j)
          heads[(size_t)(q * t.headStride + t.headAt[i] + j)] = g[(size_t)(at[i] + zeroShard(numel[i], ranks, q).begin + j)];
    EXPECT_EQ(t.headLength.size(), numel.size());
    for (size_t i = 0; i < numel.size(); ++i)
      EXPECT_EQ(t.headLength[i], frozen[i] ? 0 : zeroHeadLength(numel[i], ranks, r));
    std::vector<double> sums(t.blocks.size());
    if (!t.blocks.empty())
      lmrt_emu::launch(norm::ownedBlockSumSquares<T>, {(unsigned)t.blocks.size(), 1, 1}, {kThreads, 1, 1}, 0,
                       slices.data(), heads.data(), t.headStride, t.blocks.data(), sums.data());
    if (all.empty()) layout = t.sums, all.assign((size_t)(layout.total * ranks), 0.0);
    for (size_t i = 0; i < numel.size(); ++i) {
      EXPECT_LE(t.firstBlock[i + 1] - t.firstBlock[i], layout.slots[i]);
      for (int64_t b = t.firstBlock[i]; b < t.firstBlock[i + 1]; ++b)
        all[(size_t)(r * layout.total + layout.at[i] + b - t.firstBlock[i])] = sums[(size_t)b];
    }
  }
  const double fromSlices = addOwnedSums(numel, frozen, ranks, layout, all);
  EXPECT_GT(whole, 0.0);
  EXPECT_EQ(std::memcmp(&fromSlices, &whole, sizeof whole), 0)
      << ranks << " ranks: " << fromSlices << " from the slices, " << whole << " whole";
  return std::memcmp(&naive, &whole, sizeof whole) != 0;
}

TEST(NormEmulation, OwnedBlocksGiveTheWholeNormF32) {
  int naiveDiffers = 0;
  for (int ranks = 2; ranks <= 5; ++ranks) naiveDiffers += check<float>(ranks);
  EXPECT_GT(naiveDiffers, 0) << "the slices summed alone agree for every number of ranks: the test cannot tell";
}

TEST(NormEmulation, OwnedBlocksGiveTheWholeNormF64) {
  int naiveDiffers = 0;
  for (int ranks = 2; ranks <= 5; ++ranks) naiveDiffers += check<double>(ranks);
  EXPECT_GT(naiveDiffers, 0) << "the slices summed alone agree for every number of ranks: the test cannot tell";
}

}  // namespace
}  // namespace lmrt::cuda
