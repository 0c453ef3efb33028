/* Implements: the one fact about a tensor-parallel slice's padding that the plan
   writer, the plan contract, lmc, lmrt and its checkpoints share (plan.proto's
   ParamSharding, docs/distributed.md "The vocabulary").

   Dimension `dim` of a split parameter is cut into `shards` blocks of the local size
   (each `segments` segments cut alike). Where the shards do not divide the logical
   size (a vocabulary of V classes over T ranks) the blocks are ceil(V / T) long and
   `logical_size` says V: block r covers [r b, min((r + 1) b, V)), the rest of it is
   padding. Without `logical_size` the logical size is shards x block. */
#pragma once
#include <algorithm>
#include <cstdint>

#include "contract/plan.pb.h"

namespace lmrt {

/* The logical size of the split dimension, given its local (block) size. */
inline int64_t splitLogicalSize(const plan::ParamSharding &s, int64_t block) {
  return s.logical_size() > 0 ? s.logical_size() : block * s.shards();
}

/* How many of block `index`'s `block` entries lie in a logical size of `size` (the
   rest is padding): min(block, size - index block), at least 0. */
inline int64_t splitBlockFilled(int64_t size, int64_t block, int64_t index) {
  return std::max<int64_t>(0, std::min(block, size - index * block));
}

/* Whether blocks of `block` over `shards` ranks can pad a logical size `size`: the
   last rank holds at least one entry and no rank a whole block of padding. */
inline bool splitPaddingFits(int64_t size, int64_t block, int64_t shards) {
  return shards >= 1 && block >= 1 && (shards - 1) * block < size && size <= shards * block;
}

}  // namespace lmrt
