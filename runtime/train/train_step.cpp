/* Implements: train_step.h. */
#include "runtime/train/train_step.h"

#include <chrono>
#include <cmath>

#include "runtime/data/token_source.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/program_io.h"
#include "runtime/train/run_setup.h"
#include "runtime/train/signals.h"

namespace lmrt {
namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string fmtG(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

TrainStep::TrainStep(Session &session, DataFeed &data, const RunSetup &run, const TrainOptions &options, FILE *log)
    : session_(session), data_(data), run_(run), options_(options), log_(log),
      maxNorm_(session.plan().train().clip_grad_norm()) {}

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
  if (!v.found)
    return "re-running the step with every kernel's outputs checked found no non-finite value (the "
           "gradient norm overflowed)";
  std::string op = "op '" + v.op + "'" + (v.loc.empty() ? "" : " at " + v.loc) + " (" + v.program + " step " +
                   std::to_string(v.step) + ")";
  if (v.tensor.rfind("parameter", 0) == 0)
    return "the " + v.tensor + " holds " + fmtG(v.value) + " at element " + std::to_string(v.element) +
           " (an earlier update made it non-finite), first read by " + op;
  return "the first non-finite value (" + fmtG(v.value) + " at element " + std::to_string(v.element) + " of " +
         v.tensor + ") comes from " + op;
}

StepOutcome TrainStep::run(int64_t step, int64_t &nanSkips, OpProfile *profile, ParityDump *dump) {
  Backend &backend = session_.backend();
  const uint64_t rows = (uint64_t)data_.rows();
  StepOutcome r;
  int badMicro = -1;  // the micro-batch whose loss was not finite
  for (int micro = 0; micro < run_.accumulate; ++micro) {
    auto m0 = Clock::now();
    const std::map<std::string, TensorRef> *inputs = nullptr;
    try {
      guardBusErrors("data '" + data_.train().path() + "'",
                     [&] { inputs = &data_.trainInputs(step - 1, ((uint64_t)micro * run_.ranks + run_.rank) * rows); });
    } catch (const Error &e) {
      throw DataFailure(e.what());
    }
    auto m1 = Clock::now();
    session_.setProfile(profile);
    session_.run("train_step", *inputs);
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
  if (dump) dump->captureGradients(session_);
  r.lr = learningRate(run_.schedule, step - 1);
  if (!std::isfinite(r.loss) || !std::isfinite(r.gradNorm)) {
    std::string why = "step " + std::to_string(step) + ": loss " + fmtG(r.loss) + ", gradient norm " +
                      fmtG(r.gradNorm) +
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
