/* Implements: choosing the GPU, and the owners of device and pinned host memory.
   Every allocation names what it is for, so running out of GPU memory says which
   buffer did not fit and how much was free. */
#pragma once
#include <cstddef>
#include <string>

#include "runtime/cuda/check.h"

namespace lmrt::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int smCount = 0;
  size_t totalBytes = 0;
  int driverVersion = 0;  // e.g. 13000
  std::string str() const;  // "cuda:0 NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB, driver 13.0"
};

/* Why no CUDA device is usable ("no NVIDIA driver: ...", "no CUDA device"), or "". */
std::string unavailableReason();
/* Makes device `index` current and returns what it is; throws lmrt::Error when
   there is no driver, no such device, or it is older than sm_80. Index -1 (--device
   cuda without --cuda-device): the launcher's local rank modulo the GPUs (comm::LaunchEnv),
   so the ranks of one machine under mpirun or srun take a GPU each, as NCCL needs; 0 in a
   process alone. */
DeviceInfo openDevice(int index);

/* cudaMalloc'd memory, freed on destruction. */
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const char *what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return p_; }
  char *bytes() const { return static_cast<char *>(p_); }
  size_t size() const { return bytes_; }

private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

/* Page-locked host memory (cudaMallocHost): copies from it run asynchronously. */
class PinnedBuffer {
public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const char *what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer &&o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  void *get() const { return p_; }
  size_t size() const { return bytes_; }

private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace lmrt::cuda
