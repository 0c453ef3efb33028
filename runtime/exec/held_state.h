/* Implements: an optional capability of a Backend (backend.h) whose rank holds only
   part of the optimizer state (ZeRO): that part as it is, without a gather, which a
   sharded checkpoint writes (runtime/train/checkpoint_shards.h). A backend without it
   holds every state tensor whole, as optimizerState() returns it. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/exec/backend.h"

namespace lmrt {

/* A tensor of optimizerState() (same order and name) as this rank holds it: its
   elements [begin, end) in row-major order, at `data`. */
struct HeldTensor {
  std::string name;
  TensorType type;  // the whole tensor's (a tensor-parallel rank's: its local slice's)
  int64_t begin = 0, end = 0;
  const void *data = nullptr;
};

class HeldOptimizerState {
public:
  virtual ~HeldOptimizerState() = default;
  /* Valid until the next call on the backend. */
  virtual std::vector<HeldTensor> heldOptimizerState() = 0;
  /* Restoring a checkpoint slice by slice: sets the update count and returns the
     tensors heldOptimizerState() would, zeroed and writable, for the caller to fill
     (no finishRestore); empty where the rank holds every state tensor whole (then
     Backend::beginRestore). */
  virtual std::vector<HeldTensor> beginHeldRestore(int64_t updates) = 0;
};

/* The backend's held state: its own where it has the capability, else every tensor
   of optimizerState() whole. */
inline std::vector<HeldTensor> heldOptimizerState(Backend &backend) {
  if (auto *held = dynamic_cast<HeldOptimizerState *>(&backend)) return held->heldOptimizerState();
  std::vector<HeldTensor> out;
  for (const NamedTensor &t : backend.optimizerState())
    out.push_back({t.first, t.second.type, 0, t.second.type.numel(), t.second.data});
  return out;
}

}  // namespace lmrt
