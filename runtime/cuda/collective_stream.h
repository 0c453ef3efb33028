/* Implements: the CUDA backend's lm.all_reduce steps on a second stream, so that a
   bucket's NCCL all-reduce runs while the backward's kernels go on
   (docs/distributed.md, "Buckets and overlap"), as the CPU backend overlaps its
   collectives (runtime/cpu/collectives_in_flight.h). Opt-in,
   LMRT_CUDA_COLLECTIVE_STREAM=1, until a GPU run has checked it
   (scripts/gpu-check.sh compares its weights with the one-stream run's).

   The order, all of it enqueued by the host, which never blocks for it:
   - a collective starts after every step before it: the second stream waits for an
     event recorded on the compute stream right before (begin), so its input is written;
   - a later step that reads what a collective writes, or writes what it reads or
     writes, runs after it: the compute stream waits for the collective's end event
     (before), checked on the bytes the steps name, as on the CPU; waiting for one
     collective waits for all before it (the second stream runs them in order);
   - the collectives run in program order on the one second stream, so every rank
     issues its NCCL calls in the same order (NCCL's requirement);
   - the end of a program run joins them all into the compute stream (joinAll), so the
     optimizer, the host copies and the next program see their results; so does the
     destructor, when a run ends by an error.
   Only all_reduce of the data axis goes there: reduce_scatter and all_gather stage
   through the step scratch, which the compute stream's next step reuses, and the tensor
   axis's collectives stay on the compute stream. A tensor-parallel plan keeps every
   collective on the compute stream (cuda_backend.cpp): two NCCL communicators' kernels
   at once can deadlock, and no multi-GPU run has checked that they do not here. */
#pragma once
#include <cuda_runtime.h>

#include <deque>
#include <vector>

#include "base/byte_ranges.h"
#include "runtime/cuda/ops.h"

namespace lmrt::cuda {

/* Whether lm.all_reduce steps run on a second stream: LMRT_CUDA_COLLECTIVE_STREAM=1 (off
   by default; 0 or unset: the compute stream, where the executor reaches them). */
bool collectiveStreamEnabled();

class CollectiveStream {
public:
  explicit CollectiveStream(cudaStream_t compute);
  ~CollectiveStream();  // joins the collectives in flight into the compute stream, unchecked
  CollectiveStream(const CollectiveStream &) = delete;
  CollectiveStream &operator=(const CollectiveStream &) = delete;

  /* Before a step on the compute stream that reads `in` and writes `out`. */
  void before(const std::vector<DevTensor> &in, const std::vector<DevTensor> &out);
  /* Starts a collective: returns the stream to enqueue it on, after the compute
     stream's work so far. */
  cudaStream_t begin();
  /* After the collective reading `in` and writing `out` is enqueued on begin()'s stream. */
  void end(const std::vector<DevTensor> &in, const std::vector<DevTensor> &out);
  /* The compute stream waits for every collective in flight. */
  void joinAll();

private:
  struct Job {
    cudaEvent_t done;
    std::vector<ByteRange> reads, writes;
  };
  /* The compute stream waits for jobs_[0..k]; their events go back to free_. */
  void joinThrough(size_t k);
  cudaEvent_t event();

  cudaStream_t compute_, stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;      // re-recorded at each begin(): a wait takes the latest record
  std::deque<Job> jobs_;
  std::vector<cudaEvent_t> free_;   // ended jobs' events, re-recorded by later ones
  std::vector<cudaEvent_t> all_;    // every event made, destroyed at the end
};

}  // namespace lmrt::cuda
