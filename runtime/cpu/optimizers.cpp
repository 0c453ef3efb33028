/* Implements: optimizers.h: AdamW's adapter, and SGD, LAMB, Lion, Adafactor and Adagrad
   over per-parameter state slots (formulas in docs/runtime.md, "Optimizers"). */
#include "runtime/cpu/optimizers.h"

#include <algorithm>
#include <cmath>

#include "base/host_memory.h"
#include "contract/optimizer_math.h"
#include "runtime/cpu/adamw.h"

namespace lmrt {

namespace {

/* AdamW keeps its own single vectorised pass (adamw.h); its moments are the
   slots "adamw.m", "adamw.v" of each parameter. */
class AdamWOptimizer final : public CpuOptimizer {
public:
  explicit AdamWOptimizer(const OptimizerConfig &c) : adamw_(c) {}
  void step(const std::vector<ParamView> &params, double lr, double gradScale) override {
    adamw_.step(params, lr, gradScale);
  }
  int64_t stepCount() const override { return adamw_.stepCount(); }
  bool writesCopies() const override { return true; }
  std::vector<void *> state(const std::vector<ParamView> &params) override {
    // Before any update (every step so far skipped) the moments are all zero.
    if (adamw_.moments().empty()) adamw_.restoreState(params, adamw_.stepCount());
    std::vector<void *> out;
    for (const AdamW::MomentView &m : adamw_.moments()) {
      out.push_back(m.m);
      out.push_back(m.v);
    }
    return out;
  }
  void restoreState(const std::vector<ParamView> &params, int64_t t) override { adamw_.restoreState(params, t); }

private:
  AdamW adamw_;
};

/* The gradient element as every optimizer reads it, on both backends
   (contract/optimizer_math.h's readGrad: times clipping's factor, then clamped by
   value; a NaN stays NaN). */
template <typename T> struct GradReader {
  const T *g;
  lmc::GradRead<T> read;
  T operator[](int64_t i) const { return lmc::readGrad(g[i], read); }
};

/* What every slot optimizer shares: the state slots, the update count, the
   checks; one update() per trainable parameter. */
class SlotOptimizer : public CpuOptimizer {
public:
  explicit SlotOptimizer(const OptimizerConfig &c) : c_(c) {}
  int64_t stepCount() const override { return t_; }
  std::vector<void *> state(const std::vector<ParamView> &params) override {
    if (state_.empty()) allocate(params);
    std::vector<void *> out;
    for (std::vector<HostBytes> &slots : state_)
      for (HostBytes &b : slots) out.push_back(b.data());
    return out;
  }
  void restoreState(const std::vector<ParamView> &params, int64_t t) override {
    if (t < 0) fail("%s: update count %lld is negative", c_.kind.c_str(), (long long)t);
    allocate(params);
    t_ = t;
  }
  void step(const std::vector<ParamView> &params, double lr, double gradScale) override {
    if (!(lr >= 0) || !std::isfinite(lr))
      fail("%s: learning rate %g is not a finite non-negative number", c_.kind.c_str(), lr);
    if (!(gradScale > 0) || !std::isfinite(gradScale))
      fail("%s: gradient scale %g is not finite and positive", c_.kind.c_str(), gradScale);
    if (state_.empty()) allocate(params);
    if (params.size() != state_.size() || params.size() != numels_.size())
      fail("%s: called with %zu parameters, initialised with %zu", c_.kind.c_str(), params.size(), state_.size());
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].numel != numels_[i])
        fail("%s: parameter %zu changed size between steps", c_.kind.c_str(), i);
    ++t_;
    // A parameter per thread: each one's reductions stay in element order.
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamView &p = params[i];
      if (p.frozen) continue;  // not even weight decay: it stays bit for bit as loaded
      if (p.dtype == DType::F32)
        update<float>(p, state_[i], lr * p.lrScale, gradScale);
      else
        update<double>(p, state_[i], lr * p.lrScale, gradScale);
    }
  }

