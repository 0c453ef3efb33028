/* Implements: setting the OpenMP and OpenBLAS thread counts (see threads.h). */
#include "runtime/train/threads.h"

#include <omp.h>

#include <cstdlib>

#include "base/tensor.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace lmrt {

void setThreadCount(int n) {
  if (n < 1 || n > kMaxThreads) fail("--threads must be in [1, %d] (got %d)", kMaxThreads, n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

std::string threadSettings() {
  std::string s = std::to_string(omp_get_max_threads()) + " (OpenMP";
  for (const char *var : {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"})
    if (const char *v = std::getenv(var)) s += std::string(", ") + var + "=" + v;
  return s + ")";
}

}  // namespace lmrt
