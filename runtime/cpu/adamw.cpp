/* Implements: the AdamW update (formulas in adamw.h). */
#include "runtime/cpu/adamw.h"

#include <algorithm>
#include <cmath>

#include "contract/adamw_math.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt {

AdamW::AdamW(const AdamWConfig &c) : config_(c) {
  // The train settings' bounds (contract/train_settings.h), in their words.
  const std::pair<const settings::Setting &, double> values[] = {
      {settings::kBeta1, c.beta1}, {settings::kBeta2, c.beta2}, {settings::kEps, c.eps},
      {settings::kWeightDecay, c.weightDecay}};
  for (const auto &[setting, v] : values)
    if (!settings::within(setting, v))
      fail("adamw %s = %s %s", setting.field, settings::format(setting, v).c_str(), settings::rule(setting).c_str());
}

namespace {

/* One pass reads p, g, m, v and writes p, m, v: the step is bound by memory bandwidth
   (GPT-2 small: 3.5 GB a step), so clipping is folded in rather than given a pass of its
   own. The element is contract/adamw_math.h's, which this file's -ffp-contract=off
   (LMRT_EXACT_FP_FLAGS) keeps free of fused multiply-adds: every clone GCC makes of this
   loop, its vector body and its scalar tail give the same bits (and the CUDA kernel's).
   Called inside step()'s one parallel region: the threads split every parameter
   and go on to the next without waiting (elementwise, so no order to keep). */
template <typename T>
LMRT_SIMD_CLONES void update(T *p, const T *g, T *m, T *v, int64_t n, const lmc::AdamWScalars<T> &scalars) {
  const lmc::AdamWScalars<T> s = scalars;  // a local copy: its fields stay in registers
#pragma omp for simd schedule(static) nowait
  for (int64_t i = 0; i < n; ++i) {
    T mi = m[i], vi = v[i];
    p[i] = lmc::adamwElement(p[i], g[i], mi, vi, s);
    m[i] = mi;
    v[i] = vi;
  }
}

/* A parameter's bf16 (f16) copy of the elements update() just wrote, rounded as the
   cast kernel rounds. The same worksharing as update()'s loop over the same n, so each
   thread rounds the elements it updated (OpenMP's static schedule gives the same
   iterations to the same threads), with no barrier in between. */
template <typename C> LMRT_SIMD_CLONES void storeCopy(const float *p, C *copy, int64_t n) {
#pragma omp for simd schedule(static) nowait
  for (int64_t i = 0; i < n; ++i) copy[i] = lmc::store<C>(p[i]);
}

/* update() with the copy written too, tile by tile so that the values are rounded
   while in cache: 2 bytes stored a parameter instead of a cast pass (4 read, 2
   stored) before the next step. update() itself is unchanged, and its results do
   not depend on where its range starts (the thread-count contract), so the
   parameter's bits are those of the plain update. */
template <typename C>
void updateWithCopy(float *p, const float *g, float *m, float *v, C *copy, int64_t n,
                    const lmc::AdamWScalars<float> &s) {
  constexpr int64_t kTile = 1 << 15;  // 128 KiB of the parameter
  for (int64_t at = 0; at < n; at += kTile) {
    const int64_t len = std::min(kTile, n - at);
    update<float>(p + at, g + at, m + at, v + at, len, s);
    storeCopy(p + at, copy + at, len);
  }
}

}  // namespace

void AdamW::allocate(const std::vector<ParamView> &params) {
  state_.clear();
  for (const ParamView &p : params) {
    if (p.dtype != DType::F32 && p.dtype != DType::F64)
      fail("adamw: parameter of type %s is not a float tensor", dtypeName(p.dtype));
    size_t bytes = (size_t)p.numel * dtypeSize(p.dtype);
    state_.push_back({p.dtype, p.numel, HostBytes(bytes, 0), HostBytes(bytes, 0)});
  }
}

std::vector<AdamW::MomentView> AdamW::moments() {
  std::vector<MomentView> out;
  for (Moments &s : state_) out.push_back({s.dtype, s.numel, s.m.data(), s.v.data()});
  return out;
}

void AdamW::restoreState(const std::vector<ParamView> &params, int64_t t) {
  if (t < 0) fail("adamw: update count %lld is negative", (long long)t);
  allocate(params);
  t_ = t;
}

void AdamW::step(const std::vector<ParamView> &params, double lr, double gradScale) {
  if (!(lr >= 0) || !std::isfinite(lr)) fail("adamw: learning rate %g is not a finite non-negative number", lr);
  if (!(gradScale > 0) || !std::isfinite(gradScale))
    fail("adamw: gradient scale %g is not finite and positive", gradScale);
  if (state_.empty()) allocate(params);
  if (params.size() != state_.size())
    fail("adamw: called with %zu parameters, initialised with %zu", params.size(), state_.size());
  int64_t total = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamView &p = params[i];
    const Moments &s = state_[i];
    if (p.dtype != s.dtype || p.numel != s.numel)
      fail("adamw: parameter %zu changed from %s[%lld] to %s[%lld] between steps", i,
           dtypeName(s.dtype), (long long)s.numel, dtypeName(p.dtype), (long long)p.numel);
    total += p.numel;
  }
  ++t_;
  const double bc1 = 1.0 - std::pow(config_.beta1, (double)t_), bc2 = 1.0 - std::pow(config_.beta2, (double)t_);
  // One fork for all parameters: a GPT has many small ones (nano: 52, none big enough
  // to be worth a fork of its own, so its whole update ran on one core).
#pragma omp parallel if (total > 65536)
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamView &p = params[i];
    Moments &s = state_[i];
    if (p.frozen) continue;  // not even weight decay: it stays bit for bit as loaded
    const double decay = p.weightDecay ? config_.weightDecay : 0.0;
    const double rate = lr * p.lrScale;  // its parameter group's multiple (1: the same bits as lr)
    auto scalars = [&](auto t) {
      return lmc::adamwScalars<decltype(t)>(rate, decay, config_.beta1, config_.beta2, config_.eps, bc1, bc2,
                                            gradScale, config_.clipValue);
    };
    if (p.dtype == DType::F32 && p.copy && p.copyType == DType::BF16)
      updateWithCopy((float *)p.value, (const float *)p.grad, (float *)s.m.data(), (float *)s.v.data(),
                     (lmc::bf16 *)p.copy, p.numel, scalars(0.f));
    else if (p.dtype == DType::F32 && p.copy && p.copyType == DType::F16)
      updateWithCopy((float *)p.value, (const float *)p.grad, (float *)s.m.data(), (float *)s.v.data(),
                     (lmc::f16 *)p.copy, p.numel, scalars(0.f));
    else if (p.dtype == DType::F32)
      update<float>((float *)p.value, (const float *)p.grad, (float *)s.m.data(), (float *)s.v.data(), p.numel,
                    scalars(0.f));
    else
      update<double>((double *)p.value, (const double *)p.grad, (double *)s.m.data(), (double *)s.v.data(),
                     p.numel, scalars(0.0));
  }
}

}  // namespace lmrt