protected:
  template <typename T> void update(const ParamView &p, std::vector<HostBytes> &slots, double lr, double gradScale) {
    GradReader<T> g{(const T *)p.grad, lmc::gradRead<T>(gradScale, c_.clipValue)};
    std::vector<T *> s;
    for (HostBytes &b : slots) s.push_back((T *)b.data());
    if constexpr (std::is_same_v<T, float>)
      updateF32(p, (float *)p.value, g, s, lr);
    else
      updateF64(p, (double *)p.value, g, s, lr);
  }
  // The kinds implement both through one template of their own.
  virtual void updateF32(const ParamView &p, float *w, const GradReader<float> &g, std::vector<float *> &s,
                         double lr) = 0;
  virtual void updateF64(const ParamView &p, double *w, const GradReader<double> &g, std::vector<double *> &s,
                         double lr) = 0;
  Shape shapeOf(const ParamView &p) const { return p.shape.empty() ? Shape{p.numel} : p.shape; }

  OptimizerConfig c_;
  int64_t t_ = 0;

private:
  void allocate(const std::vector<ParamView> &params) {
    state_.clear();
    numels_.clear();
    for (const ParamView &p : params) {
      if (p.dtype != DType::F32 && p.dtype != DType::F64)
        fail("%s: parameter of type %s is not a float tensor", c_.kind.c_str(), dtypeName(p.dtype));
      std::vector<HostBytes> slots;
      for (const StateSlot &slot : stateSlots(c_, shapeOf(p)))
        slots.emplace_back((size_t)numel(slot.shape) * dtypeSize(p.dtype), 0);
      state_.push_back(std::move(slots));
      numels_.push_back(p.numel);
    }
  }
  std::vector<std::vector<HostBytes>> state_;
  std::vector<int64_t> numels_;
};

#define LMRT_SLOT_UPDATES                                                                                      \
  void updateF32(const ParamView &p, float *w, const GradReader<float> &g, std::vector<float *> &s,          \
                 double lr) override {                                                                         \
    run<float>(p, w, g, s, lr);                                                                                \
  }                                                                                                            \
  void updateF64(const ParamView &p, double *w, const GradReader<double> &g, std::vector<double *> &s,       \
                 double lr) override {                                                                         \
    run<double>(p, w, g, s, lr);                                                                               \
  }

/* SGD as torch.optim.SGD (dampening 0): weight decay is L2, added to the
   gradient; the momentum buffer starts as the first gradient. */
class Sgd final : public SlotOptimizer {
public:
  using SlotOptimizer::SlotOptimizer;
  LMRT_SLOT_UPDATES
private:
  template <typename T> void run(const ParamView &p, T *w, const GradReader<T> &g, std::vector<T *> &s, double lr) {
    const T wd = T(p.weightDecay ? c_.weightDecay : 0.0), mu = T(c_.momentum), rate = T(lr);
    const bool first = t_ == 1;
    for (int64_t i = 0; i < p.numel; ++i) {
      T d = g[i];
      if (wd != T(0)) d += wd * w[i];
      if (!s.empty()) {
        T b = first ? d : mu * s[0][i] + d;
        s[0][i] = b;
        d = c_.nesterov ? d + mu * b : b;
      }
      w[i] -= rate * d;
    }
  }
};

/* Lion (Chen et al. 2023, Algorithm 2): decoupled decay, the sign of an
   interpolation of momentum and gradient, then the momentum's own update. */
class Lion final : public SlotOptimizer {
public:
  using SlotOptimizer::SlotOptimizer;
  LMRT_SLOT_UPDATES
private:
  template <typename T> void run(const ParamView &p, T *w, const GradReader<T> &g, std::vector<T *> &s, double lr) {
    const T keep = T(1.0 - lr * (p.weightDecay ? c_.weightDecay : 0.0)), rate = T(lr);
    const T b1 = T(c_.beta1), w1 = T(1.0 - c_.beta1), b2 = T(c_.beta2), w2 = T(1.0 - c_.beta2);
    T *m = s[0];
    for (int64_t i = 0; i < p.numel; ++i) {
      T gi = g[i];
      T c = b1 * m[i] + w1 * gi;
      T sign = T((c > T(0)) - (c < T(0)));
      w[i] = w[i] * keep - rate * sign;
      m[i] = b2 * m[i] + w2 * gi;
    }
  }
};

