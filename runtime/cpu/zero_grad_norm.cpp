/* Implements: zero_grad_norm.h. */
#include "runtime/cpu/zero_grad_norm.h"

#include <algorithm>
#include <cstring>

#include "contract/contract.h"
#include "runtime/cpu/grad_clip.h"

namespace lmrt::cpu {
static_assert(kGradNormBlock == kZeroNormBlock, "ZeRO's norm blocks are the norm's");

std::vector<double> zeroOwnedBlockSums(const void *slice, DType dtype, int64_t n, int ranks, int rank,
                                       const void *heads, int64_t slot) {
  const size_t eb = dtypeSize(dtype);
  const ShardRange mine = zeroShard(n, ranks, rank);
  const char *own = static_cast<const char *>(slice);
  std::vector<double> sums;
  std::vector<char> block;  // a block that runs past this slice, put together
  for (int64_t start = zeroNormRoundUp(mine.begin); start < mine.end; start += kGradNormBlock) {
    const int64_t end = std::min(n, start + kGradNormBlock);
    const char *first = own + (size_t)(start - mine.begin) * eb;
    if (end <= mine.end) {
      sums.push_back(gradBlockSumSquares(first, dtype, end - start));
      continue;
    }
    // The block's tail lies in the next ranks' slices: their heads, in rank order.
    block.assign(first, first + (size_t)(mine.end - start) * eb);
    for (int q = rank + 1; q < ranks && zeroShard(n, ranks, q).begin < end; ++q) {
      const char *head = static_cast<const char *>(heads) + (size_t)(q * slot) * eb;
      block.insert(block.end(), head, head + (size_t)zeroHeadLength(n, ranks, q) * eb);
    }
    if ((int64_t)block.size() != (end - start) * (int64_t)eb)
      fail("ZeRO-2 gradient norm: block at element %lld of %lld put together from %zu bytes, %lld expected",
           (long long)start, (long long)n, block.size(), (long long)((end - start) * (int64_t)eb));
    sums.push_back(gradBlockSumSquares(block.data(), dtype, end - start));
  }
  return sums;
}

}  // namespace lmrt::cpu
