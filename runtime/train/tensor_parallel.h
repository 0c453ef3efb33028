/* Implements: the logical tensors of a tensor-parallel run (docs/distributed.md,
   "Tensor parallelism"). Each tensor rank holds a slice of every split parameter (plan
   Param.sharding) and of its optimizer state; checkpoints and weights files hold the
   whole tensors, as one process would write them, so they move between meshes. Here
   the slices are gathered, one tensor at a time as the file is written (a collective
   over the tensor group: every rank of it takes part, rank 0 writes), and cut again
   on load (checkpoint.cpp, weights.cpp). */
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "runtime/exec/backend.h"

namespace lmrt {

class Session;

/* The session's parameters (and, with `withOptimizerState`, the optimizer's state in
   checkpoint order) as logical tensors. tensors() lists them with their logical types;
   data(i) is tensor i's bytes: a whole one's the session's own, a split one's gathered
   over the tensor group into a buffer reused from call to call, so only one gathered
   tensor is held at a time. data() of a split tensor is a collective: every rank of the
   tensor group calls it for the same tensors in the same order (write() on the writer,
   join() on the others). Without a tensor axis nothing is copied or communicated. */
class LogicalState {
public:
  LogicalState(Session &session, bool withOptimizerState);
  const std::vector<NamedTensor> &tensors() const { return tensors_; }
  const void *data(size_t i);
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
  HostBytes parts_, whole_, block_bytes_;          // data()'s gather buffers

  /* Every rank's `local` of `group` (mesh axis s.mesh_axis()) gathered and placed by `s`
     into `out`, a tensor of type `type`. Collective over that group. */
  void gather(const plan::ParamSharding &s, const TensorRef &local, const TensorType &type, void *out,
              const std::string &name);
};

}  // namespace lmrt
