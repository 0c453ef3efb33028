/* Implements: `lmrt run --device cuda` (backend.h): the training loop of
   runtime/train/train_loop.h with the programs, the gradient norm, clipping
   and AdamW on the GPU. Per step: the batch (filled on the host into one of two
   pinned buffers) is copied in on the stream, train_step, the norm and AdamW
   are enqueued, the loss and the norm are copied back, and while the GPU works
   the host fills the next batch into the other pinned buffer; then one wait.
   Data order, schedule, metrics lines, evaluation and the weights file are
   those of the CPU loop. */
#include <chrono>
#include <cmath>
#include <memory>

#include "runtime/cuda/backend.h"
#include "runtime/cuda/session.h"
#include "runtime/data/batches.h"
#include "runtime/weights/weights.h"
#include "runtime/train/metrics.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/program_io.h"
#include "runtime/train/schedule.h"
#include "runtime/train/eta.h"
#include "runtime/train/tensorboard.h"

namespace lmrt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

/* The token input of a program, checked as the CPU loop checks it. */
struct DataShape {
  std::string inputName;
  TensorType type;  // i32[rows, seq + 1]
  int64_t vocab;
};

DataShape dataShape(const Session &s) {
  const plan::DataConfig &dc = s.plan().data();
  if (dc.transform() != "causal")
    fail("plan data transform '%s' is not supported by lmrt run (it implements \"causal\")", dc.transform().c_str());
  const plan::Input &in = tokenInput(findProgram(s, "train_step"));
  DataShape d{in.name(), inputType(in), in.vocab() > 0 ? in.vocab() : dc.vocab()};
  if (d.vocab <= 0) fail("plan declares no vocabulary for input '%s'", in.name().c_str());
  return d;
}

/* Reads a scalar the GPU wrote to pinned memory, in the plan's precision. */
double scalarAt(const void *p, DType t) { return t == DType::F64 ? *static_cast<const double *>(p) : *static_cast<const float *>(p); }

}  // namespace

