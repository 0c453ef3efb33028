/* Implements: shard_layout.h. */
#include "runtime/exec/shard_layout.h"

#include <cstring>

namespace lmrt {
namespace {

/* Checks the two types and returns the copy's geometry: `outer` rows of the logical
   tensor around `dim`, each holding `segments` x `shards` blocks of `block` bytes, of which
   the local tensor holds `segments` (rank r's). */
struct Geometry {
  int64_t outer = 1, segments = 1, shards = 1, block = 0;
};
Geometry geometry(const plan::ParamSharding &s, const TensorType &logical, const TensorType &local) {
  const TensorType want = logicalType(local, s);
  if (want.str() != logical.str() || want.dtype != logical.dtype)
    fail("tensor-parallel slice %s (dim %lld, %lld segments, %lld shards) of a logical %s, expected %s",
         local.str().c_str(), (long long)s.dim(), (long long)s.segments(), (long long)s.shards(),
         logical.str().c_str(), want.str().c_str());
  Geometry g;
  int64_t inner = 1;
  for (int64_t i = 0; i < s.dim(); ++i) g.outer *= local.shape[(size_t)i];
  for (size_t i = (size_t)s.dim() + 1; i < local.shape.size(); ++i) inner *= local.shape[i];
  g.segments = s.segments();
  g.shards = s.shards();
  g.block = local.shape[(size_t)s.dim()] / g.segments * inner * (int64_t)dtypeSize(local.dtype);
  return g;
}

/* Copies between rank `rank`'s blocks of the logical tensor and the local one. */
void copyBlocks(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank,
                bool toLocal) {
  const Geometry g = geometry(s, logical.type, local.type);
  if (rank < 0 || rank >= g.shards)
    fail("tensor-parallel rank %lld of a tensor split into %lld shards", (long long)rank, (long long)g.shards);
  char *whole = static_cast<char *>(logical.data), *part = static_cast<char *>(local.data);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t seg = 0; seg < g.segments; ++seg) {
      char *w = whole + ((o * g.segments + seg) * g.shards + rank) * g.block;
      char *p = part + (o * g.segments + seg) * g.block;
      if (toLocal) std::memcpy(p, w, (size_t)g.block);
      else std::memcpy(w, p, (size_t)g.block);
    }
}

}  // namespace

TensorType logicalType(const TensorType &local, const plan::ParamSharding &s) {
  if (s.dim() < 0 || s.dim() >= (int64_t)local.shape.size() || s.segments() < 1 || s.shards() < 1 ||
      local.shape[(size_t)s.dim()] % s.segments() != 0)
    fail("tensor-parallel sharding (dim %lld, %lld segments, %lld shards) does not fit %s", (long long)s.dim(),
         (long long)s.segments(), (long long)s.shards(), local.str().c_str());
  TensorType t = local;
  t.shape[(size_t)s.dim()] *= s.shards();
  return t;
}

void sliceShard(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank) {
  copyBlocks(s, logical, local, rank, true);
}

void placeShard(const plan::ParamSharding &s, const TensorRef &local, const TensorRef &logical, int64_t rank) {
  copyBlocks(s, logical, local, rank, false);
}

}  // namespace lmrt
