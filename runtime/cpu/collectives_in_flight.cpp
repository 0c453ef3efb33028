/* Implements: collectives_in_flight.h. */
#include "runtime/cpu/collectives_in_flight.h"

#include <chrono>

namespace lmrt::cpu {
namespace {

template <typename A, typename B> bool meets(const A &a, const B &b) {
  for (const auto &x : a)
    for (const auto &y : b)
      if (x.begin < y.end && y.begin < x.end) return true;
  return false;
}

}  // namespace

std::vector<CollectivesInFlight::Range> CollectivesInFlight::ranges(const std::vector<TensorRef> &refs) {
  std::vector<Range> out;
  for (const TensorRef &t : refs) {
    const char *p = static_cast<const char *>(t.data);
    const int64_t bytes = t.type.bytes();
    if (p && bytes > 0) out.push_back({p, p + bytes});
  }
  return out;
}

bool anyOverlap(const std::vector<TensorRef> &a, const std::vector<TensorRef> &b) {
  struct R {
    const char *begin, *end;
  };
  auto of = [](const std::vector<TensorRef> &refs) {
    std::vector<R> out;
    for (const TensorRef &t : refs)
      if (t.data && t.type.bytes() > 0)
        out.push_back({static_cast<const char *>(t.data), static_cast<const char *>(t.data) + t.type.bytes()});
    return out;
  };
  return meets(of(a), of(b));
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
  const std::vector<Range> reads = ranges(in), writes = ranges(out);
  // The latest job the step depends on: waiting for it waits for all before it.
  for (size_t k = jobs_.size(); k-- > 0;) {
    const Job &j = jobs_[k];
    if (meets(reads, j.writes) || meets(writes, j.writes) || meets(writes, j.reads)) return waitThrough(k);
  }
}

void CollectivesInFlight::start(std::function<void()> work, const std::vector<TensorRef> &in,
                                const std::vector<TensorRef> &out) {
  const uint64_t ticket = comm_.submit(std::move(work));
  jobs_.push_back({ticket, ranges(in), ranges(out)});
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
