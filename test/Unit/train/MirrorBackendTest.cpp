/* Tests the backend seam (runtime/exec/backend.h) with a backend of the tests' own,
   "mirror": a device simulated on the host. It keeps its own copy of the parameters,
   gradients and optimizer state (a second CPU session on the same plan) and moves
   them only when the interface says so, as the CUDA backend must. Everything above
   the seam (the training loop, checkpoints and resume, --init, accumulation, NaN
   handling, weights files, evaluation, sampling) then has to give exactly the CPU
   backend's bits: a missing upload or download, or a host copy read where the
   device's is meant, shows up as different weights. It also shows that a new backend
   is only a class and a provider: nothing in the loop knows it. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sys/stat.h>

#include "TempDir.h"
#include "runtime/data/shard.h"
#include "runtime/exec/backend_registry.h"
#include "runtime/exec/session.h"
#include "runtime/train/generate.h"
#include "runtime/train/train_loop.h"
#include "runtime/weights/weights.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;

namespace {

/* The device: a CPU session of its own. Its parameters are the device's; the
   host Session's copies change only through upload/download. */
class MirrorBackend final : public Backend {
public:
  MirrorBackend(Session &host) : host_(host) {
    plan::Plan copy = host.plan();
    device_ = Session::fromPlan(std::move(copy), host.origin() + " (mirror)");
  }
  std::string describe() const override { return "mirror"; }
  int64_t deviceBytes() const override { return 1; }
  void uploadParams() override {
    ++uploads;
    for (size_t i = 0; i < host_.params().size(); ++i) {
      device_->params()[i].value = host_.params()[i].value;
      std::fill(device_->params()[i].grad.begin(), device_->params()[i].grad.end(), 0);
    }
    device_->pushParams();  // the device's own backend learns of the new values
  }
  void downloadParams(bool grads) override {
    ++downloads;
    for (size_t i = 0; i < host_.params().size(); ++i) {
      host_.params()[i].value = device_->params()[i].value;
      if (grads) host_.params()[i].grad = device_->params()[i].grad;
    }
  }
  void run(const std::string &program, const std::map<std::string, TensorRef> &inputs) override {
    device_->run(program, inputs);
  }
  TensorRef output(const std::string &program, const std::string &name) override {
    // A host copy, as a device backend hands out.
    TensorRef t = device_->output(program, name);
    HostBytes &b = outputs_[program + "/" + name];
    b.assign(static_cast<const char *>(t.data), static_cast<const char *>(t.data) + t.type.bytes());
    return TensorRef{b.data(), t.type};
  }
  void accumulateGradients(int micro, int count) override { device().accumulateGradients(micro, count); }
  double gradientNorm() override { return device().gradientNorm(); }
  void optimizerStep(double lr, double gradScale) override { device().optimizerStep(lr, gradScale); }
  int64_t optimizerUpdates() const override { return device_->backend().optimizerUpdates(); }
  std::vector<NamedTensor> optimizerState() override {
    // Host copies: the checkpoint writer must not need the device's memory.
    std::vector<NamedTensor> state = device().optimizerState();
    staged_.clear();
    for (const NamedTensor &t : state) {
      staged_.emplace_back(static_cast<const char *>(t.second.data),
                           static_cast<const char *>(t.second.data) + t.second.type.bytes());
    }
    std::vector<NamedTensor> out;
    for (size_t i = 0; i < state.size(); ++i) out.push_back({state[i].first, TensorRef{staged_[i].data(), state[i].second.type}});
    return out;
  }
  std::vector<NamedTensor> beginRestore(int64_t updates) override {
    restoring_ = device().beginRestore(updates);
    staged_.clear();
    std::vector<NamedTensor> out;
    for (const NamedTensor &t : restoring_) {
      staged_.emplace_back((size_t)t.second.type.bytes(), 0);
    }
    for (size_t i = 0; i < restoring_.size(); ++i)
      out.push_back({restoring_[i].first, TensorRef{staged_[i].data(), restoring_[i].second.type}});
    return out;
  }
  void finishRestore() override {
    for (size_t i = 0; i < restoring_.size(); ++i)
      std::memcpy(restoring_[i].second.data, staged_[i].data(), staged_[i].size());
    device().finishRestore();
  }
  void setProfile(OpProfile *profile) override { device().setProfile(profile); }
  void setNonFiniteCheck(NonFiniteValue *check) override { device().setNonFiniteCheck(check); }
  void setStepObserver(StepObserver observer) override { device().setStepObserver(std::move(observer)); }

