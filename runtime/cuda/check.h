/* Implements: the checks around every CUDA runtime, driver and cuBLASLt call.
   A failed call throws lmrt::Error naming the source file and line, the call,
   and the library's own error name and text:
     runtime/cuda/gemm.cpp:141: cublasLtMatmul(...) failed: CUBLAS_STATUS_NOT_SUPPORTED (...)
   The executor (session.h) prefixes the plan step that was running, so an error
   reads "plan 'x.plan': program 'train_step', step 17 (matmul, from gpt.lm:12:5): runtime/cuda/...".
   Kernel launches are asynchronous: a fault inside a kernel surfaces at the next
   checked call; LMRT_CUDA_SYNC=1 synchronises after every step so that the step
   named is the one that faulted (docs/runtime.md). */
#pragma once
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>

namespace lmrt::cuda {

[[noreturn]] void throwCallError(const char *file, int line, const char *call, const char *name, const char *text);

inline void checkRuntime(cudaError_t e, const char *file, int line, const char *call) {
  if (e != cudaSuccess) throwCallError(file, line, call, cudaGetErrorName(e), cudaGetErrorString(e));
}
void checkDriver(CUresult r, const char *file, int line, const char *call);
void checkCublas(cublasStatus_t s, const char *file, int line, const char *call);

}  // namespace lmrt::cuda

#define CUDA_CHECK(call) ::lmrt::cuda::checkRuntime((call), __FILE__, __LINE__, #call)
#define CU_CHECK(call) ::lmrt::cuda::checkDriver((call), __FILE__, __LINE__, #call)
#define CUBLAS_CHECK(call) ::lmrt::cuda::checkCublas((call), __FILE__, __LINE__, #call)
/* After every <<<...>>> launch: a bad configuration fails here, at its line. */
#define CUDA_CHECK_LAUNCH() ::lmrt::cuda::checkRuntime(cudaGetLastError(), __FILE__, __LINE__, "kernel launch")
