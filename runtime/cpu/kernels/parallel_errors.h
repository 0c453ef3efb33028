/* Carries an error out of an OpenMP parallel region. An exception that leaves a
   region's structured block ends the process through std::terminate, so a kernel
   whose loop body can fail (a GEMM library reporting an error, a check on the data)
   runs the body under `run` and calls `rethrow` after the region: the first error
   any thread raised then reaches the caller as the clean lmrt error it was. */
#pragma once

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

}  // namespace lmrt::kernels