  static inline int uploads = 0, downloads = 0;

private:
  Backend &device() { return device_->backend(); }
  Session &host_;
  std::unique_ptr<Session> device_;
  std::map<std::string, HostBytes> outputs_;
  std::vector<HostBytes> staged_;
  std::vector<NamedTensor> restoring_;
};

void probe(const DeviceOptions &) {}
std::unique_ptr<Backend> create(Session &s, const DeviceOptions &) { return std::make_unique<MirrorBackend>(s); }
std::vector<std::string> list() { return {"mirror"}; }

const DeviceOptions kMirror = [] {
  registerBackend({"mirror", probe, create, list});
  DeviceOptions d;
  d.device = "mirror";
  return d;
}();

std::string makeByteData(const TempDir &d) {
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> train, val;
  for (int i = 0; i < 4000; ++i) train.push_back(i % 27 == 26 ? ' ' : 'a' + i % 27);
  for (int i = 0; i < 500; ++i) val.push_back(i % 27 == 26 ? ' ' : 'a' + i % 27);
  writeShard(dir + "/train.bin", train, {0});
  writeShard(dir + "/val.bin", val, {0});
  return dir;
}

std::unique_ptr<Session> byteSession(const DeviceOptions &device, double lr = 0.05) {
  test::TinyDims dims;
  dims.B = 4;
  dims.T = 16;
  dims.V = 256;
  dims.D = 16;
  plan::Plan p = test::tinyPlan(plan::F32, dims);
  p.mutable_train()->mutable_optimizer()->set_lr(lr);
  p.mutable_train()->mutable_schedule()->set_warmup_steps(5);
  p.mutable_train()->mutable_schedule()->set_min_lr(0.005);
  return Session::fromPlan(p, "tiny.plan", device);
}

TrainOptions options(const TempDir &d, const std::string &data, int64_t steps, const std::string &out) {
  TrainOptions o;
  o.planPath = d.file("tiny.plan");
  o.dataDir = data;
  o.steps = steps;
  o.seed = 3;
  o.evalInterval = 5;
  o.evalBatches = 2;
  o.outPath = d.file(out);
  return o;
}

/* Trains on `device`; returns the weights file's bytes and the log. */
std::pair<std::string, std::string> trainOn(const DeviceOptions &device, const TempDir &d, TrainOptions o,
                                            double lr = 0.05) {
  auto s = byteSession(device, lr);
  const std::string logPath = o.outPath + ".log";
  FILE *log = std::fopen(logPath.c_str(), "w");
  train(*s, o, log);
  std::fclose(log);
  return {readFile(o.outPath), readFile(logPath)};
}

/* The log without its timings (tok/s, ETA): what must be equal across backends. */
std::string losses(const std::string &log) {
  std::string out;
  size_t i = 0;
  while (i < log.size()) {
    size_t nl = log.find('\n', i);
    std::string line = log.substr(i, nl - i);
    size_t rate = line.find(" tok/s");
    if (rate != std::string::npos) line.resize(line.rfind('|', rate));  // "step 3/12 | loss ... | 1234 tok/s ..."
    if (line.rfind("step", 0) == 0) out += line + "\n";
    i = nl == std::string::npos ? log.size() : nl + 1;
  }
  return out;
}

}  // namespace

TEST(MirrorBackend, TrainsToTheCpuBackendsBits) {
  TempDir d;
  std::string data = makeByteData(d);
  MirrorBackend::uploads = MirrorBackend::downloads = 0;
  auto [cpu, cpuLog] = trainOn(DeviceOptions{}, d, options(d, data, 12, "cpu.safetensors"));
  auto [mirror, mirrorLog] = trainOn(kMirror, d, options(d, data, 12, "mirror.safetensors"));
  EXPECT_TRUE(cpu == mirror) << "the weights differ";
  EXPECT_EQ(losses(cpuLog), losses(mirrorLog));
  EXPECT_NE(mirrorLog.find("device: mirror"), std::string::npos);
  EXPECT_GT(MirrorBackend::uploads, 0);
  EXPECT_GT(MirrorBackend::downloads, 0);
}

