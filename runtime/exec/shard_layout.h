/* Implements: where a tensor-parallel rank's slice of a parameter lies in the logical
   tensor (plan Param.sharding, docs/distributed.md "Tensor parallelism"). Dimension
   `dim` of the logical tensor is `segments` equal segments, each cut into `shards`
   blocks; rank r holds block r of every segment, in segment order (a packed q|k|v
   projection: its heads' columns of q, of k and of v). Pure copies, no communication:
   lmrt initialises a split parameter as the logical tensor and keeps its slice
   (Session::initParams), and a checkpoint or weights file of logical tensors is cut
   (slice) or put together from the ranks' slices (place). The optimizer state of an
   elementwise optimizer has its parameter's shape and is cut the same way. */
#pragma once
#include "base/tensor.h"
#include "contract/plan.pb.h"

namespace lmrt {

/* The logical type of a parameter whose plan type `local` is a slice by `s`. */
TensorType logicalType(const TensorType &local, const plan::ParamSharding &s);

/* local = rank `rank`'s slice of `logical` (types: logicalType(local.type) == logical.type). */
void sliceShard(const plan::ParamSharding &s, const TensorRef &logical, const TensorRef &local, int64_t rank);
/* The inverse: rank `rank`'s slice `local` written into its place in `logical`. */
void placeShard(const plan::ParamSharding &s, const TensorRef &local, const TensorRef &logical, int64_t rank);

}  // namespace lmrt
