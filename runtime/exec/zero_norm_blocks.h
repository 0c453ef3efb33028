/* Implements: the arithmetic of ZeRO's gradient norm from slices that both backends share
   (docs/distributed.md, "Stage 2" and "ZeRO on CUDA"): which blocks of a gradient each rank
   sums, which elements it lends to the owner of a block that starts on an earlier rank, and
   the order in which the owners' block sums are added, so that the norm from the slices is
   the one every rank's whole gradients give, bit for bit.

   A gradient of n elements is summed in blocks of kZeroNormBlock elements from its start
   (the CPU's grad_clip.h kGradNormBlock, the CUDA backend's per-parameter norm blocks), each
   block's squares in a fixed order of its own, then the blocks in order, then the gradients
   in order. Rank q of D holds the slice zeroShard(n, D, q). Block b is summed by its owner,
   the rank whose slice holds its first element; the part of the block in the next ranks'
   slices is their "head" (the elements of a slice before its first block boundary, fewer
   than one block), all-gathered. The owners' sums are then all-gathered, each gradient's
   in a slot of the largest number of blocks any rank owns, and added in block order, which
   is rank order. Pure functions, no collectives. */
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "contract/contract.h"

namespace lmrt {

constexpr int64_t kZeroNormBlock = 65536;

inline int64_t zeroNormRoundUp(int64_t x) { return (x + kZeroNormBlock - 1) / kZeroNormBlock * kZeroNormBlock; }

/* Elements of rank q's slice of an n-element gradient that end a block begun on an
   earlier rank: [begin_q, min(end_q, the next multiple of kZeroNormBlock)). */
inline int64_t zeroHeadLength(int64_t n, int ranks, int q) {
  const ShardRange r = zeroShard(n, ranks, q);
  return std::min(r.end, zeroNormRoundUp(r.begin)) - r.begin;
}

/* The largest head of any rank: the all-gather's per-rank slot (0: no boundary falls in a block). */
inline int64_t zeroHeadSlot(int64_t n, int ranks) {
  int64_t slot = 0;
  for (int q = 0; q < ranks; ++q) slot = std::max(slot, zeroHeadLength(n, ranks, q));
  return slot;
}

/* The blocks whose first element lies in rank q's slice. */
inline int64_t zeroOwnedBlocks(int64_t n, int ranks, int q) {
  const ShardRange r = zeroShard(n, ranks, q);
  return (r.end + kZeroNormBlock - 1) / kZeroNormBlock - (r.begin + kZeroNormBlock - 1) / kZeroNormBlock;
}

/* Where each gradient's owned-block sums go in the all-gather of the sums: gradient i's at
   at[i] of every rank's part, in a slot of slots[i] doubles (none for a frozen one, which
   has no gradient); every rank's part is `total` doubles. */
struct OwnedSumsLayout {
  std::vector<int64_t> at, slots;
  int64_t total = 0;
};

inline OwnedSumsLayout ownedSumsLayout(const std::vector<int64_t> &numel, const std::vector<bool> &frozen, int ranks) {
  OwnedSumsLayout l;
  for (size_t i = 0; i < numel.size(); ++i) {
    int64_t slot = 0;
    for (int q = 0; !frozen[i] && q < ranks; ++q) slot = std::max(slot, zeroOwnedBlocks(numel[i], ranks, q));
    l.at.push_back(l.total);
    l.slots.push_back(slot);
    l.total += slot;
  }
  return l;
}

/* The sum of squares of all gradients from every rank's owned-block sums (`all`: rank q's
   part at q * layout.total): each gradient's blocks in block order (rank order), then the
   gradients in order. A frozen gradient adds nothing (whole, its zeros add +0). */
inline double addOwnedSums(const std::vector<int64_t> &numel, const std::vector<bool> &frozen, int ranks,
                           const OwnedSumsLayout &layout, const std::vector<double> &all) {
  double s = 0;
  for (size_t i = 0; i < numel.size(); ++i) {
    if (frozen[i]) continue;
    double t = 0;
    for (int q = 0; q < ranks; ++q) {
      const int64_t owned = zeroOwnedBlocks(numel[i], ranks, q);
      for (int64_t k = 0; k < owned; ++k) t += all[(size_t)(q * layout.total + layout.at[i] + k)];
    }
    s += t;
  }
  return s;
}

}  // namespace lmrt
