/* Implements: --threads: the OpenMP team size and OpenBLAS's own thread pool,
   set together so kernels and GEMMs use the same number of cores. */
#pragma once

#include <string>

namespace lmrt {

/* More threads than this is a typo (10^6 threads never finish starting). */
constexpr int kMaxThreads = 1024;

/* 1 <= n <= kMaxThreads; throws otherwise. */
void setThreadCount(int n);

/* "2 (OpenMP, GOMP_SPINCOUNT=10000)": the team size and the OpenMP wait settings in
   the environment (lmrt sets GOMP_SPINCOUNT itself: tools/lmrt/lmrt.cpp), for --profile. */
std::string threadSettings();

}  // namespace lmrt
