/* Implements: collective_stream.h. */
#include "runtime/cuda/collective_stream.h"

#include "base/env.h"
#include "runtime/cuda/check.h"

namespace lmrt::cuda {
bool collectiveStreamEnabled() {
  static const bool on = envSwitch("LMRT_CUDA_COLLECTIVE_STREAM");
  return on;
}

CollectiveStream::CollectiveStream(cudaStream_t compute) : compute_(compute) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
}

CollectiveStream::~CollectiveStream() {
  // Unchecked: a destructor must not throw (the run that failed reports its own error).
  for (const Job &j : jobs_) cudaStreamWaitEvent(compute_, j.done, 0);
  if (stream_) cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : all_) cudaEventDestroy(e);
  if (ready_) cudaEventDestroy(ready_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CollectiveStream::before(const std::vector<DevTensor> &in, const std::vector<DevTensor> &out) {
  if (jobs_.empty()) return;
  const std::vector<ByteRange> reads = byteRanges(in), writes = byteRanges(out);
  for (size_t k = jobs_.size(); k-- > 0;) {  // the latest it depends on: the ones before come with it
    const Job &j = jobs_[k];
    if (mustWait(reads, writes, j.reads, j.writes)) return joinThrough(k);
  }
}

cudaStream_t CollectiveStream::begin() {
  CUDA_CHECK(cudaEventRecord(ready_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  return stream_;
}

void CollectiveStream::end(const std::vector<DevTensor> &in, const std::vector<DevTensor> &out) {
  cudaEvent_t done = event();
  CUDA_CHECK(cudaEventRecord(done, stream_));
  jobs_.push_back({done, byteRanges(in), byteRanges(out)});
}

void CollectiveStream::joinAll() {
  if (!jobs_.empty()) joinThrough(jobs_.size() - 1);
}

void CollectiveStream::joinThrough(size_t k) {
  // The last one is enough (the second stream is in order); the events of all of them
  // are free again: a wait already enqueued keeps the record it saw.
  CUDA_CHECK(cudaStreamWaitEvent(compute_, jobs_[k].done, 0));
  for (size_t i = 0; i <= k; ++i) free_.push_back(jobs_[i].done);
  jobs_.erase(jobs_.begin(), jobs_.begin() + (std::ptrdiff_t)k + 1);
}

cudaEvent_t CollectiveStream::event() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  all_.push_back(e);
  return e;
}

}  // namespace lmrt::cuda
