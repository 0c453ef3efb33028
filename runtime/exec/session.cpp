/* Implements: Session (session.h). */
#include "runtime/exec/session.h"

#include "contract/plan_file.h"
#include "contract/plan_types.h"
#include "contract/zero3.h"
#include "runtime/exec/backend_registry.h"
#include "runtime/exec/init.h"
#include "runtime/exec/shard_layout.h"

namespace lmrt {

TensorRef ParamState::valueRef() { return TensorRef{value.data(), type}; }
TensorRef ParamState::gradRef() { return TensorRef{grad.data(), gradType}; }

std::unique_ptr<Session> Session::load(const std::string &planPath, const DeviceOptions &device) {
  // The device first: a machine that cannot run it says so before anything is read.
  backendProvider(device.device).probe(device);
  return open(readPlanFile(planPath), planPath, device);
}

std::unique_ptr<Session> Session::fromPlan(plan::Plan plan, const std::string &origin, const DeviceOptions &device) {
  backendProvider(device.device).probe(device);
  return open(std::move(plan), origin, device);
}

std::unique_ptr<Session> Session::open(plan::Plan plan, const std::string &origin, const DeviceOptions &device) {
  std::unique_ptr<Session> s(new Session());
  s->device_ = device;
  s->bound_ = std::make_unique<BoundPlan>(std::move(plan), origin);
  const plan::Plan &bound = s->bound_->plan();
  for (const plan::Param &p : bound.params()) {
    ParamState st;
    st.name = p.name();
    // Under ZeRO stage 3 the programs bind the rank's slice, and that is all it keeps.
    st.type = toTensorType(boundParamType(bound, p));
    // From ZeRO stage 2 on the train step returns the rank's slice of each gradient.
    st.gradType = toTensorType(boundGradType(bound, p));
    if (zeroSlicesParams(bound.train().mesh())) {
      plan::ParamSharding slice;
      slice.set_dim(0);
      slice.set_segments(1);
      slice.set_mesh_axis(0);
      slice.set_shards(bound.train().mesh().data());
      s->zeroSlices_.push_back(slice);
    }
    st.weightDecay = p.weight_decay();
    st.frozen = p.frozen();
    st.lrScale = p.has_lr_scale() ? p.lr_scale() : 1.0;
    st.trustRatio = p.has_trust_ratio() ? p.trust_ratio() : p.weight_decay();
    st.value.assign((size_t)st.type.bytes(), 0);
    st.grad.assign((size_t)st.gradType.bytes(), 0);
    s->params_.push_back(std::move(st));
  }
  s->backend_ = backendProvider(device.device).create(*s, device);
  return s;
}

Session::~Session() = default;

ParamState &Session::param(const std::string &name) {
  int i = bound_->paramIndex(name);
  if (i < 0) bound_->error("no parameter named '" + name + "'");
  return params_[i];
}

const plan::Input &Session::input(const std::string &name) const {
  for (const plan::Input &in : plan().inputs())
    if (in.name() == name) return in;
  bound_->error("no input named '" + name + "'");
}

const plan::ParamSharding *Session::sharding(size_t i) const {
  if (!zeroSlices_.empty()) return &zeroSlices_[i];
  const plan::Param &p = plan().params((int)i);
  return p.has_sharding() ? &p.sharding() : nullptr;
}

const plan::ParamSharding *Session::blockSharding(size_t i) const {
  if (zeroSlices_.empty()) return nullptr;
  const plan::Param &p = plan().params((int)i);
  return p.has_sharding() ? &p.sharding() : nullptr;
}

TensorType Session::logicalType(size_t i) const {
  if (!zeroSlices_.empty()) {  // the plan's type: the whole parameter, or on a tensor axis its block
    const TensorType block = toTensorType(plan().params((int)i).type());
    const plan::ParamSharding *b = blockSharding(i);
    return b ? lmrt::logicalType(block, *b) : block;
  }
  const plan::ParamSharding *s = sharding(i);
  return s ? lmrt::logicalType(params_[i].type, *s) : params_[i].type;
}

void Session::sliceParam(size_t i, const TensorRef &logical, const TensorRef &local) const {
  const plan::ParamSharding *s = sharding(i);
  if (!s) fail("internal error: parameter '%s' is not split", params_[i].name.c_str());
  const plan::ParamSharding *b = blockSharding(i);
  if (!b) return sliceShard(*s, logical, local, tensorRank_);
  TensorType blockType = toTensorType(plan().params((int)i).type());
  blockType.dtype = logical.type.dtype;
  HostBytes block((size_t)blockType.bytes());
  sliceShard(*b, logical, TensorRef{block.data(), blockType}, blockRank_);
  sliceShard(*s, TensorRef{block.data(), blockType}, local, tensorRank_);
}

void Session::initParams(uint64_t seed) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const plan::Param &p = plan().params((int)i);
    if (sharding(i)) {  // the logical tensor's values (the same stream, indexed as one process indexes it)
      const TensorType logical = logicalType(i);
      HostBytes whole((size_t)logical.bytes());
      fillInit(TensorRef{whole.data(), logical}, p.init(), seed, params_[i].name);
      sliceParam(i, TensorRef{whole.data(), logical}, params_[i].valueRef());
    } else {
      fillInit(params_[i].valueRef(), p.init(), seed, params_[i].name);
    }
    std::fill(params_[i].grad.begin(), params_[i].grad.end(), 0);
  }
  pushParams();
}

}  // namespace lmrt
