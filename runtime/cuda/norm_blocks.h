/* Implements: the tables of the CUDA backend's gradient norm (docs/distributed.md, "ZeRO on
   CUDA"), host-only and without CUDA headers, so that the kernels' CPU emulation
   (test/Unit/cuda_emu) builds them too.

   The norm sums each gradient in blocks of kZeroNormBlock elements from its start
   (NormBlock: a block of a whole gradient in the flat gradient storage), then the blocks in
   order, then the gradients in order. Under ZeRO stages 2 and 3 a rank holds only its slice
   of each gradient, and sums the blocks it owns (runtime/exec/zero_norm_blocks.h) from its
   slice and the next ranks' heads (OwnedNormBlock), so that the ranks' sums, added in
   order, are the whole gradients' bit for bit. */
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "contract/contract.h"
#include "runtime/exec/zero_norm_blocks.h"

namespace lmrt::cuda {

struct NormBlock {
  int64_t begin, end;  // element range in the flat storage
};

/* The gradient norm's blocks (NormBlock): of each parameter i, `count[i]`
   gradient elements from `at[i]` of the gradient storage, in blocks of at most
   kZeroNormBlock; parameter i's blocks are [first[i], first[i + 1]): the whole gradients'
   norm. */
struct NormBlocks {
  std::vector<NormBlock> blocks;
  std::vector<int64_t> first;  // one more than the parameters
};

inline NormBlocks normBlocks(const std::vector<int64_t> &at, const std::vector<int64_t> &count) {
  NormBlocks t;
  for (size_t i = 0; i < at.size(); ++i) {
    t.first.push_back((int64_t)t.blocks.size());
    for (int64_t b = 0; b < count[i]; b += kZeroNormBlock)
      t.blocks.push_back({at[i] + b, at[i] + std::min(count[i], b + kZeroNormBlock)});
  }
  t.first.push_back((int64_t)t.blocks.size());
  return t;
}

/* A block a ZeRO rank owns: elements [begin, end) of a logical gradient whose slices are
   sliceLength = ceil(n / D) elements (rank q's from element q * sliceLength). Element e is
   rank q = e / sliceLength's element e - q * sliceLength: this rank's (`rank`) at `slice` +
   that of the gradient storage, another rank's (of its head) at q * headStride + heads +
   that of the heads buffer. */
struct OwnedNormBlock {
  int64_t begin, end, slice, sliceLength, heads;
  int32_t rank;
};

/* Rank `rank`'s part of the norm from its gradient slices: `numel` the logical gradients'
   sizes, `gradAt` where this rank's slice of each starts in the gradient storage. */
struct SliceNorm {
  std::vector<OwnedNormBlock> blocks;  // this rank's owned blocks, gradient by gradient, in block order
  std::vector<int64_t> firstBlock;     // per gradient, one more: its blocks [firstBlock[i], firstBlock[i + 1])
  std::vector<int64_t> headAt, headLength;  // per gradient: its head's place in a rank's part; this rank's head
  int64_t headStride = 0;                   // elements of one rank's part of the all-gathered heads
  OwnedSumsLayout sums;                     // the all-gather of the owned blocks' sums
};

inline SliceNorm sliceNorm(const std::vector<int64_t> &numel, const std::vector<bool> &frozen,
                           const std::vector<int64_t> &gradAt, int rank, int ranks) {
  SliceNorm t;
  t.sums = ownedSumsLayout(numel, frozen, ranks);
  for (size_t i = 0; i < numel.size(); ++i) {
    const int64_t n = numel[i];
    t.firstBlock.push_back((int64_t)t.blocks.size());
    t.headAt.push_back(t.headStride);
    t.headLength.push_back(frozen[i] ? 0 : zeroHeadLength(n, ranks, rank));
    if (frozen[i]) continue;  // no gradient
    t.headStride += zeroHeadSlot(n, ranks);
    const ShardRange mine = zeroShard(n, ranks, rank);
    const int64_t sliceLength = (n + ranks - 1) / ranks;
    for (int64_t start = zeroNormRoundUp(mine.begin); start < mine.end; start += kZeroNormBlock)
      t.blocks.push_back({start, std::min(n, start + kZeroNormBlock), gradAt[i], sliceLength, t.headAt[i], rank});
  }
  t.firstBlock.push_back((int64_t)t.blocks.size());
  return t;
}

}  // namespace lmrt::cuda
