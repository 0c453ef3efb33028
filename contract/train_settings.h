/* Implements: the table of the train settings: the optimizers and learning-rate
   schedules a plan may name, and every number of a `train` block with its
   default and its bounds (docs/language.md, "train"; docs/plan-format.md).
   Header-only plain C++, shared by the four places that must agree: the
   frontend (the `train` block, turned into the lm.train module attribute),
   the plan writer (lm.train -> the plan's TrainConfig, with the defaults of
   absent keys), the plan contract (lmc and lmrt check every TrainConfig against
   it) and the runtime's learning-rate schedule. A default or a bound is stated
   here and nowhere else; each side only binds the settings to its own form. */
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace lmrt::settings {

/* The upper bound of a setting with none: any finite value. */
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

/* One number of the train block. It has three names because the language, the
   module attribute and the plan named it apart before this table existed:
   `keyword` in a .lm file ("cooldown"), `attr` in lm.train ("cooldown_fraction"),
   `field` in the plan's TrainConfig ("warmup_steps"). */
struct Setting {
  const char *keyword;
  const char *attr;
  const char *field;
  double defaultValue;
  double lo, hi;         // bounds; hi = kNoLimit: none above (NaN and infinities never pass)
  bool loOpen, hiOpen;   // an open bound excludes its own value
  bool isInt;            // a whole number (i64 in lm.train and in the plan)
  const char *note = nullptr;       // said after the rule: "(0: off)"
  const char *meaning = nullptr;    // said before the rule where the name does not explain the number
  const Setting *atMost = nullptr;  // also at most that setting's value (min_lr <= lr)
  bool isBool = false;   // true or false in a .lm file, 0 or 1 in lm.train (i64), a bool in the plan
};

// --- AdamW, with PyTorch's defaults ---------------------------------------------
// lr = 0 is allowed: a frozen run (evaluation on the training path).
inline constexpr Setting kLr{"lr", "lr", "lr", 1e-3, 0, kNoLimit, false, false, false};
// The language writes the two as one keyword: betas = (beta1, beta2).
inline constexpr Setting kBeta1{"betas", "beta1", "beta1", 0.9, 0, 1, false, true, false};
inline constexpr Setting kBeta2{"betas", "beta2", "beta2", 0.999, 0, 1, false, true, false};
inline constexpr Setting kEps{"eps", "eps", "eps", 1e-8, 0, kNoLimit, true, false, false};
inline constexpr Setting kWeightDecay{"weight_decay", "weight_decay", "weight_decay", 0.01, 0, kNoLimit,
                                      false, false, false};

// --- the other optimizers' own settings (docs/runtime.md, "Optimizers") -----------
// SGD (torch.optim.SGD): heavy-ball momentum, optionally Nesterov's.
inline constexpr Setting kMomentum{"momentum", "momentum", "momentum", 0, 0, 1, false, true, false};
inline constexpr Setting kNesterov{"nesterov", "nesterov", "nesterov", 0, 0, 1, false, false, true,
                                   nullptr, nullptr, nullptr, /*isBool=*/true};
// Adafactor (Shazeer & Stern 2018, as HF transformers' Adafactor): eps = (eps1, eps2)
// is one keyword for two settings, like betas; eps1 is kEps with Adafactor's default.
inline constexpr Setting kEps2{"eps", "eps2", "eps2", 1e-3, 0, kNoLimit, true, false, false};
// d, the RMS an update is clipped to.
inline constexpr Setting kClipThreshold{"clip_threshold", "clip_threshold", "clip_threshold", 1.0, 0, kNoLimit,
                                        true, false, false};
// beta2 of update t is 1 - t^decay_rate.
inline constexpr Setting kDecayRate{"decay_rate", "decay_rate", "decay_rate", -0.8, -1, 0, false, true, false};
// The step size is min(1e-2, 1/sqrt(t)) (warmup_init: min(1e-6 t, 1/sqrt(t))), not lr.
inline constexpr Setting kRelativeStep{"relative_step", "relative_step", "relative_step", 1, 0, 1, false, false,
                                       true, nullptr, nullptr, nullptr, /*isBool=*/true};
// The step size is multiplied by max(eps2, RMS(p)).
inline constexpr Setting kScaleParameter{"scale_parameter", "scale_parameter", "scale_parameter", 1, 0, 1, false,
                                         false, true, nullptr, nullptr, nullptr, /*isBool=*/true};
// Adagrad (torch.optim.Adagrad): the sum of squared gradients starts here (bilm-tf: 1.0).
inline constexpr Setting kInitialAccumulator{"initial_accumulator_value", "initial_accumulator_value",
                                             "initial_accumulator_value", 0, 0, kNoLimit, false, false, false};
inline constexpr Setting kWarmupInit{"warmup_init", "warmup_init", "warmup_init", 0, 0, 1, false, false, true,
                                     nullptr, nullptr, nullptr, /*isBool=*/true};

/* The weight decay of a hand-written module whose lm.train leaves it out (or
   that has no lm.train): none, unlike a train block's PyTorch default above.
   Such modules are test inputs whose trained results predate this table. */
inline constexpr double kBareModuleWeightDecay = 0.0;

// --- learning-rate schedules (formulas in runtime/train/schedule.h) ---------------
inline constexpr Setting kWarmup{"warmup", "warmup", "warmup_steps", 0, 0, kNoLimit, false, false, true};
// The warmup as a share of the schedule's steps (HF's warmup_ratio: ceil(fraction x
// steps) warmup steps, resolved by lmrt run once --steps or --epochs is known);
// 0: the step count `warmup` instead. The two cannot both be given.
inline constexpr Setting kWarmupFraction{"warmup_fraction", "warmup_fraction", "warmup_fraction", 0, 0, 1, false,
                                         true, false, "0: off", "the share of the steps spent warming up"};
inline constexpr Setting kMinLr{"min_lr", "min_lr", "min_lr", 0, 0, kNoLimit, false, false, false,
                                nullptr, nullptr, &kLr};
// 0: decay over the run's --steps.
inline constexpr Setting kDecaySteps{"decay_steps", "decay_steps", "decay_steps", 0, 0, kNoLimit,
                                     false, false, true};
// WSD (warmup-stable-decay): MiniCPM's 20 % cooldown.
inline constexpr Setting kCooldown{"cooldown", "cooldown_fraction", "cooldown_fraction", 0.2, 0, 1,
                                   true, false, false, nullptr,
                                   "the fraction of the steps after warmup spent decaying"};

// --- the block's own settings ---------------------------------------------------
inline constexpr Setting kClipGradNorm{"clip_grad_norm", "clip_grad_norm", "clip_grad_norm", 0, 0, kNoLimit,
                                       false, false, false, "0: off"};
// Micro-batches averaged per optimizer step; beyond 2^20 a count is a typo, not a plan.
// Every gradient element clamped to [-c, c] as the optimizer reads it (after the
// norm's clipping), as torch.nn.utils.clip_grad_value_.
inline constexpr Setting kClipGradValue{"clip_grad_value", "clip_grad_value", "clip_grad_value", 0, 0, kNoLimit,
                                        false, false, false, "0: off"};
// How long lmrt run trains when given neither --steps nor --epochs: passes over
// an example dataset's records (a recipe's "3 epochs"); 0: one of the flags is needed.
inline constexpr Setting kEpochs{"epochs", "epochs", "epochs", 0, 0, 1000000, false, false, true,
                                 "0: lmrt run's --steps or --epochs decide",
                                 "the passes over the records lmrt run makes without --steps or --epochs"};
inline constexpr Setting kAccumulate{"accumulate", "accumulate", "accumulate", 1, 1, 1 << 20, false, false, true};

// --- fp16's dynamic loss scaling (docs/mixed-precision.md, "fp16"), DeepSpeed's rules ---
// The backward is seeded with the scale instead of 1; a step whose gradients are not
// finite is skipped. Only `precision = fp16` plans carry them (TrainConfig.loss_scale).
inline constexpr Setting kLossScale{"loss_scale", "loss_scale", "initial_scale", 65536, 0, kNoLimit, true, false,
                                    false, nullptr, "the starting loss scale"};
// Clean steps in a row after which the scale doubles.
inline constexpr Setting kLossScaleWindow{"loss_scale_window", "loss_scale_window", "growth_interval", 2000, 1,
                                          kNoLimit, false, false, true};
// Overflows in a row that halve the scale (a first overflow only counts, with 2).
inline constexpr Setting kHysteresis{"hysteresis", "hysteresis", "hysteresis", 2, 1, kNoLimit, false, false, true};
// The floor: an overflow at this scale stops the run (no silent training at scale 1).
inline constexpr Setting kMinLossScale{"min_loss_scale", "min_loss_scale", "min_scale", 1, 0, kNoLimit, true,
                                       false, false, nullptr, nullptr, &kLossScale};

/* Rematerialization (docs/remat.md): what the train step recomputes in the
   backward instead of keeping from the forward. A compile-time choice
   (-lm-remat), recorded in lm.train and in Plan.remat only when not the
   default, so plans compiled without it keep their bytes. */
inline constexpr const char *kDefaultRemat = "none";
/* `auto` chooses what to recompute so the predicted peak fits a memory budget. */
inline const std::vector<std::string> &rematPolicies() {
  static const std::vector<std::string> names = {"none", "full", "selective", "auto"};
  return names;
}
inline bool isRematPolicy(const std::string &name) {
  for (const std::string &n : rematPolicies())
    if (n == name) return true;
  return false;
}

/* Precision (docs/mixed-precision.md): `precision = bf16` has -lm-mixed-precision
   cast GEMM operands to bf16 (fp32 accumulation; everything else fp32); `fp16`
   to fp16, with the backward seeded by a dynamic loss scale (the train step's
   `loss_scale` input) so small gradients survive fp16's range. A
   compile-time choice, recorded in lm.train and in Plan.precision only when not
   the default, so fp32 plans keep their bytes. */
inline constexpr const char *kDefaultPrecision = "fp32";
inline const std::vector<std::string> &precisions() {
  static const std::vector<std::string> names = {"fp32", "bf16", "fp16"};
  return names;
}
inline bool isPrecision(const std::string &name) {
  for (const std::string &n : precisions())
    if (n == name) return true;
  return false;
}

/* The memory budget (docs/remat.md, "Budgets"): the train block's `memory_budget
   = "8 GiB"` and lmc's `--mem-budget 8GiB`. A compile-time bound on the plan's
   predicted peak memory: a plan that exceeds it is a compile error, and `remat =
   auto` recomputes until it fits. Stored in lm.train as bytes (i64), only when set. */
inline constexpr const char *kMemoryBudgetKeyword = "memory_budget";
inline constexpr const char *kMemoryBudgetUnits = "B, KiB, MiB, GiB, KB, MB or GB";

/* Parses a size such as "8 GiB", "8GiB", "1.5 GB" or "4096 B" into bytes: a
   positive number and one of kMemoryBudgetUnits (binary KiB = 1024, decimal
   KB = 1000), spaces allowed between them. False, with `error` saying what is
   wrong (without naming the setting: the caller names it), otherwise. */
inline bool parseByteSize(const std::string &text, int64_t &bytes, std::string &error) {
  size_t i = 0, n = text.size();
  auto skipSpace = [&] { while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i; };
  skipSpace();
  size_t numberStart = i;
  while (i < n && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.' || text[i] == '-' || text[i] == '+'))
    ++i;
  std::string number = text.substr(numberStart, i - numberStart);
  skipSpace();
  size_t unitStart = i;
  while (i < n && text[i] != ' ' && text[i] != '\t') ++i;
  std::string unit = text.substr(unitStart, i - unitStart);
  skipSpace();
  const std::string expected = "expected a size such as \"8 GiB\" (a positive number and a unit: " +
                               std::string(kMemoryBudgetUnits) + ")";
  if (text.find_first_not_of(" \t") == std::string::npos) {
    error = "is empty; " + expected;
    return false;
  }
  char *end = nullptr;
  double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || i != n || unit.empty()) {
    error = "'" + text + "' is not a size; " + expected;
    return false;
  }
  static const struct { const char *name; double scale; } units[] = {
      {"B", 1}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
  double scale = 0;
  for (const auto &u : units)
    if (unit == u.name) scale = u.scale;
  if (scale == 0) {
    error = "'" + text + "' has an unknown unit '" + unit + "'; " + expected;
    return false;
  }
  double total = value * scale;
  if (!(value > 0) || !std::isfinite(total) || total < 1) {
    error = "'" + text + "' must be positive; " + expected;
    return false;
  }
  if (total > 9.0e18) {
    error = "'" + text + "' is absurdly large";
    return false;
  }
  bytes = (int64_t)total;
  return true;
}

/* The device memory (docs/remat.md, "The device's memory"): lmc's `--device-memory`,
   the memory of the device the plan will run on, a size or a known GPU's name. It
   bounds the predicted peak as a memory budget does (the smaller of the two when both
   are given), so a plan that cannot fit the device fails in lmc, not when the device
   runs out. The known GPUs' figures are the total memory nvidia-smi reports (MiB);
   the CUDA context and the allocator's rounding take a little of it at run time. */
struct KnownDevice {
  const char *name;
  int64_t bytes;
};
inline constexpr KnownDevice kKnownDevices[] = {
    {"a100-40gb", int64_t(40960) << 20},
    {"a100-80gb", int64_t(81920) << 20},
    {"h100", int64_t(81559) << 20},
    {"h200", int64_t(143771) << 20},
};

/* The names of kKnownDevices, "a, b or c", for messages. */
inline std::string knownDeviceNames() {
  std::string names;
  const size_t n = sizeof(kKnownDevices) / sizeof(kKnownDevices[0]);
  for (size_t i = 0; i < n; ++i)
    names += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + kKnownDevices[i].name;
  return names;
}

/* The known device named `name`, else null. */
inline const KnownDevice *findKnownDevice(const std::string &name) {
  for (const KnownDevice &d : kKnownDevices)
    if (name == d.name) return &d;
  return nullptr;
}

/* Parses --device-memory: a known device's name (kKnownDevices) or a size
   (parseByteSize). False, with `error` saying what is wrong, otherwise. */
inline bool parseDeviceMemory(const std::string &text, int64_t &bytes, std::string &error) {
  if (const KnownDevice *d = findKnownDevice(text)) {
    bytes = d->bytes;
    return true;
  }
  if (!text.empty() && (text[0] < '0' || text[0] > '9') && text[0] != '.' && text[0] != ' ') {
    error = "'" + text + "' is neither a known device (" + knownDeviceNames() + ") nor a size such as \"80 GiB\"";
    return false;
  }
  return parseByteSize(text, bytes, error);
}

/* An optimizer or a schedule: its name and the settings it takes, in the order
   messages list their keywords. */
struct Kind {
  const char *name;
  std::vector<const Setting *> takes;
  // Where this kind's default differs from the setting's own (LAMB's eps = 1e-6).
  std::vector<std::pair<const Setting *, double>> defaults = {};
};

/* The default of `s` in `kind`: the kind's own where it has one, else the setting's. */
inline double defaultIn(const Kind &kind, const Setting &s) {
  for (const auto &[setting, value] : kind.defaults)
    if (setting == &s) return value;
  return s.defaultValue;
}

inline constexpr const char *kDefaultOptimizer = "adamw";
inline constexpr const char *kDefaultSchedule = "constant";

inline const std::vector<Kind> &optimizers() {
  // Defaults: PyTorch's AdamW and SGD; LAMB as ALBERT trained with it (eps 1e-6);
  // Lion as lion-pytorch (betas 0.9, 0.99; no decay); Adafactor as HF transformers';
  // Adagrad as torch.optim.Adagrad (lr 1e-2, eps 1e-10, no decay, accumulator from 0).
  static const std::vector<Kind> kinds = {
      {"adamw", {&kLr, &kBeta1, &kBeta2, &kEps, &kWeightDecay}},
      {"sgd", {&kLr, &kMomentum, &kNesterov, &kWeightDecay}, {{&kWeightDecay, 0.0}}},
      {"lamb", {&kLr, &kBeta1, &kBeta2, &kEps, &kWeightDecay}, {{&kEps, 1e-6}}},
      {"lion", {&kLr, &kBeta1, &kBeta2, &kWeightDecay}, {{&kLr, 1e-4}, {&kBeta2, 0.99}, {&kWeightDecay, 0.0}}},
      {"adafactor",
       {&kLr, &kEps, &kEps2, &kClipThreshold, &kDecayRate, &kWeightDecay, &kRelativeStep, &kScaleParameter,
        &kWarmupInit},
       {{&kEps, 1e-30}, {&kWeightDecay, 0.0}}},
      {"adagrad", {&kLr, &kEps, &kWeightDecay, &kInitialAccumulator},
       {{&kLr, 1e-2}, {&kEps, 1e-10}, {&kWeightDecay, 0.0}}},
  };
  return kinds;
}

inline const std::vector<Kind> &schedules() {
  static const std::vector<Kind> kinds = {
      {"constant", {&kWarmup, &kWarmupFraction}},
      {"linear", {&kWarmup, &kMinLr, &kDecaySteps, &kWarmupFraction}},
      {"cosine", {&kWarmup, &kMinLr, &kDecaySteps, &kWarmupFraction}},
      {"wsd", {&kWarmup, &kMinLr, &kDecaySteps, &kCooldown, &kWarmupFraction}},
  };
  return kinds;
}

/* The settings of the train block outside optimizer and schedule. */
inline const std::vector<const Setting *> &blockSettings() {
  static const std::vector<const Setting *> list = {&kClipGradNorm, &kClipGradValue, &kAccumulate,
                                                    &kLossScale,    &kLossScaleWindow, &kHysteresis,
                                                    &kMinLossScale, &kEpochs};
  return list;
}

/* Every setting once: the optimizers', the schedules', the block's. */
inline const std::vector<const Setting *> &allSettings() {
  static const std::vector<const Setting *> list = {&kLr,     &kBeta1,      &kBeta2,    &kEps,
                                                    &kWeightDecay, &kWarmup, &kMinLr, &kDecaySteps,
                                                    &kCooldown,    &kClipGradNorm, &kAccumulate,
                                                    &kMomentum, &kNesterov, &kEps2, &kClipThreshold,
                                                    &kDecayRate, &kRelativeStep, &kScaleParameter,
                                                    &kWarmupInit, &kClipGradValue, &kLossScale,
                                                    &kLossScaleWindow, &kHysteresis, &kMinLossScale,
                                                    &kWarmupFraction, &kEpochs, &kInitialAccumulator};
  return list;
}

/* The warmup steps of a schedule of `steps` steps: `warmup`, or with a
   fraction > 0 ceil(fraction x steps), as HF's get_warmup_steps. */
inline int64_t warmupSteps(int64_t warmup, double fraction, int64_t steps) {
  return fraction > 0 ? (int64_t)std::ceil(fraction * (double)steps) : warmup;
}

inline const Kind *findKind(const std::vector<Kind> &kinds, const std::string &name) {
  for (const Kind &k : kinds)
    if (name == k.name) return &k;
  return nullptr;
}
inline const Kind *findOptimizer(const std::string &name) { return findKind(optimizers(), name); }
inline const Kind *findSchedule(const std::string &name) { return findKind(schedules(), name); }

inline bool takes(const Kind &kind, const Setting &s) {
  for (const Setting *t : kind.takes)
    if (t == &s) return true;
  return false;
}

/* "constant, linear, cosine or wsd"; quoted: "\"constant\", ... or \"wsd\"". */
inline std::string kindList(const std::vector<Kind> &kinds, bool quoted) {
  std::string s;
  for (size_t i = 0; i < kinds.size(); ++i) {
    std::string name = quoted ? "\"" + std::string(kinds[i].name) + "\"" : kinds[i].name;
    s += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + name;
  }
  return s;
}

/* The keywords a kind takes, each once: "lr, betas, eps, weight_decay". */
inline std::string keywordList(const Kind &kind) {
  std::string s;
  const char *last = nullptr;
  for (const Setting *t : kind.takes) {
    if (last && std::string(last) == t->keyword) continue;
    s += (s.empty() ? "" : ", ") + std::string(t->keyword);
    last = t->keyword;
  }
  return s;
}

/* A value as messages show it: an integer for a whole-number setting, else %g. */
inline std::string format(const Setting &s, double v) {
  char buf[40];
  if (s.isBool && (v == 0 || v == 1)) return v == 1 ? "true" : "false";
  if (s.isInt && std::isfinite(v))
    std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/* Whether `v` keeps the bounds of `s`; `atMost` is the value of s.atMost where
   known. NaN fails every comparison, so it never passes. */
inline bool within(const Setting &s, double v, double atMost = kNoLimit) {
  if (!std::isfinite(v)) return false;
  if (!(s.loOpen ? v > s.lo : v >= s.lo)) return false;
  if (!(s.hiOpen ? v < s.hi : v <= s.hi)) return false;
  if (s.atMost && !(v <= atMost)) return false;
  return !s.isInt || v == std::floor(v);
}

/* What `within` asks, as messages say it: "must be in [0, 1)", "must be finite and
   > 0", "must be >= 0", "must be in [0, lr = 0.001]", "must be finite and >= 0 (0: off)". */
inline std::string rule(const Setting &s, double atMost = kNoLimit) {
  if (s.isBool) return "must be true or false";
  std::string r;
  const char *open = s.loOpen ? "(" : "[";
  if (s.atMost && std::isfinite(atMost))
    r = "must be in " + std::string(open) + format(s, s.lo) + ", " + s.atMost->field + " = " +
        format(*s.atMost, atMost) + "]";
  else if (s.hi == kNoLimit)
    r = std::string(s.isInt ? "must be " : "must be finite and ") + (s.loOpen ? "> " : ">= ") + format(s, s.lo);
  else
    r = "must be in " + std::string(open) + format(s, s.lo) + ", " + format(s, s.hi) + (s.hiOpen ? ")" : "]");
  if (s.note) r += " (" + std::string(s.note) + ")";
  return r;
}

}  // namespace lmrt::settings
