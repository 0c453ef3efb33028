/* Implements: device.h. */
#include "runtime/cuda/device.h"

#include <cstdio>

#include "base/tensor.h"
#include "runtime/comm/communicator.h"

namespace lmrt::cuda {

std::string DeviceInfo::str() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "cuda:%d %s, sm_%d%d, %d SMs, %.1f GiB, driver %d.%d", index, name.c_str(), major,
                minor, smCount, double(totalBytes) / (1 << 30), driverVersion / 1000, (driverVersion % 1000) / 10);
  return buf;
}

std::string unavailableReason() {
  int driver = 0;
  cudaError_t e = cudaDriverGetVersion(&driver);
  if (e != cudaSuccess || driver == 0)
    return "no NVIDIA driver is installed (libcuda.so.1 was not found or could not be loaded)";
  int count = 0;
  e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so a later call does not see it
    return std::string("the CUDA driver reports no usable device: ") + cudaGetErrorName(e) + " (" +
           cudaGetErrorString(e) + ")";
  }
  if (count == 0) return "the CUDA driver found no device";
  return "";
}

DeviceInfo openDevice(int index) {
  std::string why = unavailableReason();
  if (!why.empty()) fail("no CUDA GPU is usable on this machine: %s", why.c_str());
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index == -1 && count > 0) index = comm::launchEnv().localRank % count;
  if (index < 0 || index >= count)
    fail("CUDA device %d does not exist (this machine has %d: 0..%d)", index, count, count - 1);
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaFree(nullptr));  // creates the primary context now, so its failure is reported here
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  d.major = prop.major;
  d.minor = prop.minor;
  d.smCount = prop.multiProcessorCount;
  d.totalBytes = prop.totalGlobalMem;
  CUDA_CHECK(cudaDriverGetVersion(&d.driverVersion));
  if (d.major < 8)
    fail("CUDA device %d (%s) has compute capability %d.%d; lmrt's CUDA kernels are built for sm_80 and newer",
         index, d.name.c_str(), d.major, d.minor);
  return d;
}

DeviceBuffer::DeviceBuffer(size_t bytes, const char *what) : bytes_(bytes) {
  if (bytes == 0) return;
  cudaError_t e = cudaMalloc(&p_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    size_t freeB = 0, totalB = 0;
    cudaMemGetInfo(&freeB, &totalB);
    fail("cannot allocate %zu bytes of GPU memory for %s: %s (%zu of %zu bytes free)", bytes, what,
         cudaGetErrorString(e), freeB, totalB);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);  // no check: a destructor must not throw, and a failure here changes nothing
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(size_t bytes, const char *what) : bytes_(bytes) {
  if (bytes == 0) return;
  cudaError_t e = cudaMallocHost(&p_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    fail("cannot allocate %zu bytes of pinned host memory for %s: %s", bytes, what, cudaGetErrorString(e));
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

}  // namespace lmrt::cuda