TEST(MirrorBackend, AccumulationAndInitMatchTheCpu) {
  TempDir d;
  std::string data = makeByteData(d);
  trainOn(DeviceOptions{}, d, options(d, data, 4, "start.safetensors"));
  for (const DeviceOptions &dev : {DeviceOptions{}, kMirror}) {
    TrainOptions o = options(d, data, 6, dev.device + ".safetensors");
    o.accumulate = 3;
    o.initPath = d.file("start.safetensors");
    trainOn(dev, d, o);
  }
  EXPECT_TRUE(readFile(d.file("cpu.safetensors")) == readFile(d.file("mirror.safetensors"))) << "the weights differ";
}

/* A run stopped at step 4 with a checkpoint and resumed, on the mirror, gives the
   uninterrupted CPU run's weights: the checkpoint holds the device's parameters
   and moments, and the resume puts them back on the device. */
TEST(MirrorBackend, CheckpointAndResumeReproduceTheUninterruptedRun) {
  TempDir d;
  std::string data = makeByteData(d);
  auto [whole, log] = trainOn(DeviceOptions{}, d, options(d, data, 10, "whole.safetensors"));
  TrainOptions first = options(d, data, 10, "resumed.safetensors");
  first.checkpointDir = d.file("ck");
  first.stopAt = 4;
  trainOn(kMirror, d, first);
  TrainOptions rest = options(d, data, 0, "resumed.safetensors");
  rest.resumePath = d.file("ck");
  auto [resumed, log2] = trainOn(kMirror, d, rest);
  EXPECT_TRUE(whole == resumed) << "the resumed weights differ";
  // And a checkpoint written on the mirror resumes on the CPU backend alike.
  TrainOptions cpuRest = options(d, data, 0, "cpu-resumed.safetensors");
  cpuRest.resumePath = d.file("ck/step-00000004");
  cpuRest.checkpointDir = d.file("ck2");
  auto [cpuResumed, log3] = trainOn(DeviceOptions{}, d, cpuRest);
  EXPECT_TRUE(whole == cpuResumed) << "the weights resumed on the CPU differ";
}

/* With a learning rate that blows up, --on-nan skip names the op on the mirror as on
   the CPU (the attribution re-runs the step through the backend's checks). */
TEST(MirrorBackend, NanAttributionIsTheCpusToo) {
  TempDir d;
  std::string data = makeByteData(d);
  std::string logs[2];
  int k = 0;
  for (const DeviceOptions &dev : {DeviceOptions{}, kMirror}) {
    TrainOptions o = options(d, data, 8, dev.device + ".safetensors");
    o.skipNonFinite = true;
    o.evalBatches = 0;
    logs[k++] = losses(trainOn(dev, d, o, 1e30).second);
  }
  EXPECT_EQ(logs[0], logs[1]);
}

TEST(MirrorBackend, WeightsAndGenerationGoThroughTheDevice) {
  TempDir d;
  std::string data = makeByteData(d);
  trainOn(DeviceOptions{}, d, options(d, data, 30, "w.safetensors"));
  std::string text[2];
  int k = 0;
  for (const DeviceOptions &dev : {DeviceOptions{}, kMirror}) {
    auto s = byteSession(dev);
    loadWeights(*s, d.file("w.safetensors"));
    SampleOptions so;
    so.prompt = "abc";
    so.tokens = 20;
    so.temperature = 0;
    so.kvCache = false;
    generate(*s, so, [&](unsigned char c) { text[k] += (char)c; return true; });
    saveWeights(*s, d.file("saved-" + dev.device + ".safetensors"));
    ++k;
  }
  EXPECT_EQ(text[0].size(), 20u);
  EXPECT_EQ(text[0], text[1]);
  EXPECT_TRUE(readFile(d.file("saved-cpu.safetensors")) == readFile(d.file("saved-mirror.safetensors")))
      << "the saved weights differ";
}
