/* Implements: the error messages of check.h. */
#include "runtime/cuda/check.h"

#include <cstring>
#include <string>

#include "runtime/cuda/driver.h"
#include "base/tensor.h"

namespace lmrt::cuda {
namespace {

/* "runtime/cuda/gemm.cpp" rather than the build machine's absolute path. */
const char *repoPath(const char *file) {
  const char *p = std::strstr(file, "runtime/cuda/");
  return p ? p : file;
}

const char *cublasStatusName(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

}  // namespace

void throwCallError(const char *file, int line, const char *call, const char *name, const char *text) {
  throw Error(std::string(repoPath(file)) + ":" + std::to_string(line) + ": " + call + " failed: " + name + " (" +
              text + ")");
}

void checkDriver(CUresult r, const char *file, int line, const char *call) {
  if (r == CUDA_SUCCESS) return;
  const char *name = "CUDA_ERROR_UNKNOWN", *text = "no description";
  const DriverApi &d = driver();
  if (d.getErrorName) d.getErrorName(r, &name);
  if (d.getErrorString) d.getErrorString(r, &text);
  throwCallError(file, line, call, name, text);
}

void checkCublas(cublasStatus_t s, const char *file, int line, const char *call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throwCallError(file, line, call, cublasStatusName(s), cublasLtGetStatusString(s));
}

}  // namespace lmrt::cuda
