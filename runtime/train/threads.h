/* Implements: --threads: the OpenMP team size and OpenBLAS's own thread pool,
   set together so kernels and GEMMs use the same number of cores. */
#pragma once

namespace lmrt {

/* n >= 1; throws otherwise. */
void setThreadCount(int n);

}  // namespace lmrt
