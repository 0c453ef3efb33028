/* Implements: zero_shards.h. */
#include "runtime/cpu/zero_shards.h"

#include <cstring>
#include <string>

#include "runtime/comm/communicator.h"

namespace lmrt::cpu {

ZeroShards::ZeroShards(const std::vector<ParamView> &params, int rank, int ranks)
    : rank_(rank), ranks_(ranks), whole_(params) {
  for (const ParamView &p : params) {
    const ShardRange r = zeroShard(p.numel, ranks, rank);
    const size_t at = (size_t)r.begin * dtypeSize(p.dtype);
    ParamView s = p;
    s.value = static_cast<char *>(p.value) + at;
    s.grad = static_cast<char *>(p.grad) + at;
    s.numel = r.size();
    s.shape = {r.size()};
    ranges_.push_back(r);
    shards_.push_back(s);
  }
}

std::string ZeroShards::describe() const {
  int64_t mine = 0, all = 0;
  for (size_t i = 0; i < whole_.size(); ++i) mine += shards_[i].numel, all += whole_[i].numel;
  return "ZeRO stage 1: rank " + std::to_string(rank_) + " keeps the optimizer state of " + std::to_string(mine) +
         " of the " + std::to_string(all) + " parameter elements (its slice of each parameter), and updates them";
}

void ZeroShards::gather(const void *slice, void *whole, int64_t numel, DType dtype, const std::string &what) {
  const int64_t chunk = zeroShard(numel, ranks_, 0).size();
  const size_t eb = dtypeSize(dtype);
  const int64_t mine = zeroShard(numel, ranks_, rank_).size();
  if (chunk * ranks_ == numel) {  // every slice full: gathered in place (the communicator copies `slice` first)
    comm::world().allGather(slice, whole, chunk, dtype, what);
    return;
  }
  // Slices of chunk elements, the last ones shorter: gathered padded, then cut to numel.
  staging_.resize((size_t)(chunk * ranks_) * eb);
  char *mySlot = staging_.data() + (size_t)(rank_ * chunk) * eb;
  std::memset(mySlot, 0, (size_t)chunk * eb);
  if (mine > 0) std::memcpy(mySlot, slice, (size_t)mine * eb);
  comm::world().allGather(mySlot, staging_.data(), chunk, dtype, what);
  std::memcpy(whole, staging_.data(), (size_t)numel * eb);
}

void ZeroShards::gatherParams(const std::vector<ParamView> &params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamView &p = params[i];
    if (p.frozen || p.numel == 0) continue;
    gather(shards_[i].value, p.value, p.numel, p.dtype, "ZeRO all_gather of parameter " + std::to_string(i));
  }
}

std::vector<void *> ZeroShards::gatherState(const std::vector<void *> &slices, const std::vector<size_t> &owner) {
  std::vector<void *> out = wholeState(owner);
  for (size_t i = 0; i < slices.size(); ++i) {
    const ParamView &p = whole_[owner[i]];
    if (p.numel > 0)
      gather(slices[i], out[i], p.numel, p.dtype, "ZeRO all_gather of optimizer state " + std::to_string(i));
  }
  return out;
}

std::vector<void *> ZeroShards::wholeState(const std::vector<size_t> &owner) {
  state_.clear();
  std::vector<void *> out;
  for (size_t i : owner) {
    state_.emplace_back((size_t)whole_[i].numel * dtypeSize(whole_[i].dtype), 0);
    out.push_back(state_.back().data());
  }
  return out;
}

void ZeroShards::scatterState(const std::vector<void *> &slices, const std::vector<size_t> &owner) {
  if (state_.size() != slices.size()) fail("ZeRO: %zu state tensors restored, %zu expected", state_.size(), slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const ParamView &p = whole_[owner[i]];
    const size_t eb = dtypeSize(p.dtype);
    const ShardRange r = ranges_[owner[i]];
    if (r.size() > 0) std::memcpy(slices[i], state_[i].data() + (size_t)r.begin * eb, (size_t)r.size() * eb);
  }
  release();
}

}  // namespace lmrt::cpu
