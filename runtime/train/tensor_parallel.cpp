/* Implements: tensor_parallel.h. */
#include "runtime/train/tensor_parallel.h"

#include "contract/plan_types.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/exec/shard_layout.h"
#include "runtime/weights/safetensors.h"

namespace lmrt {

LogicalState::LogicalState(Session &session, bool withOptimizerState) {
  session.pullParams();
  std::vector<ParamState> &params = session.params();
  // A split tensor's logical type is its parameter's (Session::logicalType), in its dtype.
  auto add = [&](const std::string &name, const TensorRef &local, const plan::ParamSharding *s, size_t param) {
    tensors_.emplace_back(name, TensorRef{local.data, s ? TensorType{local.type.dtype, session.logicalType(param).shape}
                                                        : local.type});
    split_.push_back(s);
    local_.push_back(local);
    const plan::ParamSharding *b = s ? session.blockSharding(param) : nullptr;
    block_.push_back(b);
    TensorType blockType = b ? toTensorType(session.plan().params((int)param).type()) : TensorType{};
    blockType.dtype = local.type.dtype;
    blockType_.push_back(blockType);
  };
  for (size_t i = 0; i < params.size(); ++i) add(params[i].name, params[i].valueRef(), session.sharding(i), i);
  if (!withOptimizerState) return;
  const std::vector<NamedTensor> state = session.backend().optimizerState();
  const OptimizerConfig config = optimizerConfig(session.plan());
  size_t k = 0;
  for (size_t i = 0; i < params.size(); ++i)
    for (const StateSlot &slot : stateSlots(config, params[i].type.shape)) {
      if (k >= state.size()) fail("the optimizer holds %zu state tensors, fewer than its slots", state.size());
      const NamedTensor &t = state[k++];
      const plan::ParamSharding *s = session.sharding(i);
      // An elementwise optimizer's slot has its parameter's shape (the CPU backend
      // refuses other optimizers under tensor parallelism) and is cut alike.
      if (s && slot.shape != params[i].type.shape)
        fail("optimizer state '%s' %s of a split parameter is not of its shape %s", t.first.c_str(),
             t.second.type.str().c_str(), params[i].type.str().c_str());
      add(t.first, t.second, s, i);
    }
  if (k != state.size()) fail("the optimizer holds %zu state tensors, its slots %zu", state.size(), k);
}

void LogicalState::gather(const plan::ParamSharding &s, const TensorRef &local, const TensorType &type, void *out,
                          const std::string &name) {
  comm::Communicator &group = comm::meshGroup(s.mesh_axis());
  if (group.size() != s.shards())
    fail("'%s' is split into %lld shards, and the %s group has %d ranks", name.c_str(), (long long)s.shards(),
         s.mesh_axis() == 0 ? "data" : "tensor", group.size());
  const size_t bytes = (size_t)local.type.bytes();
  if (parts_.size() < bytes * (size_t)group.size()) parts_.resize(bytes * (size_t)group.size());
  group.allGather(local.data, parts_.data(), local.numel(), local.type.dtype, "the gather of '" + name + "'");
  const TensorRef whole{out, type};
  for (int q = 0; q < group.size(); ++q) placeShard(s, TensorRef{parts_.data() + (size_t)q * bytes, local.type}, whole, q);
}

const void *LogicalState::data(size_t i) {
  const plan::ParamSharding *s = split_[i];
  if (!s) return local_[i].data;
  // One all-gather of the slices (rank order), each put in its place; over the data
  // axis for ZeRO stage 3's slices (shard_layout.h). On a data x tensor mesh those make
  // the rank's tensor-parallel block, which a second gather over the tensor group puts
  // together (each rank of a tensor group gathers its own block over its data group first).
  const std::string &name = tensors_[i].first;
  const TensorType &type = tensors_[i].second.type;
  if (whole_.size() < (size_t)type.bytes()) whole_.resize((size_t)type.bytes());
  if (!block_[i]) {
    gather(*s, local_[i], type, whole_.data(), name);
    return whole_.data();
  }
  const TensorType &blockType = blockType_[i];
  if (block_bytes_.size() < (size_t)blockType.bytes()) block_bytes_.resize((size_t)blockType.bytes());
  gather(*s, local_[i], blockType, block_bytes_.data(), name);
  gather(*block_[i], TensorRef{block_bytes_.data(), blockType}, type, whole_.data(), name);
  return whole_.data();
}

void LogicalState::write(const std::string &path, const std::map<std::string, std::string> &metadata,
                         uint64_t *checksum) {
  writeSafetensors(path, tensors_, [&](size_t i) { return data(i); }, metadata, checksum);
}

void LogicalState::join() {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (split_[i]) data(i);
}

}  // namespace lmrt
