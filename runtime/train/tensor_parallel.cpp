/* Implements: tensor_parallel.h. */
#include "runtime/train/tensor_parallel.h"

#include "runtime/comm/communicator.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/exec/shard_layout.h"

namespace lmrt {
namespace {

/* The whole tensor of which every tensor rank holds slice `local` by `s`: one all-gather
   of the slices (rank order), each put in its place. */
TensorRef gather(const plan::ParamSharding &s, const TensorRef &local, const std::string &name,
                 std::vector<HostBytes> &storage) {
  comm::Communicator &group = comm::meshGroup(1);
  if (group.size() != s.shards())
    fail("'%s' is split into %lld shards, and the tensor group has %d ranks", name.c_str(), (long long)s.shards(),
         group.size());
  const TensorType whole = logicalType(local.type, s);
  HostBytes parts((size_t)local.type.bytes() * (size_t)group.size());
  group.allGather(local.data, parts.data(), local.numel(), local.type.dtype, "the gather of '" + name + "'");
  storage.emplace_back((size_t)whole.bytes());
  TensorRef out{storage.back().data(), whole};
  for (int q = 0; q < group.size(); ++q)
    placeShard(s, TensorRef{parts.data() + (size_t)q * (size_t)local.type.bytes(), local.type}, out, q);
  return out;
}

}  // namespace

LogicalState::LogicalState(Session &session, bool withOptimizerState) {
  session.pullParams();
  std::vector<ParamState> &params = session.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const plan::ParamSharding *s = session.sharding(i);
    tensors_.emplace_back(params[i].name, s ? gather(*s, params[i].valueRef(), params[i].name, storage_)
                                            : params[i].valueRef());
  }
  if (!withOptimizerState) return;
  const std::vector<NamedTensor> state = session.backend().optimizerState();
  const OptimizerConfig config = optimizerConfig(session.plan());
  size_t k = 0;
  for (size_t i = 0; i < params.size(); ++i)
    for (const StateSlot &slot : stateSlots(config, params[i].type.shape)) {
      if (k >= state.size()) fail("the optimizer holds %zu state tensors, fewer than its slots", state.size());
      const NamedTensor &t = state[k++];
      const plan::ParamSharding *s = session.sharding(i);
      // An elementwise optimizer's slot has its parameter's shape (checked: the CPU
      // backend refuses other optimizers under tensor parallelism) and is cut alike.
      if (s && slot.shape != params[i].type.shape)
        fail("optimizer state '%s' %s of a split parameter is not of its shape %s", t.first.c_str(),
             t.second.type.str().c_str(), params[i].type.str().c_str());
      tensors_.emplace_back(t.first, s ? gather(*s, t.second, t.first, storage_) : t.second);
    }
  if (k != state.size()) fail("the optimizer holds %zu state tensors, its slots %zu", state.size(), k);
}

}  // namespace lmrt
