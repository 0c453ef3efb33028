/* Implements: backend.h's device listing for an lmrt built with CUDA (the
   training loop is train.cpp). */
#include "runtime/cuda/backend.h"

#include "runtime/cuda/device.h"
#include "base/tensor.h"

namespace lmrt::cuda {

bool built() { return true; }

std::vector<std::string> listDevices() {
  std::string why = unavailableReason();
  if (!why.empty()) fail("no CUDA GPU is usable on this machine: %s", why.c_str());
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) lines.push_back(openDevice(i).str());
  return lines;
}

}  // namespace lmrt::cuda
