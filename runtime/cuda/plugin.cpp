/* Implements: the entry point of liblmrt_cuda.so, the CUDA backend as a plugin
   that lmrt opens only for --device cuda (runtime/exec/backend_registry.h), so a
   CPU run never maps the CUDA libraries. */
#include "runtime/cuda/cuda_backend.h"
#include "runtime/exec/backend_registry.h"

extern "C" __attribute__((visibility("default"))) const lmrt::BackendProvider *lmrtBackendProvider() {
  return &lmrt::cuda::provider();
}