TrainResult train(const TrainOptions &o, const DeviceOptions &dopt, FILE *log) {
  if (o.steps < 1) fail("--steps must be at least 1 (got %lld)", (long long)o.steps);
  if (o.evalInterval < 0) fail("--eval-interval must be >= 0 (got %lld)", (long long)o.evalInterval);
  if (o.evalBatches < 0) fail("--eval-batches must be >= 0 (got %lld)", (long long)o.evalBatches);
  if (o.profile) fail("--profile times the CPU kernels and is not available with --device cuda (use nsys)");
  // The device first: a machine without a GPU says so before anything else is read.
  DeviceInfo dev = openDevice(dopt.device);
  std::unique_ptr<Session> s = Session::load(o.planPath, /*cpuKernels=*/false);
  const plan::Plan &plan = s->plan();
  DataShape shape = dataShape(*s);
  const plan::TrainConfig &tc = plan.train();
  if (tc.optimizer().kind() != "adamw")
    fail("plan optimizer '%s' is not supported by lmrt run (it implements \"adamw\")", tc.optimizer().kind().c_str());
  LrSchedule sched = makeSchedule(tc.schedule().kind(), tc.optimizer().lr(), tc.schedule().min_lr(),
                                  tc.schedule().warmup_steps(), tc.schedule().decay_steps(), o.steps,
                                  tc.schedule().kind() == "wsd" ? tc.schedule().cooldown_fraction() : 0.2);
  // Gradient accumulation is the CPU loop's (runtime/train/train_loop.cpp) for now.
  if (o.accumulate != 1 && tc.accumulate() > 1)
    fail("the plan accumulates %lld micro-batches per step, which --device cuda does not do yet; "
         "run it on the CPU, or pass --accumulate 1", (long long)tc.accumulate());
  const bool evalOn = o.evalBatches > 0;
  if (evalOn && inputType(tokenInput(findProgram(*s, "eval"))).shape != shape.type.shape)
    fail("eval input differs from train_step input %s", shape.type.str().c_str());
  CausalBatcher data(o.dataDir, shape.type.shape[0], shape.type.shape[1], o.seed);
  data.checkVocab(shape.vocab);
  std::fprintf(log, "%s\n", data.describe().c_str());
  if (evalOn) data.checkValidationWindow();
  MetricsWriter metrics(o.metricsPath);
  TensorBoardWriter tensorboard(o.tensorboardDir);
  std::unique_ptr<ParityDump> dump;
  if (!o.dumpDir.empty()) dump = std::make_unique<ParityDump>(o.dumpDir);
  const std::string outPath = o.outPath.empty() ? defaultWeightsPath(o.planPath) : o.outPath;

  s->initParams(o.seed);  // on the host, so a seed gives the CPU run's initial weights
  if (dump) dump->writeInit(*s);
  CudaSession cs(*s, o.planPath, dopt, dev);
  cs.uploadParams();
  std::fprintf(log, "device: %s%s\n", dev.str().c_str(), dopt.tf32 ? ", TF32 GEMMs" : "");

  const size_t batchBytes = (size_t)shape.type.bytes();
  PinnedBuffer batch[2] = {PinnedBuffer(batchBytes, "a training batch"), PinnedBuffer(batchBytes, "a training batch")};
  PinnedBuffer evalBatch(batchBytes, "a validation batch"), result(64, "the step's loss and norm");
  double *res = static_cast<double *>(result.get());  // [0]: loss (plan precision), [1..2]: norm, factor
  const DevTensor trainIn = cs.input("train_step", shape.inputName);
  const DevTensor loss = cs.output("train_step", "loss");
  const cudaStream_t stream = cs.stream();
  const double tokensPerStep = double(shape.type.shape[0]) * double(shape.type.shape[1] - 1);
  const int w = (int)std::to_string(o.steps).size();
  TrainResult out;
  out.lastValLoss = NAN;

  auto evaluate = [&]() {
    const DevTensor in = cs.input("eval", shape.inputName), evalLoss = cs.output("eval", "loss");
    double sum = 0;
    for (int64_t i = 0; i < o.evalBatches; ++i) {
      data.valBatch(i, static_cast<int32_t *>(evalBatch.get()));
      CUDA_CHECK(cudaMemcpyAsync(in.data, evalBatch.get(), batchBytes, cudaMemcpyHostToDevice, stream));
      cs.run("eval");
      CUDA_CHECK(cudaMemcpyAsync(res, evalLoss.data, (size_t)evalLoss.type.bytes(), cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      sum += scalarAt(res, evalLoss.type.dtype);
    }
    return sum / double(o.evalBatches);
  };

  int cur = 0;
  data.trainBatch(0, static_cast<int32_t *>(batch[cur].get()));
  const auto loopStart = Clock::now();
  for (int64_t step = 1; step <= o.steps; ++step) {
    auto t0 = Clock::now();
    const double lr = learningRate(sched, step - 1);
    CUDA_CHECK(cudaMemcpyAsync(trainIn.data, batch[cur].get(), batchBytes, cudaMemcpyHostToDevice, stream));
    cs.run("train_step");
    cs.optimizerStep(step, lr, tc.clip_grad_norm());
    CUDA_CHECK(cudaMemcpyAsync(res, loss.data, (size_t)loss.type.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(res + 1, cs.normResult(), 2 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    // Overlap: the next batch is cut on the host while the GPU runs this step.
    if (step < o.steps) data.trainBatch(step, static_cast<int32_t *>(batch[cur ^ 1].get()));
    try {
      CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (const Error &e) {
      throw Error("step " + std::to_string(step) + ": " + e.what() +
                  " (kernels run asynchronously: rerun with LMRT_CUDA_SYNC=1 to name the plan step that failed)");
    }
    const double lossV = scalarAt(res, loss.type.dtype), norm = res[1];
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dump) {
      cs.downloadParams(/*grads=*/true);
      dump->captureGradients(*s);
      TensorRef tokens{batch[cur].get(), shape.type}, lossRef{res, loss.type};
      dump->writeStep(step, *s, {{"tokens", tokens}}, lossRef, lr);
    }
    if (!std::isfinite(lossV) || !std::isfinite(norm))
      fail("step %lld: loss %g, gradient norm %g; training diverged (try a lower learning rate)", (long long)step,
           lossV, norm);
    StepMetrics m;
    m.step = step;
    m.loss = lossV;
    m.lr = lr;
    m.gradNorm = norm;
    m.tokensPerS = tokensPerStep / std::max(seconds, 1e-9);
    std::fprintf(log, "step %*lld/%lld | loss %.4f | lr %.2e | grad_norm %.4f | %.0f tok/s%s\n", w, (long long)step,
                 (long long)o.steps, lossV, lr, norm, m.tokensPerS,
                 progressTail(plan.flops_per_step(), seconds,
                              std::chrono::duration<double>(Clock::now() - loopStart).count(), step, o.steps)
                     .c_str());
    if (evalOn && ((o.evalInterval > 0 && step % o.evalInterval == 0) || step == o.steps)) {
      m.hasValLoss = true;
      m.valLoss = evaluate();
      out.lastValLoss = m.valLoss;
      std::fprintf(log, "step %*lld | val_loss %.4f\n", w, (long long)step, m.valLoss);
    }
    std::fflush(log);
    metrics.write(m);
    tensorboard.write(m, plan.flops_per_step() * 1e-9 / std::max(seconds, 1e-9));
    out.lastLoss = lossV;
    cur ^= 1;
  }

  cs.downloadParams(/*grads=*/false);
  saveWeights(*s, outPath);
  out.weightsPath = outPath;
  std::fprintf(log, "wrote %s\n", outPath.c_str());
  std::fprintf(log, "memory: device %zu bytes allocated by lmrt (+ cuBLASLt's workspace), plan predicted %lld bytes\n",
               cs.deviceBytes(), (long long)plan.predicted_peak_bytes());
  std::fflush(log);
  return out;
}

}  // namespace lmrt::cuda
