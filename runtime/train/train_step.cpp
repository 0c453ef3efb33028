/* Implements: train_step.h. */
#include "runtime/train/train_step.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "base/format.h"
#include "contract/contract.h"
#include "runtime/data/token_source.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/distributed.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/program_io.h"
#include "runtime/train/run_setup.h"
#include "runtime/train/signals.h"

namespace lmrt {
namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

/* LMRT_TEST_OVERFLOW_STEPS=3,7: those steps run with an infinite loss scale, so
   every gradient overflows as a too-large scale makes them overflow in fp16 (the
   tests of the loss scaler's skips, test/E2E/fp16-loss-scale.test). */
static std::set<int64_t> overflowTestSteps() {
  std::set<int64_t> steps;
  const char *env = std::getenv("LMRT_TEST_OVERFLOW_STEPS");
  if (!env || !*env) return steps;
  std::string s = env;
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1)
      fail("LMRT_TEST_OVERFLOW_STEPS: '%s' is not a list of steps >= 1 (e.g. 3,7)", env);
    steps.insert(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return steps;
}

TrainStep::TrainStep(Session &session, DataFeed &data, const RunSetup &run, const TrainOptions &options, FILE *log)
    : session_(session), data_(data), run_(run), options_(options), log_(log),
      maxNorm_(session.plan().train().clip_grad_norm()) {
  if (!session.plan().train().has_loss_scale()) return;
  const plan::LossScale &ls = session.plan().train().loss_scale();
  scaler_.emplace(LossScalerConfig{ls.initial_scale(), ls.growth_interval(), ls.hysteresis(), ls.min_scale()});
  poisonedSteps_ = overflowTestSteps();
}

const std::map<std::string, TensorRef> &TrainStep::withLossScale(const std::map<std::string, TensorRef> &inputs,
                                                                 int64_t step) {
  scaled_ = inputs;
  lossScaleValue_ = poisonedSteps_.count(step) ? INFINITY : (float)scaler_->scale();
  scaled_[contract::kLossScaleInput] = TensorRef{&lossScaleValue_, TensorType{DType::F32, {}}};
  return scaled_;
}

/* NaN attribution: which kernel first produced a non-finite value in this step.
   The step is run again from its start (the parameters are untouched until the
   update), each kernel's outputs checked, from micro-batch `firstMicro` on. */
std::string TrainStep::attributeNonFinite(int64_t step, int firstMicro) {
  const uint64_t rows = (uint64_t)data_.rows();
  NonFiniteValue v;
  session_.setNonFiniteCheck(&v);
  for (int micro = firstMicro; micro < run_.accumulate && !v.found; ++micro)
    session_.run("train_step", data_.trainInputs(step - 1, ((uint64_t)micro * run_.ranks + run_.rank) * rows));
  session_.setNonFiniteCheck(nullptr);
  // (fp16 plans never get here: an overflow is the loss scaler's to handle.)
  if (!v.found)
    return "re-running the step with every kernel's outputs checked found no non-finite value (the "
           "gradient norm overflowed)";
  std::string op = "op '" + v.op + "'" + (v.loc.empty() ? "" : " at " + v.loc) + " (" + v.program + " step " +
                   std::to_string(v.step) + ")";
  if (v.tensor.rfind("parameter", 0) == 0)
    return "the " + v.tensor + " holds " + formatG(v.value) + " at element " + std::to_string(v.element) +
           " (an earlier update made it non-finite), first read by " + op;
  return "the first non-finite value (" + formatG(v.value) + " at element " + std::to_string(v.element) + " of " +
         v.tensor + ") comes from " + op;
}

StepOutcome TrainStep::run(int64_t step, int64_t &nanSkips, OpProfile *profile, ParityDump *dump,
                           const std::string &staleData) {
  Backend &backend = session_.backend();
  const uint64_t rows = (uint64_t)data_.rows();
  StepOutcome r;
  int badMicro = -1;  // the micro-batch whose loss was not finite
  for (int micro = 0; micro < run_.accumulate; ++micro) {
    auto m0 = Clock::now();
    const std::map<std::string, TensorRef> *inputs = nullptr;
    std::string dataError = micro == 0 ? staleData : "";
    if (dataError.empty()) try {
        guardBusErrors("data '" + data_.train().path() + "'", [&] {
          inputs = &data_.trainInputs(step - 1, ((uint64_t)micro * run_.ranks + run_.rank) * rows);
        });
      } catch (const Error &e) {
        dataError = e.what();
      }
    // Before train_step's collectives: a rank whose data failed stops every rank here.
    agreeOnData(RankInfo{run_.rank, run_.ranks}, dataError);
    auto m1 = Clock::now();
    session_.setProfile(profile);
    session_.run("train_step", scaler_ ? withLossScale(*inputs, step) : *inputs);
    session_.setProfile(nullptr);
    auto m2 = Clock::now();
    r.dataSeconds += secondsBetween(m0, m1);
    r.runSeconds += secondsBetween(m1, m2);
    r.lossRef = session_.output("train_step", "loss");
    double l = scalarValue(r.lossRef, "train_step loss");
    r.loss += l;
    if (!std::isfinite(l)) {
      badMicro = micro;
      break;
    }
    if (run_.accumulate > 1) backend.accumulateGradients(micro, (int)run_.accumulate);
  }
  r.loss /= double(run_.accumulate);
  auto t3 = Clock::now();
  r.gradNorm = badMicro >= 0 ? NAN : backend.gradientNorm();
  auto t4 = Clock::now();
  r.normSeconds = secondsBetween(t3, t4);
  if (dump) dump->captureGradients(session_, scaler_ ? scaler_->scale() : 1.0);
  r.lr = learningRate(run_.schedule, step - 1);
  if (scaler_) {
    // fp16: the gradients are the loss scale times the true ones. A non-finite one
    // (or loss) is an overflow: the step is skipped and the scaler decides the
    // next scale (or stops the run at its floor); otherwise the update divides
    // the scale out, together with clipping's factor, as it reads each gradient.
    const double scale = scaler_->scale();
    const bool overflow = badMicro >= 0 || !std::isfinite(r.gradNorm);
    r.lossScale = scale;
    r.gradNorm /= scale;
    std::string what = scaler_->update(overflow, step);
    if (!what.empty()) std::fprintf(log_, "step %lld: %s\n", (long long)step, what.c_str());
    r.skipped = overflow;
    auto t5 = Clock::now();
    if (!overflow) backend.optimizerStep(r.lr, clipScale(r.gradNorm, maxNorm_) / scale);
    r.updateSeconds = secondsBetween(t5, Clock::now());
    return r;
  }
  if (!std::isfinite(r.loss) || !std::isfinite(r.gradNorm)) {
    std::string why = "step " + std::to_string(step) + ": loss " + formatG(r.loss) + ", gradient norm " +
                      formatG(r.gradNorm) +
                      (badMicro >= 0 && run_.accumulate > 1 ? " (micro-batch " + std::to_string(badMicro) + ")" : "") +
                      "; " + attributeNonFinite(step, std::max(badMicro, 0));
    if (!options_.skipNonFinite)
      fail("%s; training diverged (try a lower learning rate, or --on-nan skip)", why.c_str());
    r.skipped = true;
    ++nanSkips;
    std::fprintf(log_, "%s; step skipped (--on-nan skip, %lld so far)\n", why.c_str(), (long long)nanSkips);
  }
  auto t5 = Clock::now();
  if (!r.skipped) backend.optimizerStep(r.lr, clipScale(r.gradNorm, maxNorm_));  // clipping folded into the update
  r.updateSeconds = secondsBetween(t5, Clock::now());
  return r;
}

}  // namespace lmrt
