/* Implements: a loaded plan ready to run on one backend: the plan binding
   (bound_plan.h), the host copies of the parameters and their gradients, and the
   Backend (backend.h) that runs the programs and steps the optimizer on the
   device the session was opened for. Training, evaluation, sampling, gradcheck,
   checkpoints, weights files and parity dumps are all built on this, and so run
   on every backend.

   Host and backend: the host parameter values are where weights are initialised,
   loaded, restored, saved and dumped. initParams() and the weights and checkpoint
   readers push them to the backend when they are done (pushParams()); whatever
   reads them first pulls the backend's (pullParams()). On the CPU both are no-ops:
   the CPU backend computes on the host copies themselves. */
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "base/tensor.h"
#include "contract/plan.pb.h"
#include "runtime/exec/backend.h"
#include "runtime/exec/bound_plan.h"

namespace lmrt {

struct ParamState {
  std::string name;
  TensorType type;
  TensorType gradType;  // type's, or from ZeRO stage 2 on the rank's slice (contract/zero3.h)
  bool weightDecay = false;
  bool frozen = false;  // plan Param.frozen: no gradient, the optimizer skips it
  double lrScale = 1.0;     // plan Param.lr_scale (absent: 1)
  bool trustRatio = false;  // plan Param.trust_ratio (absent: as weightDecay, ALBERT's rule)
  HostBytes value;      // type.bytes() bytes, f32 or f64
  HostBytes grad;       // gradType.bytes() bytes; written by "train_step"
  TensorRef valueRef();
  TensorRef gradRef();
};

class Session {
public:
  /* Opens the device first (a machine without it says so before the plan is read),
     then reads the plan file, checks magic/version/checksum, validates it and binds
     it, and makes the backend. Throws Error. */
  static std::unique_ptr<Session> load(const std::string &planPath, const DeviceOptions &device = {});
  /* Same from an in-memory plan (tests). */
  static std::unique_ptr<Session> fromPlan(plan::Plan plan, const std::string &origin,
                                           const DeviceOptions &device = {});
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const plan::Plan &plan() const { return bound_->plan(); }
  const BoundPlan &bound() const { return *bound_; }
  const std::string &origin() const { return bound_->origin(); }
  const DeviceOptions &device() const { return device_; }
  Backend &backend() { return *backend_; }

  /* The host copies (see above). */
  std::vector<ParamState> &params() { return params_; }
  const std::vector<ParamState> &params() const { return params_; }
  ParamState &param(const std::string &name);  // throws Error if unknown
  bool hasProgram(const std::string &name) const { return bound_->hasProgram(name); }
  const plan::Input &input(const std::string &name) const;  // throws Error if unknown

  /* Deterministic initialisation from the plan's Init specs, on the host, then
     pushed: each parameter's RNG stream is keyed by (seed, parameter name), so
     adding a parameter never changes the others, and every backend starts from the
     same bits. A tensor-parallel parameter (plan Param.sharding) is initialised as
     the logical tensor, as one process would, and keeps tensorRank()'s slice of it. */
  void initParams(uint64_t seed);
  /* This process's rank on the plan's tensor axis (0 unless the training loop of a
     tensor-parallel run sets it, docs/distributed.md): which slice of each split
     parameter it holds. Under ZeRO stage 3 (every parameter split over the data axis)
     its data rank, and on a data x tensor mesh blockRank() its tensor rank. */
  int tensorRank() const { return tensorRank_; }
  /* Parameter i's sharding (plan Param.sharding, or under ZeRO stage 3 the slice of the
     flattened tensor every parameter is, contract/zero3.h), or null when this rank holds
     all of it. */
  const plan::ParamSharding *sharding(size_t i) const;
  /* Under ZeRO stage 3 on a data x tensor mesh: the tensor-parallel sharding of the block
     (plan Param.type) that parameter i's ZeRO slice is cut from, or null (a whole
     parameter, or no tensor axis). The slice of the logical tensor this rank holds is
     block blockRank() of it by this sharding, then slice tensorRank() of that block. */
  const plan::ParamSharding *blockSharding(size_t i) const;
  int blockRank() const { return blockRank_; }
  /* Parameter i's logical type: its type, or for a split one the whole tensor's (what a
     checkpoint or weights file holds). */
  TensorType logicalType(size_t i) const;
  /* This rank's part `local` of `logical`, a tensor of parameter i's logical shape (its
     value or an optimizer state slot; `local` of any dtype the same as `logical`'s): the
     sharding(i) slice of it, through the blockSharding(i) block where there is one. */
  void sliceParam(size_t i, const TensorRef &logical, const TensorRef &local) const;
  void setTensorRank(int rank) { tensorRank_ = rank; }
  void setBlockRank(int rank) { blockRank_ = rank; }
  /* The host values, changed, become the backend's (gradients zeroed). */
  void pushParams() { backend_->uploadParams(); }
  /* The backend's values (and gradients) are copied into the host copies. */
  void pullParams(bool grads = false) { backend_->downloadParams(grads); }

  /* Backend::run and Backend::output (backend.h). */
  void run(const std::string &program, const std::map<std::string, TensorRef> &inputs) {
    backend_->run(program, inputs);
  }
  TensorRef output(const std::string &program, const std::string &name) { return backend_->output(program, name); }
  void setProfile(OpProfile *profile) { backend_->setProfile(profile); }
  void setNonFiniteCheck(NonFiniteValue *check) { backend_->setNonFiniteCheck(check); }
  void setStepObserver(StepObserver observer) { backend_->setStepObserver(std::move(observer)); }

private:
  Session() = default;
  static std::unique_ptr<Session> open(plan::Plan plan, const std::string &origin, const DeviceOptions &device);
  DeviceOptions device_;
  int tensorRank_ = 0;
  int blockRank_ = 0;  // ZeRO stage 3 on a data x tensor mesh: the tensor rank
  std::unique_ptr<BoundPlan> bound_;
  std::vector<ParamState> params_;
  std::vector<plan::ParamSharding> zeroSlices_;  // ZeRO stage 3: every parameter's (mesh axis 0)
  std::unique_ptr<Backend> backend_;  // last: it refers to the rest
};

}  // namespace lmrt
