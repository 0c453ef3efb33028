/* Implements: --threads: the OpenMP team size and OpenBLAS's own thread pool,
   set together so kernels and GEMMs use the same number of cores. */
#pragma once

namespace lmrt {

/* More threads than this is a typo (10^6 threads never finish starting). */
constexpr int kMaxThreads = 1024;

/* 1 <= n <= kMaxThreads; throws otherwise. */
void setThreadCount(int n);

}  // namespace lmrt
