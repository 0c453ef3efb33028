/* Implements: tensor_parallel.h. */
#include "runtime/train/tensor_parallel.h"

#include <algorithm>
#include <cstring>

#include "contract/plan_types.h"
#include "contract/tensor_split.h"
#include "contract/zero3.h"
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

void LogicalState::stream(const plan::ParamSharding &s, const TensorRef &local, const TensorType &type,
                          const std::function<void(const void *, size_t)> &sink, const std::string &name) {
  comm::Communicator &group = comm::meshGroup(s.mesh_axis());
  if (group.size() != s.shards())
    fail("'%s' is split into %lld shards, and the %s group has %d ranks", name.c_str(), (long long)s.shards(),
         s.mesh_axis() == 0 ? "data" : "tensor", group.size());
  const size_t eb = dtypeSize(local.type.dtype);
  const std::string what = "the gather of '" + name + "'";
  const char *mine = static_cast<const char *>(local.data);
  // The logical tensor as runs of the ranks' parts: `segments` times, each rank's
  // `filled(q)` bytes in rank order. Each run goes out in pieces, broadcast by its owner.
  auto byOwner = [&](int64_t segments, size_t segmentBytes, const std::function<size_t(int)> &filled) {
    if (piece_.size() < std::min(kGatherPieceBytes, segmentBytes)) piece_.resize(std::min(kGatherPieceBytes, segmentBytes));
    for (int64_t seg = 0; seg < segments; ++seg)
      for (int q = 0; q < group.size(); ++q)
        for (size_t off = 0, n = filled(q); off < n; off += kGatherPieceBytes) {
          const size_t bytes = std::min(kGatherPieceBytes, n - off);
          if (q == group.rank()) std::memcpy(piece_.data(), mine + (size_t)seg * segmentBytes + off, bytes);
          group.broadcast(piece_.data(), (int64_t)bytes, q, what);
          sink(piece_.data(), bytes);
        }
  };
  if (isZeroSlice(s)) {  // the flattened tensor in consecutive slices, the last ones padded
    const int64_t n = type.numel(), chunk = local.type.numel();
    if (local.type.shape.size() != 1 || chunk != zeroSliceLength(n, s.shards()) || local.type.dtype != type.dtype)
      fail("ZeRO stage 3 slice %s of '%s' over %lld ranks of a logical %s", local.type.str().c_str(), name.c_str(),
           (long long)s.shards(), type.str().c_str());
    return byOwner(1, (size_t)chunk * eb, [&](int q) {
      return (size_t)(std::min(n, (q + 1) * chunk) - std::min(n, q * chunk)) * eb;
    });
  }
  const TensorType want = logicalType(local.type, s);  // checks the sharding fits `local`
  if (want.str() != type.str() || want.dtype != type.dtype)
    fail("tensor-parallel slice %s of '%s' of a logical %s, expected %s", local.type.str().c_str(), name.c_str(),
         type.str().c_str(), want.str().c_str());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < s.dim(); ++d) outer *= local.type.shape[(size_t)d];
  for (size_t d = (size_t)s.dim() + 1; d < local.type.shape.size(); ++d) inner *= local.type.shape[d];
  const int64_t rows = local.type.shape[(size_t)s.dim()], size = type.shape[(size_t)s.dim()];
  if (s.dim() == 0) {  // blocks of rows: each segment is every rank's block of it in turn
    const size_t segmentBytes = (size_t)(rows / s.segments() * inner) * eb;
    return byOwner(s.segments(), segmentBytes, [&](int q) {
      return s.logical_size() > 0 ? (size_t)(splitBlockFilled(size, rows, q) * inner) * eb : segmentBytes;
    });
  }
  // Split inside each of `outer` rows: gather a few whole rows at a time and place them.
  const size_t localRow = (size_t)(rows * inner) * eb, logicalRow = (size_t)(size * inner) * eb;
  const int64_t k = std::max<int64_t>(1, (int64_t)(kGatherPieceBytes / std::max(localRow, logicalRow)));
  plan::ParamSharding inRows = s;
  inRows.set_dim(1);
  for (int64_t o = 0; o < outer; o += k) {
    const int64_t kk = std::min(k, outer - o);
    const TensorType part{local.type.dtype, {kk, rows, inner}}, whole{local.type.dtype, {kk, size, inner}};
    if (parts_.size() < (size_t)kk * localRow * (size_t)group.size()) parts_.resize((size_t)kk * localRow * (size_t)group.size());
    if (piece_.size() < (size_t)kk * logicalRow) piece_.resize((size_t)kk * logicalRow);
    group.allGather(mine + (size_t)o * localRow, parts_.data(), kk * rows * inner, local.type.dtype, what);
    for (int q = 0; q < group.size(); ++q)
      placeShard(inRows, TensorRef{parts_.data() + (size_t)q * kk * localRow, part}, TensorRef{piece_.data(), whole}, q);
    sink(piece_.data(), (size_t)kk * logicalRow);
  }
}

void LogicalState::emit(size_t i, const std::function<void(const void *, size_t)> &sink) {
  const plan::ParamSharding *s = split_[i];
  const std::string &name = tensors_[i].first;
  const TensorType &type = tensors_[i].second.type;
  if (!s) return sink(local_[i].data, (size_t)type.bytes());
  if (!block_[i]) return stream(*s, local_[i], type, sink, name);
  // ZeRO stage 3 on a data x tensor mesh: the rank's slices make its tensor-parallel
  // block, gathered over its data group first (the slices in rank order are the flat
  // block, then padding), which the tensor group then streams.
  const TensorType &blockType = blockType_[i];
  comm::Communicator &data = comm::meshGroup(s->mesh_axis());
  const int64_t chunk = local_[i].type.numel();
  if (data.size() != s->shards() || chunk != zeroSliceLength(blockType.numel(), s->shards()))
    fail("'%s': a ZeRO slice %s over %lld ranks of a block %s, and the data group has %d ranks", name.c_str(),
         local_[i].type.str().c_str(), (long long)s->shards(), blockType.str().c_str(), data.size());
  const size_t gathered = (size_t)local_[i].type.bytes() * (size_t)data.size();
  if (block_bytes_.size() < gathered) block_bytes_.resize(gathered);
  data.allGather(local_[i].data, block_bytes_.data(), chunk, local_[i].type.dtype, "the gather of '" + name + "'");
  stream(*block_[i], TensorRef{block_bytes_.data(), blockType}, type, sink, name);
}

void LogicalState::write(const std::string &path, const std::map<std::string, std::string> &metadata,
                         uint64_t *checksum) {
  writeSafetensorsStreamed(path, tensors_, [&](size_t i, const ByteSink &sink) { emit(i, sink); }, metadata, checksum);
}

void LogicalState::join() {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (split_[i]) emit(i, [](const void *, size_t) {});
}

}  // namespace lmrt
