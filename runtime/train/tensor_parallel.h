/* Implements: the logical tensors of a tensor-parallel run (docs/distributed.md,
   "Tensor parallelism"). Each tensor rank holds a slice of every split parameter (plan
   Param.sharding) and of its optimizer state; checkpoints and weights files hold the
   whole tensors, as one process would write them, so they move between meshes. Here
   the slices are gathered (a collective over the tensor group: every rank of it calls
   it, rank 0 writes) and cut again (slice on load: checkpoint.cpp, weights.cpp). */
#pragma once
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "runtime/exec/backend.h"

namespace lmrt {

class Session;

/* The session's parameters (and, with `withOptimizerState`, the optimizer's state in
   checkpoint order) as logical tensors: a split one gathered over the tensor group into
   a whole copy held here, a whole one the session's own. Without a tensor axis, the
   session's tensors themselves (nothing copied). Valid while this object and the
   session's tensors live. */
class LogicalState {
public:
  LogicalState(Session &session, bool withOptimizerState);
  const std::vector<NamedTensor> &tensors() const { return tensors_; }

private:
  std::vector<NamedTensor> tensors_;
  std::vector<HostBytes> storage_;
};

}  // namespace lmrt