/* Adagrad (Duchi et al. 2011) as torch.optim.Adagrad with lr_decay 0 (the
   schedule decays instead): weight decay is L2, added to the gradient; the sum
   of squared gradients (the slot, torch's state_sum) starts at
   initial_accumulator_value, which the first update adds, since every slot
   starts at zero; w -= lr d / (sqrt(sum) + eps). */
class Adagrad final : public SlotOptimizer {
public:
  using SlotOptimizer::SlotOptimizer;
  LMRT_SLOT_UPDATES
private:
  template <typename T> void run(const ParamView &p, T *w, const GradReader<T> &g, std::vector<T *> &s, double lr) {
    const T wd = T(p.weightDecay ? c_.weightDecay : 0.0), rate = T(lr), eps = T(c_.eps);
    const T start = T(c_.initialAccumulator);
    const bool first = t_ == 1;
    T *sum = s[0];
    for (int64_t i = 0; i < p.numel; ++i) {
      T d = g[i];
      if (wd != T(0)) d += wd * w[i];
      sum[i] = (first ? start : sum[i]) + d * d;
      w[i] -= rate * (d / (std::sqrt(sum[i]) + eps));
    }
  }
};

/* LAMB (You et al. 2020, Algorithm 2, with Adam's bias correction): the Adam
   direction plus L2 decay, scaled per parameter by the trust ratio
   ||w|| / ||update|| (1 where either norm is 0, or the parameter is excluded:
   ALBERT's rule leaves out what takes no decay). Two passes: the first updates
   the moments and sums both norms, the second recomputes the direction from
   them (the same expression, the same bits) and applies it. */
class Lamb final : public SlotOptimizer {
public:
  using SlotOptimizer::SlotOptimizer;
  LMRT_SLOT_UPDATES
private:
  template <typename T> void run(const ParamView &p, T *w, const GradReader<T> &g, std::vector<T *> &s, double lr) {
    const double bc1 = 1.0 - std::pow(c_.beta1, (double)t_), bc2 = 1.0 - std::pow(c_.beta2, (double)t_);
    const T b1 = T(c_.beta1), w1 = T(1.0 - c_.beta1), b2 = T(c_.beta2), w2 = T(1.0 - c_.beta2);
    const T ibc1 = T(1.0 / bc1), ibc2 = T(1.0 / bc2), eps = T(c_.eps);
    const T wd = T(p.weightDecay ? c_.weightDecay : 0.0);
    T *m = s[0], *v = s[1];
    auto direction = [&](int64_t i) { return (m[i] * ibc1) / (std::sqrt(v[i] * ibc2) + eps) + wd * w[i]; };
    double wNorm2 = 0, uNorm2 = 0;
    for (int64_t i = 0; i < p.numel; ++i) {
      T gi = g[i];
      m[i] = b1 * m[i] + w1 * gi;
      v[i] = b2 * v[i] + w2 * gi * gi;
      double u = (double)direction(i);
      wNorm2 += (double)w[i] * (double)w[i];
      uNorm2 += u * u;
    }
    double ratio = 1.0;
    if (p.trustRatio && wNorm2 > 0 && uNorm2 > 0) ratio = std::sqrt(wNorm2) / std::sqrt(uNorm2);
    const T step = T(lr * ratio);
    for (int64_t i = 0; i < p.numel; ++i) w[i] -= step * direction(i);
  }
};

/* Adafactor (Shazeer & Stern 2018) as HF transformers' Adafactor (beta1 None):
   beta2_t = 1 - t^decay_rate; the second moment of g^2 + eps1, factored into
   row and column means for rank >= 2 (over the last two dimensions, the rest
   batch); the update g / sqrt(v-hat) divided by max(1, RMS / clip_threshold);
   the step size rho_t = min(1e-2, 1/sqrt(t)) (warmup_init: min(1e-6 t, 1/sqrt(t)))
   or lr, times max(eps2, RMS(w)) with scale_parameter; decay w -= wd * step * w. */
