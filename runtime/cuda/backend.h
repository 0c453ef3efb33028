/* Implements: the entry points of lmrt's CUDA backend that the command line
   uses. Always built: where the CUDA toolkit was missing at configure time
   (backend_stub.cpp) every call says that this lmrt has no CUDA backend, so
   `lmrt run --device cuda` fails clearly instead of not existing. */
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/train/train_loop.h"

namespace lmrt::cuda {

/* True when this lmrt was built with the CUDA backend. */
bool built();

/* One line per CUDA device ("cuda:0 NVIDIA H100 80GB HBM3, sm_90, 132 SMs,
   79.1 GiB, driver 13.0"). Throws lmrt::Error saying why there is none: no
   CUDA backend in this build, no NVIDIA driver, no device. */
std::vector<std::string> listDevices();

struct DeviceOptions {
  int device = 0;     // CUDA device index
  bool tf32 = false;  // f32 GEMMs on TF32 tensor cores (10-bit mantissa inputs, f32 accumulation)
};

/* `lmrt run --device cuda`: the training loop of train_loop.h with the plan's
   programs, the gradient norm and AdamW on the GPU (docs/runtime.md, "The CUDA
   backend"). Same options, same output lines, same weights file format. */
TrainResult train(const TrainOptions &options, const DeviceOptions &device, FILE *log = stdout);

}  // namespace lmrt::cuda
