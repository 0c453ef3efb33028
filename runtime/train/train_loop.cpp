/* Implements: the training loop of `lmrt run` (see train_loop.h). */
#include "runtime/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sys/resource.h>

#include "runtime/lmrt/session.h"
#include "runtime/lmrt/weights.h"
#include "runtime/train/adamw.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/grad_clip.h"
#include "runtime/train/metrics.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/program_io.h"
#include "runtime/train/schedule.h"

namespace lmrt {

std::string defaultWeightsPath(const std::string &planPath) {
  const std::string ext = ".plan";
  std::string base = planPath;
  if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".safetensors";
}

namespace {

using Clock = std::chrono::steady_clock;

std::vector<ParamView> paramViews(Session &s) {
  std::vector<ParamView> v;
  for (ParamState &p : s.params())
    v.push_back({p.type.dtype, p.value.data(), p.grad.data(), p.type.numel(), p.weightDecay});
  return v;
}

AdamWConfig adamwConfig(const plan::Optimizer &o) {
  if (o.kind() != "adamw")
    fail("plan optimizer '%s' is not supported by lmrt run (it implements \"adamw\")",
         o.kind().c_str());
  AdamWConfig c;
  c.beta1 = o.beta1();
  c.beta2 = o.beta2();
  c.eps = o.eps();
  c.weightDecay = o.weight_decay();
  return c;
}

/* Mean "eval" loss over the fixed validation batches 0..n-1. */
double evaluate(Session &s, DataFeed &data, int64_t batches) {
  double sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    s.run("eval", data.valInputs(i));
    sum += scalarValue(s.output("eval", "loss"), "eval loss");
  }
  return sum / double(batches);
}

int digits(int64_t n) { return (int)std::to_string(n).size(); }

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/* The loop's own phases, summed over the profiled steps. */
struct PhaseTimes {
  double data = 0, trainStep = 0, norm = 0, adamw = 0, total = 0;
  int64_t steps = 0;
};

/* The --profile report: kernels of train_step by time, then the loop phases; shares are
   of the whole step (steps 2..N: step 1 pays for first touches of the arena and moments). */
void printProfile(FILE *log, const OpProfile &ops, const PhaseTimes &ph, int64_t planFlops) {
  if (ph.steps == 0) {
    std::fprintf(log, "profile: needs at least 2 steps (the first is not timed)\n");
    return;
  }
  const double n = double(ph.steps), step = ph.total / n;
  std::fprintf(log, "profile: %lld steps, %.2f ms/step, plan %.3f GFLOP/step, %.1f GFLOP/s\n",
               (long long)ph.steps, step * 1e3, planFlops * 1e-9, planFlops * 1e-9 / step);
  std::fprintf(log, "  %-40s %7s %10s %7s %9s\n", "train_step kernel", "calls", "ms/step", "share", "GFLOP/s");
  std::vector<std::pair<std::string, OpProfile::Entry>> rows;
  for (const auto &[key, e] : ops.ops)
    if (key.rfind("train_step/", 0) == 0) rows.push_back({key.substr(11), e});
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  for (const auto &[name, e] : rows) {
    std::fprintf(log, "  %-40s %7lld %10.3f %6.1f%% ", name.c_str(), (long long)(e.calls / ph.steps),
                 e.seconds / n * 1e3, 100 * e.seconds / ph.total);
    if (e.flops > 0)
      std::fprintf(log, "%9.1f\n", e.flops * 1e-9 / e.seconds);
    else
      std::fprintf(log, "%9s\n", "-");
  }
  double kernels = 0;
  for (const auto &r : rows) kernels += r.second.seconds;
  const std::pair<const char *, double> phases[] = {
      {"train_step (all kernels)", kernels},
      {"train_step (outside kernels)", ph.trainStep - kernels},
      {"data (batch)", ph.data},
      {"gradient norm", ph.norm},
      {"clipping + adamw (one pass)", ph.adamw},
      {"other (loss read, bookkeeping)", ph.total - ph.trainStep - ph.data - ph.norm - ph.adamw}};
  std::fprintf(log, "  %-40s %7s %10s %7s\n", "phase", "", "ms/step", "share");
  for (const auto &[name, sec] : phases)
    std::fprintf(log, "  %-40s %7s %10.3f %6.1f%%\n", name, "", sec / n * 1e3, 100 * sec / ph.total);
}

}  // namespace

