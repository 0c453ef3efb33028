/* Implements: collectives_in_flight.h. */
#include "runtime/cpu/collectives_in_flight.h"

#include <chrono>

namespace lmrt::cpu {

bool anyOverlap(const std::vector<TensorRef> &a, const std::vector<TensorRef> &b) {
  return overlap(byteRanges(a), byteRanges(b));
}

CollectivesInFlight::~CollectivesInFlight() {
  if (jobs_.empty()) return;
  try {
    comm_.wait(jobs_.back().ticket);
  } catch (...) {
  }
}

void CollectivesInFlight::before(const std::vector<TensorRef> &in, const std::vector<TensorRef> &out) {
  if (jobs_.empty()) return;
  const std::vector<ByteRange> reads = byteRanges(in), writes = byteRanges(out);
  // The latest job the step depends on: waiting for it waits for all before it.
  for (size_t k = jobs_.size(); k-- > 0;) {
    const Job &j = jobs_[k];
    if (mustWait(reads, writes, j.reads, j.writes)) return waitThrough(k);
  }
}

void CollectivesInFlight::start(std::function<void()> work, const std::vector<TensorRef> &in,
                                const std::vector<TensorRef> &out) {
  const uint64_t ticket = comm_.submit(std::move(work));
  jobs_.push_back({ticket, byteRanges(in), byteRanges(out)});
}

void CollectivesInFlight::waitAll() {
  if (!jobs_.empty()) waitThrough(jobs_.size() - 1);
}

void CollectivesInFlight::waitThrough(size_t k) {
  const uint64_t ticket = jobs_[k].ticket;
  jobs_.erase(jobs_.begin(), jobs_.begin() + (std::ptrdiff_t)k + 1);
  auto t0 = std::chrono::steady_clock::now();
  comm_.wait(ticket);
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace lmrt::cpu
