/* Implements: the gradient norm of ZeRO stage 2 (docs/distributed.md, "ZeRO"), which
   holds each gradient as slices (rank q: elements [begin_q, end_q) of zeroShard),
   bit for bit the norm of data parallelism (grad_clip.h).

   DP sums each gradient's squares in blocks of kGradNormBlock elements, each block in
   an order of its own over the whole block (4 streams of 16 lanes), and adds the blocks'
   sums in block order. A block's sum needs the whole block, and a slice boundary may
   fall inside one; so block b is summed by the rank whose slice holds its first element
   (its owner), which receives the rest of the block from the next ranks: each rank's
   "head", the elements of its slice before its first block boundary (fewer than one
   block), all-gathered. The owners' sums are then all-gathered and added in block order,
   which is rank order. These are the pure pieces; ZeroShards runs the collectives. */
#pragma once
#include <cstdint>
#include <vector>

#include "base/tensor.h"
#include "runtime/exec/zero_norm_blocks.h"

namespace lmrt::cpu {

/* The blocks, heads and owners are runtime/exec/zero_norm_blocks.h's (the CUDA backend's
   too), its blocks this file's kGradNormBlock. */
using lmrt::zeroHeadLength;
using lmrt::zeroHeadSlot;
using lmrt::zeroOwnedBlocks;

/* The sums of squares of the blocks rank `rank` owns, in block order: `slice` is its
   elements [begin, end) of the gradient, `heads` every rank's head, rank q's at element
   q * slot (zeroHeadSlot). */
std::vector<double> zeroOwnedBlockSums(const void *slice, DType dtype, int64_t n, int ranks, int rank,
                                       const void *heads, int64_t slot);

}  // namespace lmrt::cpu
