/* Implements: saving and loading a Session's parameters as safetensors. */
#include "runtime/weights/weights.h"

#include "contract/lora.h"

#include <set>

#include "runtime/exec/optimizer.h"
#include "runtime/exec/shard_layout.h"
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

namespace {

/* "'name'", or "'name' (loaded as 'param')" when a rename changed it. */
std::string described(const std::string &file, const std::string &param) {
  return file == param ? "'" + file + "'" : "'" + file + "' (loaded as '" + param + "')";
}

}  // namespace

void loadWeights(Session &session, const std::string &path) { loadWeights(session, path, InitOptions{}); }

std::string describeInitReport(const InitReport &report, size_t params) {
  auto names = [](const char *what, const std::vector<std::string> &v) {
    if (v.empty()) return std::string();
    std::string s = std::string("; ") + what + " (" + std::to_string(v.size()) + "): ";
    for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 8) s += ", ... and " + std::to_string(v.size() - 8) + " more";
    return s;
  };
  return "init: loaded " + std::to_string(report.loaded.size()) + " of " + std::to_string(params) + " parameters" +
         names("left at their initializer", report.leftAtInit) + names("unused tensors of the file", report.unused) +
         names("left out by --init-map", report.dropped) + "\n";
}

InitReport loadWeights(Session &session, const std::string &path, const InitOptions &options) {
  SafetensorsFile file = readSafetensors(path);
  InitReport report;
  // Check everything before copying anything: a bad file leaves the session as it was.
  // A checkpoint's state file holds the optimizer state too; --init takes its weights.
  auto meta = file.metadata.find("format");
  const bool checkpoint = meta != file.metadata.end() && meta->second == "lmc-checkpoint";
  std::map<std::string, std::string> source;  // parameter name -> the file's tensor name
  for (const auto &[name, t] : file.tensors) {
    if (checkpoint && isOptimizerStateName(name)) continue;
    const std::vector<std::string> targets = mapInitName(options.renames, name);
    if (targets.empty()) {
      report.dropped.push_back(name);
      continue;
    }
    bool used = false;
    for (const std::string &target : targets) {  // several: '*=*,ref.*' loads one tensor twice
      bool known = false;
      for (const ParamState &p : session.params()) known = known || p.name == target;
      if (!known) {
        if (options.strict)
          fail("weights '%s': tensor %s is not a parameter of this plan%s", path.c_str(),
               described(name, target).c_str(),
               options.renames.empty() ? " (--init-strict=false loads the tensors both share)" : "");
        continue;
      }
      used = true;
      auto [it, fresh] = source.emplace(target, name);
      if (!fresh)
        fail("weights '%s': tensors '%s' and '%s' both load into parameter '%s' (check --init-map)", path.c_str(),
             it->second.c_str(), name.c_str(), target.c_str());
    }
    if (!used) report.unused.push_back(name);
  }
  // LoRA adapters may be missing even when strict: a pretrained model has none, and
  // they start at their initializer (B = 0: the adapted model is the base).
  std::set<std::string> adapters;
  for (const std::string &t : session.plan().train().lora().targets()) {
    adapters.insert(lora::aName(t));
    adapters.insert(lora::bName(t));
  }
  for (size_t i = 0; i < session.params().size(); ++i) {
    const ParamState &p = session.params()[i];
    // A tensor-parallel rank's parameter is a slice; the file holds the logical tensor.
    const TensorType logical = session.logicalType(i);
    auto src = source.find(p.name);
    if (src == source.end()) {
      if (options.strict && !adapters.count(p.name))
        fail("weights '%s': no tensor for parameter '%s' %s", path.c_str(), p.name.c_str(), logical.str().c_str());
      report.leftAtInit.push_back(p.name);
      continue;
    }
    const SafetensorsTensor &t = file.tensors.at(src->second);
    if (t.type.shape != logical.shape || t.type.dtype == DType::I32)
      fail("weights '%s': tensor %s is %s, the parameter is %s", path.c_str(), described(src->second, p.name).c_str(),
           t.type.str().c_str(), logical.str().c_str());
    report.loaded.push_back(p.name);
  }
  // NaN or Inf weights would train or sample garbage without a word: refuse them.
  for (const ParamState &p : session.params()) {
    auto src = source.find(p.name);
    if (src == source.end()) continue;
    const SafetensorsTensor &t = file.tensors.at(src->second);
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
        fail("weights '%s': tensor %s holds %g at element %lld (flat index): refusing non-finite weights",
             path.c_str(), described(src->second, p.name).c_str(), x, (long long)i);
    }
  }
  // The parameters left alone keep what the session holds (its init): bring it to the host first.
  if (!report.leftAtInit.empty()) session.pullParams();
  for (size_t i = 0; i < session.params().size(); ++i) {
    ParamState &p = session.params()[i];
    auto src = source.find(p.name);
    if (src == source.end()) continue;
    SafetensorsTensor t = file.tensors.at(src->second);
    HostBytes slice;
    if (session.sharding(i)) {  // this rank's slice, in the file's dtype
      const TensorType part{t.type.dtype, p.type.shape};
      slice.resize((size_t)part.bytes());
      session.sliceParam(i, TensorRef{const_cast<char *>(t.bytes.data()), t.type}, TensorRef{slice.data(), part});
      t = SafetensorsTensor{part, std::string_view(slice.data(), slice.size())};
    }
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
  return report;
}

}  // namespace lmrt
