/* Implements: the few CUDA driver API entry points the backend uses (loading the
   plan's module image and launching its generated kernels), obtained through
   cudart's cudaGetDriverEntryPointByVersion so that lmrt does not link libcuda:
   the same binary starts on a machine without an NVIDIA driver and reports that
   only when --device cuda is asked for. */
#pragma once
#include <cuda.h>

namespace lmrt::cuda {

struct DriverApi {
  decltype(&cuGetErrorName) getErrorName = nullptr;
  decltype(&cuGetErrorString) getErrorString = nullptr;
  decltype(&cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&cuModuleUnload) moduleUnload = nullptr;
  decltype(&cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&cuLaunchKernel) launchKernel = nullptr;
};

/* The entry points, resolved on first use (after the runtime has a device);
   throws lmrt::Error naming the symbol the driver lacks. */
const DriverApi &driver();

}  // namespace lmrt::cuda
