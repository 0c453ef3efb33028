/* Implements: where a tensor-parallel rank's slice of a parameter lies in the logical
   tensor (plan Param.sharding, docs/distributed.md "Tensor parallelism"). Dimension
   `dim` of the logical tensor is `segments` equal segments, each cut into `shards`
   blocks; rank r holds block r of every segment, in segment order (a packed q|k|v
   projection: its heads' columns of q, of k and of v). Pure copies, no communication:
   lmrt initialises a split parameter as the logical tensor and keeps its slice
   (Session::initParams), and a checkpoint or weights file of logical tensors is cut
   (slice) or put together from the ranks' slices (place). The optimizer state of an
   elementwise optimizer has its parameter's shape and is cut the same way.
   A padded split (ParamSharding.logical_size, contract/tensor_split.h: a vocabulary
   the ranks do not divide) has one segment; rank r's block covers entries
   [r b, min((r + 1) b, size)) of the logical dimension, and its tail past the logical
   size is zeros when cut and left out when placed.
   ZeRO stage 3's slices (isZeroSlice: mesh axis 0, which lmrt's Session describes for
   every parameter of a zero = 3 plan, contract/zero3.h) are of the flattened tensor:
   rank r holds elements [r c, (r + 1) c) of n, c = ceil(n / shards), padded with zeros
   past n; placing one writes its elements below n only. Their logical type is the
   plan's (Session::logicalType), not computed from the slice. */
#pragma once
#include "base/tensor.h"
#include "contract/plan.pb.h"

namespace lmrt {

/* Whether `s` is a ZeRO stage 3 slice of the flattened tensor (tensor parallelism splits
   over mesh axis 1). */
inline bool isZeroSlice(const plan::ParamSharding &s) { return s.mesh_axis() == 0; }

/* The logical type of a parameter whose plan type `local` is a slice by `s` (a tensor-
   parallel one: a ZeRO stage 3 slice's is the plan's parameter type). */
TensorType logicalType(const TensorType &local, const plan::ParamSharding &s);

/* local = rank `rank`'s slice of `logical` (types: logicalType(local.type) == logical.type). */
void sliceShard(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank);
/* The inverse: rank `rank`'s slice `local` written into its place in `logical`. */
void placeShard(const plan::ParamSharding &s, const TensorRef &local, const TensorRef &logical, int64_t rank);

}  // namespace lmrt
