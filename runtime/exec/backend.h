/* Implements: the seam between the runtime and the machine a plan runs on.

   A Backend executes one bound plan (bound_plan.h) on one device: it holds the
   device side of the training state (the activation arena, parameters,
   gradients, the optimizer's moments, the decode caches), runs the plan's
   programs on inputs given on the host, hands outputs back on the host, and
   steps the optimizer. The Session (session.h) owns the plan binding, the host
   copies of the parameters and one Backend; everything above it (the training
   loop, evaluation, sampling, checkpoints, weights files) talks to the Session
   and this interface only, so it runs unchanged on every backend.

   The CPU backend (runtime/cpu/) computes on the host copies themselves, so its
   uploads and downloads are no-ops; the CUDA backend (runtime/cuda/, a plugin
   loaded for --device cuda) mirrors them in device memory. A new backend is a
   folder that implements this class and registers a BackendProvider
   (backend_registry.h); docs/architecture.md says how. */
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "contract/plan.pb.h"

namespace lmrt {

/* Where a session runs: lmrt's --device, --cuda-device and --tf32. */
struct DeviceOptions {
  std::string device = "cpu";  // "cpu" or "cuda"
  int index = -1;              // which device of that kind; -1: the launcher's local rank (cuda: modulo the GPUs)
  bool tf32 = false;           // cuda: f32 GEMMs on TF32 tensor cores (10-bit mantissa inputs, f32 accumulation)
};

/* Wall time of run()'s steps summed per program and kernel (`lmrt run --profile`). */
struct OpProfile {
  struct Entry {
    double seconds = 0;
    int64_t calls = 0;
    int64_t flops = 0;  // the plan's predicted FLOPs of those calls
  };
  std::map<std::string, Entry> ops;  // "train_step/matmul", "train_step/matmul(lhs^T)", ...
};

/* The first non-finite value a checked run() met (NaN attribution, docs/runtime.md §3). */
struct NonFiniteValue {
  bool found = false;
  std::string where;    // "program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5)"
  std::string program;  // "train_step"
  int64_t step = 0;     // index of the step in the program
  std::string op, loc;  // the step's op and its .lm location ("" when the plan has none)
  std::string tensor;   // "output 0 f32[2, 16, 256]", or "parameter 'wte' f32[256, 32]"
  int64_t element = 0;  // flat index of the first non-finite element
  double value = 0;
};

/* Called after every step while set, with the program's name, the plan step and
   the step's operands and results on the host (valid only during the call). */
using StepObserver = std::function<void(const std::string &program, const plan::Step &step,
                                        const std::vector<TensorRef> &in, const std::vector<TensorRef> &out)>;

/* A host tensor under a name ("adamw.m.wte"). */
using NamedTensor = std::pair<std::string, TensorRef>;

class Backend {
public:
  virtual ~Backend() = default;

  /* What the run is on, for the log: "cpu" or "cuda:0 NVIDIA H100 ..., TF32 GEMMs". */
  virtual std::string describe() const = 0;
  /* How the optimizer is split over data-parallel ranks, for the log: "ZeRO stage 1:
     rank 0 keeps ..." (docs/distributed.md), or "" when this rank keeps all of it. */
  virtual std::string describeSharding() const { return ""; }
  /* Memory the backend allocated on its device, for the end-of-run line (0: the host's is measured as RSS). */
  virtual int64_t deviceBytes() const { return 0; }

  // --- parameters: the Session's host copies <-> the backend --------------------
  /* The host parameter values become the backend's; its gradients are zeroed. */
  virtual void uploadParams() = 0;
  /* The backend's parameter values (and gradients) are copied into the host copies. */
  virtual void downloadParams(bool grads) = 0;

  // --- programs -----------------------------------------------------------------
  /* Runs a program. `inputs` maps every input the program reads to a host tensor of
     exactly the declared type (checked, ids against their bounds). Errors name the
     plan step. Outputs stay valid until the next run. */
  virtual void run(const std::string &program, const std::map<std::string, TensorRef> &inputs) = 0;
  /* An output of the last run of `program` ("loss", "logits", "grad:<param>"), on the
     host; valid until the next run or output() call. Throws if absent. */
  virtual TensorRef output(const std::string &program, const std::string &name) = 0;

  // --- the optimizer step --------------------------------------------------------
  /* Gradient accumulation over `count` micro-batches, called after micro-batch `micro`
     (0-based) ran train_step: the gradients are summed, and after the last one the
     gradient buffers hold their mean. Not called when count is 1. */
  virtual void accumulateGradients(int micro, int count) = 0;
  /* sqrt(sum of g^2) over every gradient, accumulated in double in a fixed order
     (the same bits every run); a non-finite gradient gives a non-finite norm. */
  virtual double gradientNorm() = 0;
  /* One update of the plan's optimizer with learning rate `lr`, each gradient scaled
     by `gradScale` first (clipping); frozen parameters are left as they are. */
  virtual void optimizerStep(double lr, double gradScale) = 0;
  /* Updates done so far (the next optimizerStep is update optimizerUpdates() + 1). */
  virtual int64_t optimizerUpdates() const = 0;
  /* The optimizer's state as host tensors, in the order and under the names a
     checkpoint stores them ("adamw.m.<param>", "adamw.v.<param>" for each parameter
     in plan order); valid until the next call on the backend. */
  virtual std::vector<NamedTensor> optimizerState() = 0;
  /* Restoring a checkpoint: sets the update count and returns the same tensors as
     optimizerState(), zeroed and writable; finishRestore() then makes the written
     values the backend's. */
  virtual std::vector<NamedTensor> beginRestore(int64_t updates) = 0;
  virtual void finishRestore() = 0;

  // --- diagnostics (slow paths; nullptr / an empty function turns each off) ------
  /* Every run() adds each step's time to `profile`. */
  virtual void setProfile(OpProfile *profile) = 0;
  /* run() checks every float parameter a step reads and every output it writes, and
     stops the program at the first non-finite value, described in `*check`
     (found = true; the program's outputs are then not valid). */
  virtual void setNonFiniteCheck(NonFiniteValue *check) = 0;
  virtual void setStepObserver(StepObserver observer) = 0;
};

}  // namespace lmrt
