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
   state at [begin - stateShift, end - stateShift). Host-only, no CUDA calls. */
#pragma once
#include <cstdint>
#include <vector>

#include "contract/contract.h"
#include "runtime/cuda/optimizer.h"

namespace lmrt::cuda {

/* AdamW's chunks: no block gets more than this many elements. */
constexpr int64_t kChunkElems = 1 << 16;

/* What the chunk table needs of a parameter laid out in the flat storage. */
struct ChunkParam {
  int64_t offset = 0, numel = 0;  // elements into the flat parameter storage
  bool frozen = false, decay = false;
  double lrScale = 1.0;
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
    t.slices.push_back(r);
    t.stateOffset.push_back(at);
    // A frozen parameter gets no chunk: the update never touches it (its state stays zero).
    for (int64_t b = r.begin; !p.frozen && b < r.end; b += kChunkElems)
      t.chunks.push_back({p.offset + b, p.offset + std::min(r.end, b + kChunkElems), p.decay ? 1 : 0, p.lrScale,
                          p.offset + r.begin - at});
    if (ranks > 1)
      state += (r.size() + alignElems - 1) / alignElems * alignElems;
    else
      state = std::max(state, p.offset + (p.numel + alignElems - 1) / alignElems * alignElems);
  }
  t.stateElems = state;
  return t;
}

}  // namespace lmrt::cuda
