/* Implements: driver() (driver.h). */
#include "runtime/cuda/driver.h"

#include <string>

#include "runtime/cuda/check.h"
#include "base/tensor.h"

namespace lmrt::cuda {
namespace {

/* The driver ABI these prototypes come from: CUDA 12.0, which every driver that
   runs sm_80/sm_90 code from CUDA 13 provides. */
constexpr unsigned kDriverAbi = 12000;

template <typename Fn> void resolve(const char *symbol, Fn &out) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, kDriverAbi, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !fn)
    fail("the CUDA driver has no entry point '%s' (version %u); update the NVIDIA driver", symbol, kDriverAbi);
  out = reinterpret_cast<Fn>(fn);
}

DriverApi load() {
  DriverApi d;
  resolve("cuGetErrorName", d.getErrorName);
  resolve("cuGetErrorString", d.getErrorString);
  resolve("cuModuleLoadData", d.moduleLoadData);
  resolve("cuModuleUnload", d.moduleUnload);
  resolve("cuModuleGetFunction", d.moduleGetFunction);
  resolve("cuLaunchKernel", d.launchKernel);
  return d;
}

}  // namespace

const DriverApi &driver() {
  static const DriverApi api = load();
  return api;
}

}  // namespace lmrt::cuda
