/* Implements: shard_layout.h. */
#include "runtime/exec/shard_layout.h"

#include <algorithm>
#include <cstring>

#include "contract/tensor_split.h"
#include "contract/zero3.h"

namespace lmrt {
namespace {

/* Checks the two types and returns the copy's geometry: `outer` rows of the logical
   tensor around `dim`, each holding `segments` x `shards` blocks of `block` bytes, of which
   the local tensor holds `segments` (rank r's). */
struct Geometry {
  int64_t outer = 1, segments = 1, shards = 1, block = 0;
  int64_t size = 0, rows = 0, inner = 1;  // the logical and local sizes of `dim`, and the elements per entry
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
  g.rows = local.shape[(size_t)s.dim()];
  g.size = logical.shape[(size_t)s.dim()];
  g.inner = inner;
  return g;
}

/* ZeRO stage 3: rank `rank`'s range of the flattened logical tensor, and the local
   slice's padding (zeros when cut). */
void copyRange(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank,
               bool toLocal) {
  const int64_t n = logical.type.numel(), chunk = local.type.numel();
  if (s.shards() < 1 || local.type.shape.size() != 1 || chunk != zeroSliceLength(n, s.shards()) ||
      local.type.dtype != logical.type.dtype)
    fail("ZeRO stage 3 slice %s over %lld ranks of a logical %s, expected %s[%lld]", local.type.str().c_str(),
         (long long)s.shards(), logical.type.str().c_str(), dtypeName(logical.type.dtype),
         (long long)zeroSliceLength(n, std::max<int64_t>(s.shards(), 1)));
  if (rank < 0 || rank >= s.shards())
    fail("ZeRO stage 3 rank %lld of a tensor split into %lld slices", (long long)rank, (long long)s.shards());
  const int64_t begin = std::min(n, rank * chunk), end = std::min(n, begin + chunk);
  const size_t eb = dtypeSize(local.type.dtype);
  char *whole = static_cast<char *>(logical.data) + (size_t)begin * eb, *part = static_cast<char *>(local.data);
  if (toLocal) {
    std::memcpy(part, whole, (size_t)(end - begin) * eb);
    std::memset(part + (size_t)(end - begin) * eb, 0, (size_t)(chunk - (end - begin)) * eb);
  } else {
    std::memcpy(whole, part, (size_t)(end - begin) * eb);
  }
}

/* Copies between rank `rank`'s blocks of the logical tensor and the local one. */
void copyBlocks(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank,
                bool toLocal) {
  if (isZeroSlice(s)) return copyRange(s, logical, local, rank, toLocal);
  const Geometry g = geometry(s, logical.type, local.type);
  if (rank < 0 || rank >= g.shards)
    fail("tensor-parallel rank %lld of a tensor split into %lld shards", (long long)rank, (long long)g.shards);
  char *whole = static_cast<char *>(logical.data), *part = static_cast<char *>(local.data);
  if (s.logical_size() > 0) {  // padded blocks (one segment): the block's entries below the logical size
    const size_t entry = (size_t)g.inner * dtypeSize(local.type.dtype);
    const int64_t filled = splitBlockFilled(g.size, g.rows, rank);
    for (int64_t o = 0; o < g.outer; ++o) {
      char *w = whole + ((size_t)(o * g.size + rank * g.rows)) * entry;
      char *p = part + (size_t)(o * g.rows) * entry;
      if (toLocal) {
        std::memcpy(p, w, (size_t)filled * entry);
        std::memset(p + (size_t)filled * entry, 0, (size_t)(g.rows - filled) * entry);  // the padding: zeros
      } else {
        std::memcpy(w, p, (size_t)filled * entry);
      }
    }
    return;
  }
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
  if (isZeroSlice(s))
    fail("internal error: the logical type of ZeRO stage 3 slice %s is the plan's parameter type", local.str().c_str());
  if (s.dim() < 0 || s.dim() >= (int64_t)local.shape.size() || s.segments() < 1 || s.shards() < 1 ||
      local.shape[(size_t)s.dim()] % s.segments() != 0)
    fail("tensor-parallel sharding (dim %lld, %lld segments, %lld shards) does not fit %s", (long long)s.dim(),
         (long long)s.segments(), (long long)s.shards(), local.str().c_str());
  if (s.logical_size() != 0 &&
      (s.segments() != 1 || !splitPaddingFits(s.logical_size(), local.shape[(size_t)s.dim()], s.shards())))
    fail("tensor-parallel sharding (dim %lld, %lld shards) of %s cannot pad a logical size of %lld",
         (long long)s.dim(), (long long)s.shards(), local.str().c_str(), (long long)s.logical_size());
  TensorType t = local;
  t.shape[(size_t)s.dim()] = splitLogicalSize(s, local.shape[(size_t)s.dim()]);
  return t;
}

void sliceShard(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank) {
  copyBlocks(s, logical, local, rank, true);
}

void placeShard(const plan::ParamSharding &s, const TensorRef &local, const TensorRef &logical, int64_t rank) {
  copyBlocks(s, logical, local, rank, false);
}

}  // namespace lmrt
