/* Implements: saving and loading a Session's parameters as safetensors. */
#include "runtime/weights/weights.h"

#include "runtime/exec/optimizer.h"
#include <cmath>
#include <cstring>

#include "runtime/weights/safetensors.h"

namespace lmrt {

void saveWeights(Session &session, const std::string &path,
                 const std::map<std::string, std::string> &metadata) {
  session.pullParams();
  std::vector<std::pair<std::string, TensorRef>> tensors;
  for (ParamState &p : session.params()) tensors.emplace_back(p.name, p.valueRef());
  writeSafetensors(path, tensors, metadata);
}

void loadWeights(Session &session, const std::string &path) {
  SafetensorsFile file = readSafetensors(path);
  // Check everything before copying anything: a bad file leaves the session as it was.
  // A checkpoint's state file holds the optimizer state too; --init takes its weights.
  auto meta = file.metadata.find("format");
  const bool checkpoint = meta != file.metadata.end() && meta->second == "lmc-checkpoint";
  for (const auto &[name, t] : file.tensors) {
    if (checkpoint && isOptimizerStateName(name)) continue;
    bool known = false;
    for (const ParamState &p : session.params()) known = known || p.name == name;
    if (!known) fail("weights '%s': tensor '%s' is not a parameter of this plan", path.c_str(), name.c_str());
  }
  for (const ParamState &p : session.params()) {
    auto it = file.tensors.find(p.name);
    if (it == file.tensors.end())
      fail("weights '%s': no tensor for parameter '%s' %s", path.c_str(), p.name.c_str(),
           p.type.str().c_str());
    const SafetensorsTensor &t = it->second;
    if (t.type.shape != p.type.shape || t.type.dtype == DType::I32)
      fail("weights '%s': tensor '%s' is %s, the parameter is %s", path.c_str(), p.name.c_str(),
           t.type.str().c_str(), p.type.str().c_str());
  }
  // NaN or Inf weights would train or sample garbage without a word: refuse them.
  for (const ParamState &p : session.params()) {
    const SafetensorsTensor &t = file.tensors.at(p.name);
    int64_t n = t.type.numel();
    for (int64_t i = 0; i < n; ++i) {
      double x;
      if (t.type.dtype == DType::F32) {
        float f;
        std::memcpy(&f, t.bytes.data() + 4 * i, 4);
        x = f;
      } else {
        std::memcpy(&x, t.bytes.data() + 8 * i, 8);
      }
      if (!std::isfinite(x))
        fail("weights '%s': tensor '%s' holds %g at element %lld (flat index): refusing non-finite weights",
             path.c_str(), p.name.c_str(), x, (long long)i);
    }
  }
  for (ParamState &p : session.params()) {
    const SafetensorsTensor &t = file.tensors.at(p.name);
    int64_t n = p.type.numel();
    if (t.type.dtype == p.type.dtype) {
      std::memcpy(p.value.data(), t.bytes.data(), t.bytes.size());
    } else if (p.type.dtype == DType::F64) {  // f32 file -> f64 parameter
      std::vector<float> src(n);
      std::memcpy(src.data(), t.bytes.data(), t.bytes.size());
      double *dst = p.valueRef().as<double>();
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    } else {  // f64 file -> f32 parameter
      std::vector<double> src(n);
      std::memcpy(src.data(), t.bytes.data(), t.bytes.size());
      float *dst = p.valueRef().as<float>();
      for (int64_t i = 0; i < n; ++i) dst[i] = (float)src[i];
    }
  }
  session.pushParams();
}

}  // namespace lmrt
