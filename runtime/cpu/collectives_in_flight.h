/* Implements: the overlap of a program's collectives with its other steps on the CPU
   (docs/distributed.md, "Buckets and overlap"). The executor starts a collective step
   (or a bucket of adjacent all_reduce steps) on the communicator (Open MPI: on a fiber,
   its MPI calls non-blocking, runtime/comm/work_fibers.h), goes on with the next steps
   and lets it progress between them; a later step that reads what a collective writes, or
   writes what it reads or writes, first waits for it (and for every collective started
   before it: they run in order). The checks are on the bytes the steps name, so a plan
   is run correctly whatever its memory plan; lmc's planner keeps a collective's inputs
   apart from the steps that run until its result is read (codegen/MemoryPlanner.h,
   computePlanningRanges), so that nothing waits before that read. */
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "base/byte_ranges.h"
#include "base/tensor.h"
#include "runtime/comm/communicator.h"

namespace lmrt::cpu {

class CollectivesInFlight {
public:
  explicit CollectivesInFlight(comm::Communicator &c) : comm_(c) {}
  /* Waits for every collective still in flight, dropping their errors: a run that ends
     by an exception must not leave one writing into memory that is about to change. */
  ~CollectivesInFlight();

  /* Before a step that reads `in` and writes `out`: waits for the collectives it depends on. */
  void before(const std::vector<TensorRef> &in, const std::vector<TensorRef> &out);
  /* Starts `work`, a collective reading `in` and writing `out` (Communicator::submit). */
  void start(std::function<void()> work, const std::vector<TensorRef> &in, const std::vector<TensorRef> &out);
  /* Between steps: lets the collectives in flight go on (communicator.h, progress). */
  void progress() {
    if (!jobs_.empty()) comm_.progress();
  }
  /* Waits for all of them; rethrows the first error. */
  void waitAll();
  /* Seconds this thread spent waiting for collectives (--profile). */
  double waitedSeconds() const { return waited_; }
  bool empty() const { return jobs_.empty(); }

private:
  struct Job {
    uint64_t ticket;
    std::vector<ByteRange> reads, writes;
  };
  /* Waits for jobs_[0..k]. */
  void waitThrough(size_t k);

  comm::Communicator &comm_;
  std::deque<Job> jobs_;
  double waited_ = 0;
};

/* Whether a byte range of `a` and one of `b` overlap. */
bool anyOverlap(const std::vector<TensorRef> &a, const std::vector<TensorRef> &b);

}  // namespace lmrt::cpu
