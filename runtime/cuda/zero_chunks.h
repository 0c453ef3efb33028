/* Implements: the chunk table of the CUDA backend's elementwise optimizers (AdamW, SGD,
   Lion: optimizer.h's AdamWChunk), for the whole parameters or for one ZeRO rank's
   slices of them (docs/distributed.md, "ZeRO", "ZeRO on CUDA").

   Each chunk is at most kChunkElems elements of one parameter (a CUDA block's work).
   Without ZeRO (ranks = 1) the chunks cover every trainable parameter and the
   optimizer state has the parameters' layout (stateShift 0). For rank r of D the
   chunks cover only its slice of each parameter, contract.h's zeroShard (the CPU
   backend's ZeroShards takes the same slices, so checkpoints are interchangeable),
   and the state holds only those slices, one after another, each starting on a
   kAlignElems boundary: chunk elements [begin, end) of the flat parameters keep their
   state at [begin - stateShift, end - stateShift).

   From ZeRO stage 2 on the train step leaves only the rank's slice of each gradient
   (contract/zero3.h: the padded slice, reduce-scattered), and the backend keeps only
   those, in a layout of their own: a chunk's gradient is then at
   [begin - gradShift, end - gradShift). The gradient norm's blocks (normBlocks; ZeRO's
   in norm_blocks.h) are as large as the chunks. Host-only, no CUDA calls. */
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "contract/contract.h"
#include "runtime/cuda/optimizer.h"

namespace lmrt::cuda {

/* AdamW's chunks: no block gets more than this many elements. The norm's blocks are as
   large (normBlocks), ZeRO's norm blocks (runtime/exec/zero_norm_blocks.h) too. */
constexpr int64_t kChunkElems = 1 << 16;
static_assert(kChunkElems == kZeroNormBlock, "the norm's blocks are ZeRO's");

/* What the chunk table needs of a parameter laid out in the flat storage. */
struct ChunkParam {
  int64_t offset = 0, numel = 0;  // elements into the flat parameter storage
  bool frozen = false, decay = false;
  double lrScale = 1.0;
  /* Where its gradient starts in the flat gradient storage: -1 when the gradients have the
     parameters' layout (the whole gradient at `offset`); from ZeRO stage 2 on where this
     rank's slice of the gradient (its first element being element slices[i].begin) starts. */
  int64_t gradSlice = -1;
};

struct ChunkTable {
  std::vector<AdamWChunk> chunks;
  std::vector<ShardRange> slices;    // per parameter: the elements this rank updates (zeroShard)
  std::vector<int64_t> stateOffset;  // per parameter: its slice's first element in the state storage
  int64_t stateElems = 0;            // the state storage's size, in elements
};

/* `alignElems`: the state storage's alignment of each slice, in elements (>= 1). */
inline ChunkTable elementwiseChunks(const std::vector<ChunkParam> &params, int rank, int ranks, int64_t alignElems) {
  ChunkTable t;
  int64_t state = 0;
  for (const ChunkParam &p : params) {
    const ShardRange r = ranks > 1 ? zeroShard(p.numel, ranks, rank) : ShardRange{0, p.numel};
    // Without ZeRO the state mirrors the parameters (their own offsets, aligned by the caller).
    const int64_t at = ranks > 1 ? state : p.offset + r.begin;
    const int64_t gradShift = p.gradSlice < 0 ? 0 : p.offset + r.begin - p.gradSlice;
    t.slices.push_back(r);
    t.stateOffset.push_back(at);
    // A frozen parameter gets no chunk: the update never touches it (its state stays zero).
    for (int64_t b = r.begin; !p.frozen && b < r.end; b += kChunkElems)
      t.chunks.push_back({p.offset + b, p.offset + std::min(r.end, b + kChunkElems), p.decay ? 1 : 0, p.lrScale,
                          p.offset + r.begin - at, gradShift});
    if (ranks > 1)
      state += (r.size() + alignElems - 1) / alignElems * alignElems;
    else
      state = std::max(state, p.offset + (p.numel + alignElems - 1) / alignElems * alignElems);
  }
  t.stateElems = state;
  return t;
}

/* A parameter as the backend binds it (session.h's ParamState): its elements (under ZeRO
   stage 3 the rank's padded slice), its gradient's (from stage 2 on the padded slice) and the
   logical tensor's. */
struct LayoutParam {
  int64_t numel = 0, gradNumel = 0, logicalNumel = 0;
  bool frozen = false, decay = false;
  double lrScale = 1.0;
};

/* The CUDA backend's flat storage for one rank: the parameters, each on an `alignElems`
   boundary; the gradients, in the parameters' layout or (stage 2) their slices packed the
   same way; the elementwise optimizers' chunks; and describeZero's counts. */
struct FlatLayout {
  std::vector<int64_t> paramOffset, gradOffset;
  int64_t paramElems = 0, gradElems = 0;
  ChunkTable chunks;
  int64_t mine = 0, all = 0;
};

/* `stage` 0 (no ZeRO) to 3; `rank` of `ranks`: the rank's place on the data axis (stages 1
   and 2 update their slices of the parameters as bound, stage 3 the parameters as they are,
   which are its slices already). */
inline FlatLayout flatLayout(const std::vector<LayoutParam> &params, int stage, int rank, int ranks,
                             int64_t alignElems) {
  auto aligned = [&](int64_t n) { return (n + alignElems - 1) / alignElems * alignElems; };
  FlatLayout l;
  std::vector<ChunkParam> chunkParams;
  for (const LayoutParam &p : params) {
    l.paramOffset.push_back(l.paramElems);
    l.gradOffset.push_back(l.gradElems);
    chunkParams.push_back({l.paramElems, p.numel, p.frozen, p.decay, p.lrScale, stage == 2 ? l.gradElems : -1});
    l.paramElems += aligned(p.numel);
    l.gradElems += aligned(p.gradNumel);
  }
  if (ranks < 1 || rank < 0 || rank >= ranks) fail("ZeRO layout: rank %d of %d ranks", rank, ranks);
  const bool slicesOfBound = stage == 1 || stage == 2;
  l.chunks = elementwiseChunks(chunkParams, slicesOfBound ? rank : 0, slicesOfBound ? ranks : 1, alignElems);
  for (size_t i = 0; i < params.size(); ++i) {
    const LayoutParam &p = params[i];
    l.mine += stage >= 3 ? zeroShard(p.logicalNumel, ranks, rank).size() : l.chunks.slices[i].size();
    l.all += stage >= 3 ? p.logicalNumel : p.numel;
  }
  return l;
}

}  // namespace lmrt::cuda
