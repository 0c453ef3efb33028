/* Implements: a loaded, validated plan with its parameter, gradient and arena
   storage, and the execution of its programs ("train_step", "eval", "forward").
   The training loop, sampling, gradcheck and parity dumps are all built on this. */
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "contract/plan.pb.h"
#include "base/host_memory.h"
#include "base/tensor.h"

namespace lmrt {

/* Wall time of run()'s steps summed per program and kernel (`lmrt run --profile`). */
struct OpProfile {
  struct Entry {
    double seconds = 0;
    int64_t calls = 0;
    int64_t flops = 0;  // the plan's predicted FLOPs of those calls
  };
  std::map<std::string, Entry> ops;  // "train_step/matmul", "train_step/matmul(lhs^T)", ...
};

struct ParamState {
  std::string name;
  TensorType type;
  bool weightDecay = false;
  bool frozen = false;      // plan Param.frozen: no gradient, the optimizer skips it
  HostBytes value;  // type.bytes() bytes, f32 or f64
  HostBytes grad;   // same size; written by "train_step"
  TensorRef valueRef();
  TensorRef gradRef();
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

class Session {
public:
  /* Reads the plan file, checks magic/version/checksum and validates every program
     (buffer ids, arena bounds, each step against its kernel's check). Throws Error.
     With cpuKernels false the plan's generated CPU kernels are not loaded (a
     plan compiled only for CUDA loads too), and run() refuses its fused steps:
     the CUDA backend (runtime/cuda/) runs the programs and uses this session for
     the plan, the parameters' host copies, init and checkpoints. */
  static std::unique_ptr<Session> load(const std::string &planPath, bool cpuKernels = true);
  /* Same from an in-memory plan (tests). */
  static std::unique_ptr<Session> fromPlan(plan::Plan plan, const std::string &origin, bool cpuKernels = true);

  const plan::Plan &plan() const { return plan_; }
  std::vector<ParamState> &params() { return params_; }
  const std::vector<ParamState> &params() const { return params_; }
  ParamState &param(const std::string &name);  // throws Error if unknown
  bool hasProgram(const std::string &name) const;
  const plan::Input &input(const std::string &name) const;  // throws Error if unknown

  /* Deterministic initialisation from the plan's Init specs: each parameter's RNG
     stream is keyed by (seed, parameter name), so adding a parameter never changes
     the others. */
  void initParams(uint64_t seed);

  /* Runs a program. `inputs` maps every input name the program reads to a tensor of
     exactly the declared type (checked). Outputs stay valid until the next run. */
  void run(const std::string &program, const std::map<std::string, TensorRef> &inputs);
  /* An output of the last run of `program`: "loss", "logits", ... (throws if absent). */
  TensorRef output(const std::string &program, const std::string &name);
  /* While set (not owned), every run() adds each step's time to it; nullptr turns it off. */
  void setProfile(OpProfile *profile) { profile_ = profile; }
  /* While set (not owned), run() checks every f32/f64 parameter a step reads and every
     output it writes, and stops the program at the first non-finite value, described
     in `*check` (found = true; the program's outputs are then not valid). Slow: for
     re-running a step that diverged. nullptr turns it off. */
  void setNonFiniteCheck(NonFiniteValue *check) { nonFinite_ = check; }
  /* While set, run() calls it after every step with the program's name, the plan
     step and the step's operands and results (valid only during the call). The
     parity dump records lm.sample's draws this way. An empty function turns it off. */
  using StepObserver = std::function<void(const std::string &program, const plan::Step &step,
                                          const std::vector<TensorRef> &in, const std::vector<TensorRef> &out)>;
  void setStepObserver(StepObserver observer) { observer_ = std::move(observer); }

private:
  explicit Session(plan::Plan plan);
  plan::Plan plan_;
  std::vector<ParamState> params_;
  struct Impl;
  std::shared_ptr<Impl> impl_;
  OpProfile *profile_ = nullptr;
  NonFiniteValue *nonFinite_ = nullptr;
  StepObserver observer_;
};

}  // namespace lmrt
