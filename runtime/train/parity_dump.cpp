/* Implements: the parity dump (format in parity_dump.h). */
#include "runtime/train/parity_dump.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "runtime/weights/safetensors.h"
#include "runtime/exec/session.h"

namespace lmrt {

ParityDump::ParityDump(const std::string &dir) : dir_(dir) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create --dump-dir '%s': %s", dir.c_str(), std::strerror(errno));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("--dump-dir '%s' is not a directory", dir.c_str());
}

bool isParityDumpFile(const std::string &name) {
  if (name == "init.safetensors") return true;
  const std::string prefix = "step", suffix = ".safetensors";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (size_t i = prefix.size(); i < name.size() - suffix.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

void ParityDump::writeInit(Session &session) {
  std::vector<std::pair<std::string, TensorRef>> t;
  for (ParamState &p : session.params()) t.push_back({p.name, p.valueRef()});
  writeSafetensors(dir_ + "/init.safetensors", t);
}

void ParityDump::captureGradients(Session &session, double lossScale) {
  session.pullParams(/*grads=*/true);
  grads_.clear();
  for (ParamState &p : session.params()) {
    grads_.emplace_back(p.grad.begin(), p.grad.end());
    if (lossScale == 1) continue;
    if (p.type.dtype != DType::F32) fail("parity dump: a loss-scaled gradient of %s is not f32", p.name.c_str());
    float *g = reinterpret_cast<float *>(grads_.back().data());
    for (size_t i = 0; i < grads_.back().size() / sizeof(float); ++i) g[i] = (float)(g[i] / lossScale);
  }
}

void ParityDump::captureSamples(Session &session) {
  session.setStepObserver([this](const std::string &program, const plan::Step &step, const std::vector<TensorRef> &in,
                                 const std::vector<TensorRef> &out) {
    if (program != "train_step" || step.op() != "sample") return;
    auto copy = [](const TensorRef &t) {
      const char *p = static_cast<const char *>(t.data);
      return Captured{t.type, std::vector<char>(p, p + t.type.bytes())};
    };
    samples_.push_back({copy(in[0]), copy(out[0])});
  });
}

void ParityDump::writeStep(int64_t step, Session &session,
                           const std::vector<std::pair<std::string, TensorRef>> &inputs,
                           const TensorRef &loss, double lr) {
  std::vector<std::pair<std::string, TensorRef>> t = inputs;
  t.push_back({"loss", loss});
  double lrValue = lr;
  t.push_back({"lr", TensorRef{&lrValue, TensorType{DType::F64, {}}}});
  session.pullParams();
  std::vector<ParamState> &params = session.params();
  if (grads_.size() != params.size())
    fail("parity dump: gradients of step %lld were not captured", (long long)step);
  for (size_t i = 0; i < params.size(); ++i)
    t.push_back({"grad." + params[i].name, TensorRef{grads_[i].data(), params[i].type}});
  for (ParamState &p : params) t.push_back({"param." + p.name, p.valueRef()});
  for (size_t j = 0; j < samples_.size(); ++j) {
    auto &[logits, ids] = samples_[j];
    t.push_back({"sample" + std::to_string(j) + ".logits", TensorRef{logits.bytes.data(), logits.type}});
    t.push_back({"sample" + std::to_string(j) + ".ids", TensorRef{ids.bytes.data(), ids.type}});
  }
  writeSafetensors(dir_ + "/step" + std::to_string(step) + ".safetensors", t);
  samples_.clear();
}

}  // namespace lmrt
