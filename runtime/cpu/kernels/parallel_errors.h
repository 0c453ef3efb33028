/* Carries an error out of an OpenMP parallel region. An exception that leaves a
   region's structured block ends the process through std::terminate, so a kernel
   whose loop body can fail (a GEMM library reporting an error, a check on the data)
   runs the body under `run` and calls `rethrow` after the region: the first error
   any thread raised then reaches the caller as the clean lmrt error it was.
   Also: runAsPair, two independent pieces of work at once on a team of two. */
#pragma once

#include <omp.h>

#include <exception>
#include <mutex>

namespace lmrt::kernels {

class ParallelErrors {
 public:
  template <class Body>
  void run(Body &&body) noexcept {
    try {
      body();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
    }
  }

  /* Throws the first error a body raised, if any; call it after the region. */
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

/* Runs first() and second() at once, one on each thread, when the caller's team is
   exactly two threads and it is not inside a parallel region (where each would run
   alone on the calling thread); then returns true. Otherwise returns false having
   run nothing. The work each does inside runs on its thread alone (a nested region
   gets one thread). An error of either is rethrown after both ended, the first's
   before the second's; `failed`, when given, says whose (0 or 1; -1 for none). Used
   by matmul pairs (registry.h runMatmulPair) and the fused loss's dh and dw. */
template <class First, class Second>
bool runAsPair(First &&first, Second &&second, int *failed = nullptr) {
  if (failed) *failed = -1;
  if (omp_in_parallel() || omp_get_max_threads() != 2) return false;
  std::exception_ptr errors[2];
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    try {
      if (t == 0)
        first();
      else
        second();
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (int t = 0; t < 2; ++t)
    if (errors[t]) {
      if (failed) *failed = t;
      std::rethrow_exception(errors[t]);
    }
  return true;
}

}  // namespace lmrt::kernels
