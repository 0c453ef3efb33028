/* Implements: backend.h for an lmrt built without the CUDA toolkit. */
#include "runtime/cuda/backend.h"

#include "base/tensor.h"

namespace lmrt::cuda {
namespace {
[[noreturn]] void noBackend() {
  fail("this lmrt was built without the CUDA backend (CMake found no CUDA toolkit with nvcc and cuBLASLt, or "
       "LMC_ENABLE_CUDA was OFF); rebuild it on a machine with the CUDA toolkit, or use --device cpu");
}
}  // namespace

bool built() { return false; }
std::vector<std::string> listDevices() { noBackend(); }
TrainResult train(const TrainOptions &, const DeviceOptions &, FILE *) { noBackend(); }

}  // namespace lmrt::cuda
