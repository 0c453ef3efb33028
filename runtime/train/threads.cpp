/* Implements: setting the OpenMP and OpenBLAS thread counts (see threads.h). */
#include "runtime/train/threads.h"

#include <omp.h>

#include "runtime/lmrt/tensor.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace lmrt {

void setThreadCount(int n) {
  if (n < 1 || n > kMaxThreads) fail("--threads must be in [1, %d] (got %d)", kMaxThreads, n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

}  // namespace lmrt
