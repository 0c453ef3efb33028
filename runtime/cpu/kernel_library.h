/* Implements: loading a plan's generated CPU kernels (docs/fusion.md). The plan
   embeds a shared object per target; the one for this CPU is mapped from memory
   (memfd + dlopen: nothing is written to disk) and every kernel's entry symbol
   is resolved before the first step runs. The image's checksum is verified by
   plan validation, before this code touches a byte of it. */
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "contract/plan.pb.h"
#include "runtime/cpu/kernels/generated.h"

namespace lmrt {

class KernelLibrary {
public:
  /* Loads the CPU library of `plan` (validated) and resolves plan.kernels, in
     order. A plan without generated kernels loads nothing. Throws lmrt::Error
     when the plan has no library for this CPU, naming what it was built for. */
  static std::unique_ptr<KernelLibrary> load(const plan::Plan &plan, const std::string &origin);
  ~KernelLibrary();

  const kernels::GeneratedKernel &kernel(int index) const { return kernels_[index]; }
  /* The target of the loaded library ("cpu-x86-64"), "" when none was needed. */
  const std::string &target() const { return target_; }

private:
  KernelLibrary() = default;
  void *handle_ = nullptr;
  int fd_ = -1;
  std::string target_;
  std::vector<kernels::GeneratedKernel> kernels_;
};

/* True when this CPU can run code built for `target` ("cpu-x86-64": baseline code
   whose entry points dispatch to AVX2 or AVX-512 clones themselves). */
bool cpuSupportsTarget(const std::string &target);

}  // namespace lmrt