class Adafactor final : public SlotOptimizer {
public:
  using SlotOptimizer::SlotOptimizer;
  LMRT_SLOT_UPDATES
private:
  template <typename T> void run(const ParamView &p, T *w, const GradReader<T> &g, std::vector<T *> &s, double lr) {
    const double t = (double)t_;
    double rate = lr;
    if (c_.relativeStep) rate = std::min(c_.warmupInit ? 1e-6 * t : 1e-2, 1.0 / std::sqrt(t)) * p.lrScale;
    const int64_t n = p.numel;
    if (c_.scaleParameter) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += (double)w[i] * (double)w[i];
      rate *= std::max(c_.eps2, std::sqrt(ss / (double)n));
    }
    const double beta2t = 1.0 - std::pow(t, c_.decayRate);
    const T b2 = T(beta2t), w2 = T(1.0 - beta2t), eps1 = T(c_.eps);
    const Shape shape = shapeOf(p);
    // u(i): the unclipped update of element i, from the updated statistics.
    std::vector<T> rowMean;
    int64_t R = 1, C = 1;
    if (adafactorFactored(shape)) {
      C = shape.back();
      R = shape[shape.size() - 2];
      const int64_t L = n / (R * C);
      T *row = s[0], *col = s[1];
      rowMean.resize((size_t)L);
      std::vector<double> colSum((size_t)C);
      for (int64_t l = 0; l < L; ++l) {
        std::fill(colSum.begin(), colSum.end(), 0.0);
        for (int64_t r = 0; r < R; ++r) {
          double sum = 0;
          for (int64_t c = 0; c < C; ++c) {
            T gi = g[(l * R + r) * C + c];
            T sq = gi * gi + eps1;
            sum += (double)sq;
            colSum[(size_t)c] += (double)sq;
          }
          T &x = row[l * R + r];
          x = b2 * x + w2 * T(sum / (double)C);
        }
        double rs = 0;
        for (int64_t r = 0; r < R; ++r) rs += (double)row[l * R + r];
        rowMean[(size_t)l] = T(rs / (double)R);
        for (int64_t c = 0; c < C; ++c) {
          T &x = col[l * C + c];
          x = b2 * x + w2 * T(colSum[(size_t)c] / (double)R);
        }
      }
    } else {
      T *v = s[0];
      for (int64_t i = 0; i < n; ++i) {
        T gi = g[i];
        v[i] = b2 * v[i] + w2 * (gi * gi + eps1);
      }
    }
    auto update = [&](int64_t i) -> T {
      if (rowMean.empty()) return g[i] / std::sqrt(s[0][i]);
      const int64_t c = i % C, lr_ = i / C, l = lr_ / R;
      T rFactor = T(1) / std::sqrt(s[0][lr_] / rowMean[(size_t)l]);
      T cFactor = T(1) / std::sqrt(s[1][l * C + c]);
      return g[i] * (rFactor * cFactor);
    };
    double us = 0;
    for (int64_t i = 0; i < n; ++i) {
      double u = (double)update(i);
      us += u * u;
    }
    const double clipDiv = std::max(1.0, std::sqrt(us / (double)n) / c_.clipThreshold);
    const T scale = T(rate / clipDiv);
    const T keep = T(1.0 - (p.weightDecay ? c_.weightDecay : 0.0) * rate);
    const bool decays = p.weightDecay && c_.weightDecay != 0;
    for (int64_t i = 0; i < n; ++i) {
      T u = update(i) * scale;
      T wi = w[i];
      if (decays) wi *= keep;
      w[i] = wi - u;
    }
  }
};

}  // namespace

std::unique_ptr<CpuOptimizer> makeCpuOptimizer(const OptimizerConfig &c) {
  if (c.kind == "adamw") return std::make_unique<AdamWOptimizer>(c);
  if (c.kind == "sgd") return std::make_unique<Sgd>(c);
  if (c.kind == "lion") return std::make_unique<Lion>(c);
  if (c.kind == "lamb") return std::make_unique<Lamb>(c);
  if (c.kind == "adafactor") return std::make_unique<Adafactor>(c);
  if (c.kind == "adagrad") return std::make_unique<Adagrad>(c);
  fail("optimizer '%s' is not implemented on the CPU", c.kind.c_str());
}

}  // namespace lmrt
