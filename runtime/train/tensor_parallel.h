/* Implements: the logical tensors of a tensor-parallel run (docs/distributed.md,
   "Tensor parallelism"). Each tensor rank holds a slice of every split parameter (plan
   Param.sharding) and of its optimizer state; checkpoints and weights files hold the
   whole tensors, as one process would write them, so they move between meshes. Here
   the slices are gathered, one tensor at a time as the file is written (a collective
   over the tensor group: every rank of it takes part, rank 0 writes), and cut again
   on load (checkpoint.cpp, weights.cpp). */
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "runtime/exec/backend.h"

namespace lmrt {

class Session;

/* The session's parameters (and, with `withOptimizerState`, the optimizer's state in
   checkpoint order) as logical tensors. tensors() lists them with their logical types;
   emit(i, sink) streams tensor i's bytes: a whole one's the session's own, a split one's
   gathered over its group piece by piece (at most kGatherPieceBytes per rank at a time,
   under ZeRO stage 3 on a tensor axis after the rank's block), so a rank never holds a
   gathered whole tensor: GPT-2's vocabulary table would be 154 MB on top of the train
   step's peak (docs/distributed.md, "Memory per rank"). emit() of a split tensor is a
   collective: every rank of the group calls it for the same tensors in the same order
   (write() on the writer, join() on the others). Without a split nothing is copied or
   communicated. */
class LogicalState {
public:
  static constexpr size_t kGatherPieceBytes = size_t(4) << 20;

  LogicalState(Session &session, bool withOptimizerState);
  const std::vector<NamedTensor> &tensors() const { return tensors_; }
  void emit(size_t i, const std::function<void(const void *, size_t)> &sink);
  /* Rank 0: the safetensors file of tensors(), gathering each split tensor as it is written. */
  void write(const std::string &path, const std::map<std::string, std::string> &metadata = {},
             uint64_t *checksum = nullptr);
  /* The other ranks of the tensor group: their part of write()'s gathers. */
  void join();

private:
  std::vector<NamedTensor> tensors_;               // logical types; local data
  std::vector<const plan::ParamSharding *> split_; // per tensor: its sharding, or null
  // Per tensor, under ZeRO stage 3 on a data x tensor mesh: the tensor-parallel block
  // its data slices make (Session::blockSharding) and that block's type, or null.
  std::vector<const plan::ParamSharding *> block_;
  std::vector<TensorType> blockType_;
  std::vector<TensorRef> local_;                   // per tensor: this rank's slice
  HostBytes parts_, piece_, block_bytes_;          // emit()'s gather buffers

  /* Streams the logical tensor of type `type` that `s` splits into the `local` parts of
     the ranks of its group (mesh axis s.mesh_axis()). Collective over that group. */
  void stream(const plan::ParamSharding &s, const TensorRef &local, const TensorType &type,
              const std::function<void(const void *, size_t)> &sink, const std::string &name);
};

}  // namespace lmrt