TrainResult train(Session &s, const TrainOptions &o, FILE *log) {
  if (o.steps < 1) fail("--steps must be at least 1 (got %lld)", (long long)o.steps);
  if (o.evalInterval < 0) fail("--eval-interval must be >= 0 (got %lld)", (long long)o.evalInterval);
  if (o.evalBatches < 0) fail("--eval-batches must be >= 0 (got %lld)", (long long)o.evalBatches);
  const plan::Plan &plan = s.plan();
  const plan::TrainConfig &tc = plan.train();
  AdamW adamw(adamwConfig(tc.optimizer()));
  LrSchedule sched = makeSchedule(tc.schedule().kind(), tc.optimizer().lr(), tc.schedule().min_lr(),
                                  tc.schedule().warmup_steps(), tc.schedule().decay_steps(), o.steps);
  bool evalOn = o.evalBatches > 0;  // validatePlan guarantees an "eval" program
  DataFeed data(s, o.dataDir, o.seed, evalOn);  // the plan's batch transform
  if (evalOn) data.checkValidation();
  MetricsWriter metrics(o.metricsPath);
  std::unique_ptr<ParityDump> dump;
  if (!o.dumpDir.empty()) dump = std::make_unique<ParityDump>(o.dumpDir);
  std::string outPath = o.outPath.empty() ? defaultWeightsPath(o.planPath) : o.outPath;

  s.initParams(o.seed);
  if (dump) dump->writeInit(s);
  std::vector<ParamView> views = paramViews(s);
  const double tokensPerStep = data.tokensPerStep();
  const int w = digits(o.steps);
  TrainResult result;
  result.lastValLoss = NAN;

  OpProfile ops;
  PhaseTimes phases;
  for (int64_t step = 1; step <= o.steps; ++step) {
    const bool profiled = o.profile && step > 1;
    s.setProfile(profiled ? &ops : nullptr);
    auto t0 = Clock::now();
    const std::map<std::string, TensorRef> &inputs = data.trainInputs(step - 1);
    auto t1 = Clock::now();
    s.run("train_step", inputs);
    auto t2 = Clock::now();
    s.setProfile(nullptr);
    TensorRef lossRef = s.output("train_step", "loss");
    double loss = scalarValue(lossRef, "train_step loss");
    auto t3 = Clock::now();
    double norm = globalGradNorm(views);
    auto t4 = Clock::now();
    if (dump) dump->captureGradients(s);
    if (!std::isfinite(loss) || !std::isfinite(norm))
      fail("step %lld: loss %g, gradient norm %g; training diverged (try a lower learning rate)",
           (long long)step, loss, norm);
    auto t5 = Clock::now();
    double clip = clipScale(norm, tc.clip_grad_norm());
    double lr = learningRate(sched, step - 1);
    adamw.step(views, lr, clip);  // clipping happens inside AdamW's pass
    double seconds = secondsSince(t0);
    if (profiled) {
      phases.data += std::chrono::duration<double>(t1 - t0).count();
      phases.trainStep += std::chrono::duration<double>(t2 - t1).count();
      phases.norm += std::chrono::duration<double>(t4 - t3).count();
      phases.adamw += secondsSince(t5);
      phases.total += seconds;
      phases.steps += 1;
    }
    if (dump) dump->writeStep(step, s, data.dumpInputs(), lossRef, lr);

    StepMetrics m;
    m.step = step;
    m.loss = loss;
    m.lr = lr;
    m.gradNorm = norm;
    m.tokensPerS = tokensPerStep / std::max(seconds, 1e-9);
    std::fprintf(log, "step %*lld/%lld | loss %.4f | lr %.2e | grad_norm %.4f | %.0f tok/s\n", w,
                 (long long)step, (long long)o.steps, loss, lr, norm, m.tokensPerS);
    if (evalOn && ((o.evalInterval > 0 && step % o.evalInterval == 0) || step == o.steps)) {
      m.hasValLoss = true;
      m.valLoss = evaluate(s, data, o.evalBatches);
      result.lastValLoss = m.valLoss;
      std::fprintf(log, "step %*lld | val_loss %.4f\n", w, (long long)step, m.valLoss);
    }
    std::fflush(log);
    metrics.write(m);
    result.lastLoss = loss;
  }

  if (o.profile) printProfile(log, ops, phases, plan.flops_per_step());
  saveWeights(s, outPath);
  result.weightsPath = outPath;
  std::fprintf(log, "wrote %s\n", outPath.c_str());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(log, "memory: peak RSS %lld bytes, plan predicted %lld bytes\n",
               (long long)ru.ru_maxrss * 1024, (long long)plan.predicted_peak_bytes());
  std::fflush(log);
  return result;
}

}  // namespace lmrt
