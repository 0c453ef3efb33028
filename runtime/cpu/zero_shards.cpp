/* Implements: zero_shards.h. */
#include "runtime/cpu/zero_shards.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/comm/communicator.h"
#include "runtime/cpu/grad_clip.h"
#include "runtime/cpu/zero_grad_norm.h"
#include "runtime/exec/optimizer.h"

namespace lmrt::cpu {

ZeroShards::ZeroShards(const std::vector<ParamView> &params, int rank, int ranks, int stage)
    : rank_(rank), ranks_(ranks), stage_(stage), whole_(params) {
  for (const ParamView &p : params) {
    const ShardRange r = zeroShard(p.numel, ranks, rank);
    const size_t at = (size_t)r.begin * dtypeSize(p.dtype);
    ParamView s = p;
    s.value = static_cast<char *>(p.value) + at;
    // Stage 2's train step returns the slice itself (contract/zero3.h); stage 1's the whole gradient.
    s.grad = stage >= 2 ? p.grad : static_cast<char *>(p.grad) + at;
    s.numel = r.size();
    s.shape = {r.size()};
    ranges_.push_back(r);
    shards_.push_back(s);
  }
}

std::string ZeroShards::describe() const {
  int64_t mine = 0, all = 0;
  for (size_t i = 0; i < whole_.size(); ++i) mine += shards_[i].numel, all += whole_[i].numel;
  return describeZero(stage_, rank_, mine, all);
}

void ZeroShards::gather(const void *slice, void *whole, int64_t numel, DType dtype, const std::string &what) {
  const int64_t chunk = zeroShard(numel, ranks_, 0).size();
  const size_t eb = dtypeSize(dtype);
  const int64_t mine = zeroShard(numel, ranks_, rank_).size();
  if (chunk * ranks_ == numel) {  // every slice full: gathered in place (the communicator copies `slice` first)
    comm::meshGroup(0).allGather(slice, whole, chunk, dtype, what);
    return;
  }
  // Slices of chunk elements, the last ones shorter: gathered padded, then cut to numel.
  staging_.resize((size_t)(chunk * ranks_) * eb);
  char *mySlot = staging_.data() + (size_t)(rank_ * chunk) * eb;
  std::memset(mySlot, 0, (size_t)chunk * eb);
  if (mine > 0) std::memcpy(mySlot, slice, (size_t)mine * eb);
  comm::meshGroup(0).allGather(mySlot, staging_.data(), chunk, dtype, what);
  std::memcpy(whole, staging_.data(), (size_t)numel * eb);
}

double ZeroShards::gradNorm() {
  std::vector<const void *> slices;
  for (const ParamView &s : shards_) slices.push_back(s.grad);
  return zeroGradNorm(whole_, slices, rank_, ranks_);
}

double zeroGradNorm(const std::vector<ParamView> &params, const std::vector<const void *> &slices, int rank,
                    int ranks) {
  const int rank_ = rank, ranks_ = ranks;
  // Each gradient's head (the elements before the slice's first block boundary) to every
  // rank, then each rank's sums of the blocks it owns; one all-gather of those sums.
  std::vector<int64_t> numel;
  std::vector<bool> frozen;
  for (const ParamView &p : params) numel.push_back(p.numel), frozen.push_back(p.frozen);
  const OwnedSumsLayout layout = ownedSumsLayout(numel, frozen, ranks_);
  std::vector<double> sent((size_t)layout.total, 0.0), all((size_t)(layout.total * ranks_), 0.0);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamView &p = params[i];
    if (p.frozen) continue;  // no gradient
    const int64_t slot = zeroHeadSlot(p.numel, ranks_);
    HostBytes heads;
    if (slot > 0) {
      const size_t eb = dtypeSize(p.dtype);
      HostBytes head((size_t)slot * eb, 0);
      std::memcpy(head.data(), slices[i], (size_t)zeroHeadLength(p.numel, ranks_, rank_) * eb);
      heads.resize((size_t)(slot * ranks_) * eb);
      comm::meshGroup(0).allGather(head.data(), heads.data(), slot, p.dtype,
                              "ZeRO gradient norm: all_gather of gradient " + std::to_string(i) + "'s block heads");
    }
    const std::vector<double> mine = zeroOwnedBlockSums(slices[i], p.dtype, p.numel, ranks_, rank_, heads.data(), slot);
    std::copy(mine.begin(), mine.end(), sent.begin() + (ptrdiff_t)layout.at[i]);
  }
  if (layout.total > 0)
    comm::meshGroup(0).allGather(sent.data(), all.data(), layout.total, DType::F64,
                                 "ZeRO gradient norm: all_gather of block sums");
  // grad_clip.cpp's order: each gradient's blocks from 0 in block order (rank order), then
  // the gradients from 0 in parameter order.
  return std::sqrt(addOwnedSums(numel, frozen, ranks_, layout, all));
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
