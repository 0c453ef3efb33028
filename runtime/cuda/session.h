/* Implements: CudaSession, a plan's programs executing on one GPU.
   Device memory, all allocated once when the session is made:
     arena      one allocation of the plan's largest arena_bytes; every ARENA
                buffer lives at its plan offset (the programs never run at once)
     parameters one allocation holding every parameter, each at a 256-byte
                aligned offset; the gradients, AdamW's m and v in three more
                allocations of the same layout, so the gradient norm and AdamW
                are single launches over flat storage
     inputs     one buffer per program input (the token batch)
     constants  the plan's CONSTANT buffers, uploaded once
     scratch    the most any step needs besides its outputs (attention's
                recomputed forward, reductions' partial sums)
   plus cuBLASLt's 32 MiB workspace. Every step is enqueued on one stream in
   plan order; nothing waits for the host until the caller reads a result back.
   The host Session (loaded without its CPU kernels) keeps the plan, the host
   copies of the parameters (init, checkpoints, parity dumps) and validation. */
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/backend.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/generated.h"
#include "runtime/cuda/ops.h"
#include "runtime/cuda/optimizer.h"
#include "runtime/exec/session.h"

namespace lmrt::cuda {

class CudaSession {
public:
  /* The device must be open (openDevice). Throws lmrt::Error naming what does
     not fit or is not supported (a step naming the plan step). */
  CudaSession(Session &host, const std::string &origin, const DeviceOptions &options, const DeviceInfo &device);
  ~CudaSession();
  CudaSession(const CudaSession &) = delete;
  CudaSession &operator=(const CudaSession &) = delete;

  cudaStream_t stream() const { return stream_; }
  const DeviceInfo &device() const { return device_; }
  /* Device bytes this session allocated (arena, parameters and optimizer state, inputs, constants, scratch). */
  size_t deviceBytes() const;

  /* Copies every parameter's host value to the device and zeroes gradients and moments (synchronous). */
  void uploadParams();
  /* Copies the device values (and the gradients) into the host session's parameters (synchronous). */
  void downloadParams(bool grads);

  /* The device buffer of a program's input, to copy a batch into before run(). */
  DevTensor input(const std::string &program, const std::string &name);
  /* Enqueues every step of the program. Errors name the plan step. */
  void run(const std::string &program);
  /* An output ("loss", "logits", "grad:<param>") of the program, in device memory. */
  DevTensor output(const std::string &program, const std::string &name);

  /* Enqueues the gradient norm with clipping's factor (normResult(): [norm, factor]),
     then AdamW update number `t` (1-based) with learning rate lr. */
  void optimizerStep(int64_t t, double lr, double maxNorm);
  const double *normResult() const { return static_cast<const double *>(norm_.get()); }

private:
  struct Step;
  struct Program;
  Program &program(const std::string &name);

  Session &host_;
  DeviceOptions options_;
  DeviceInfo device_;
  std::string origin_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<GeneratedModule> generated_;
  DType paramType_ = DType::F32;
  std::vector<int64_t> paramOffset_;  // elements into the flat storage, per parameter
  int64_t paramElems_ = 0;
  DeviceBuffer arena_, params_, grads_, m_, v_, constants_, scratch_, norm_, chunks_;
  int64_t numChunks_ = 0;
  std::map<std::string, DeviceBuffer> inputs_;  // "program/input"
  std::map<std::string, DeviceBuffer> states_;  // Plan.states by name (zeroed; the decode caches)
  std::map<std::string, std::unique_ptr<Program>> programs_;
  bool syncEveryStep_ = false;  // LMRT_CUDA_SYNC=1
};

}  // namespace lmrt::cuda
