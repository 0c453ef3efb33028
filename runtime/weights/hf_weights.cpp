/* Implements: Hugging Face weights export and import (see hf_weights.h). */
#include "runtime/weights/hf_weights.h"
#include "runtime/weights/lora_merge.h"

#include "runtime/exec/optimizer.h"
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>

#include "base/file_io.h"
#include "base/json.h"
#include "base/paths.h"
#include "contract/plan_types.h"
#include "runtime/weights/safetensors.h"

namespace lmrt {
namespace {

const char *kModelFile = "model.safetensors";
const char *kConfigFile = "config.json";

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string joinPath(const std::string &dir, const char *name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

double element(const SafetensorsTensor &t, int64_t i) {
  if (t.type.dtype == DType::F32) {
    float f;
    std::memcpy(&f, t.bytes.data() + 4 * i, 4);
    return f;
  }
  double d;
  std::memcpy(&d, t.bytes.data() + 8 * i, 8);
  return d;
}

/* `t` (a float tensor) as `dtype` bytes, transposed from [r, c] to [c, r] when
   `transpose`. Equal dtypes copy bytes, so f32 stays bit-exact. */
std::string convert(const SafetensorsTensor &t, DType dtype, bool transpose) {
  const size_t es = dtypeSize(dtype);
  const int64_t n = t.type.numel();
  std::string out((size_t)n * es, '\0');
  const int64_t rows = transpose ? t.type.shape[0] : 1, cols = transpose ? t.type.shape[1] : n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t src = r * cols + c, dst = transpose ? c * rows + r : src;
      if (t.type.dtype == dtype) {
        std::memcpy(&out[(size_t)dst * es], t.bytes.data() + (size_t)src * es, es);
      } else if (dtype == DType::F32) {
        float f = (float)element(t, src);
        std::memcpy(&out[(size_t)dst * 4], &f, 4);
      } else {
        double d = element(t, src);
        std::memcpy(&out[(size_t)dst * 8], &d, 8);
      }
    }
  return out;
}

Shape transposed(Shape s) {
  std::reverse(s.begin(), s.end());
  return s;
}

void refuseNonFinite(const std::string &file, const std::string &name, const SafetensorsTensor &t) {
  for (int64_t i = 0, n = t.type.numel(); i < n; ++i) {
    double x = element(t, i);
    if (!std::isfinite(x))
      fail("'%s': tensor '%s' holds %g at element %lld (flat index): refusing non-finite weights",
           file.c_str(), name.c_str(), x, (long long)i);
  }
}

/* Output tensors in safetensors' own order: dtype descending (F64 before F32),
   then name. */
struct OutTensor {
  std::string name;
  DType dtype;
  Shape shape;
  std::string bytes;
};

void sortLikeSafetensors(std::vector<OutTensor> &ts) {
  std::sort(ts.begin(), ts.end(), [](const OutTensor &a, const OutTensor &b) {
    if (a.dtype != b.dtype) return a.dtype == DType::F64;
    return a.name < b.name;
  });
}

void writeTensors(const std::string &path, std::vector<OutTensor> &ts,
                  const std::map<std::string, std::string> &metadata) {
  std::vector<std::pair<std::string, TensorRef>> refs;
  for (OutTensor &t : ts) refs.push_back({t.name, TensorRef{t.bytes.data(), TensorType{t.dtype, t.shape}}});
  writeSafetensors(path, refs, metadata);
}

std::string configValueJson(const plan::Attr &a) {
  switch (a.value_case()) {
  case plan::Attr::kI: return std::to_string(a.i());
  case plan::Attr::kF: return jsonDouble(a.f());
  case plan::Attr::kB: return a.b() ? "true" : "false";
  case plan::Attr::kS: return json::quote(a.s());
  default: return "null";
  }
}

std::string configJson(const plan::WeightExport &w, DType dtype) {
  std::map<std::string, std::string> fields;  // sorted, as HF writes them
  for (const auto &[k, v] : w.config()) fields[k] = configValueJson(v);
  fields["architectures"] = "[\n    " + json::quote(w.architecture()) + "\n  ]";
  if (!fields.count("torch_dtype")) fields["torch_dtype"] = dtype == DType::F64 ? "\"float64\"" : "\"float32\"";
  std::string out = "{\n";
  bool first = true;
  for (const auto &[k, v] : fields) {
    out += (first ? "  " : ",\n  ") + json::quote(k) + ": " + v;
    first = false;
  }
  return out + "\n}\n";
}

/* The one dtype of the plan's parameters (export and import write it). */
DType planDtype(const plan::Plan &plan) {
  return plan.params_size() && toTensorType(plan.params(0).type()).dtype == DType::F64 ? DType::F64 : DType::F32;
}

/* Checks `dir` before any work: writable (or creatable), and holding no model
   unless `overwrite`. Creates nothing. */
void checkOutputDir(const std::string &dir, bool overwrite) {
  if (dir.empty()) fail("--out: give a directory");
  checkOutputDirectory({"--out", dir});
  for (const char *f : {kModelFile, kConfigFile}) {
    std::string p = joinPath(dir, f);
    if (exists(p) && !overwrite)
      fail("--out '%s' already holds %s; pass --overwrite to replace it", dir.c_str(), f);
  }
}

bool sameConfigValue(const plan::Attr &a, const json::Value &v) {
  switch (a.value_case()) {
  case plan::Attr::kI:
  case plan::Attr::kF: {
    if (v.kind != json::Value::Number) return false;
    double x = std::strtod(v.text.c_str(), nullptr);
    return a.value_case() == plan::Attr::kI ? x == (double)a.i() : x == a.f();
  }
  case plan::Attr::kB: return v.kind == json::Value::Bool && v.b == a.b();
  case plan::Attr::kS: return v.kind == json::Value::String && v.text == a.s();
  default: return false;
  }
}

std::string jsonText(const json::Value &v) {
  switch (v.kind) {
  case json::Value::Null: return "null";
  case json::Value::Bool: return v.b ? "true" : "false";
  case json::Value::Number: return v.text;
  case json::Value::String: return json::quote(v.text);
  case json::Value::Array: {
    std::string s = "[";
    for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + jsonText(v.items[i]);
    return s + "]";
  }
  default: return std::string("a JSON ") + json::kindName(v.kind);
  }
}

}  // namespace

std::string jsonDouble(double v) {
  // Python's repr (what HF's json.dump writes): the shortest digits that read
  // back as v, positional for exponents in [-4, 16), else d.ddde-XX.
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[40];
  for (int prec = 0; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string text = buf, sign;
  if (text[0] == '-') sign = "-", text = text.substr(1);
  size_t e = text.find('e');
  int exp = std::atoi(text.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp < -4 || exp >= 16) {
    char ex[8];
    std::snprintf(ex, sizeof ex, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return sign + digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + ex;
  }
  if (exp < 0) return sign + "0." + std::string(-exp - 1, '0') + digits;
  std::string intPart = digits.substr(0, std::min(digits.size(), (size_t)exp + 1));
  intPart += std::string(exp + 1 - intPart.size(), '0');
  std::string frac = digits.size() > (size_t)exp + 1 ? digits.substr(exp + 1) : "0";
  return sign + intPart + "." + frac;
}

const plan::WeightExport &weightExport(const plan::Plan &plan, const std::string &format,
                                       const std::string &planPath, const std::string &section) {
  std::vector<const plan::WeightExport *> maps;
  std::string list;
  for (const plan::WeightExport &w : plan.weight_exports())
    if (w.format() == format) {
      maps.push_back(&w);
      list += (list.empty() ? "" : ", ") + w.architecture();
    }
  if (maps.size() == 1 && (section.empty() || section == maps[0]->architecture())) return *maps[0];
  if (maps.size() > 1 && section.empty())
    fail("plan '%s' has several '%s' name maps (%s): pick one with --section", planPath.c_str(), format.c_str(),
         list.c_str());
  for (const plan::WeightExport *w : maps)
    if (w->architecture() == section) return *w;
  if (!maps.empty())
    fail("--section '%s': plan '%s' has no '%s' name map for that model class (it has %s)", section.c_str(),
         planPath.c_str(), format.c_str(), list.c_str());
  fail("plan '%s' (from %s) has no '%s' name map: add an `export %s \"ModelClass\" { ... }` section to "
       "the model file and recompile (docs/language.md, \"Export\")",
       planPath.c_str(), plan.source().empty() ? "an unknown source" : plan.source().c_str(), format.c_str(),
       format.c_str());
}

void exportHf(const plan::Plan &plan, const HfExportOptions &o) {
  const plan::WeightExport &w = weightExport(plan, "hf", o.planPath, o.section);
  std::string modelPath = joinPath(o.outDir, kModelFile), configPath = joinPath(o.outDir, kConfigFile);
  refuseOverlappingPaths({{"--out", modelPath}, {"--out", configPath}},
                         {{"the plan", o.planPath}, {"the weights", o.weightsPath}});

  checkOutputDir(o.outDir, o.overwrite);
  SafetensorsFile file = readSafetensors(o.weightsPath);
  // A LoRA plan's map names the base weights: export them with the adapters merged.
  std::map<std::string, std::string> merged;
  if (plan.train().lora().targets_size() > 0) mergeLoraAdapters(plan, file, o.weightsPath, merged);
  // The weights must be this plan's, exactly (as `lmrt run --init` requires).
  auto meta = file.metadata.find("format");
  const bool checkpoint = meta != file.metadata.end() && meta->second == "lmc-checkpoint";
  std::map<std::string, const plan::Param *> params;
  for (const plan::Param &p : plan.params()) params[p.name()] = &p;
  for (const auto &[name, t] : file.tensors) {
    if (checkpoint && isOptimizerStateName(name)) continue;
    if (!params.count(name))
      fail("weights '%s': tensor '%s' is not a parameter of plan '%s' (weights of another model?)",
           o.weightsPath.c_str(), name.c_str(), o.planPath.c_str());
  }
  const DType dtype = planDtype(plan);
  std::vector<OutTensor> out;
  for (const plan::WeightMapEntry &e : w.entries()) {
    const plan::Param &p = *params.at(e.param());
    TensorType type = toTensorType(p.type());
    auto it = file.tensors.find(e.param());
    if (it == file.tensors.end())
      fail("weights '%s': no tensor for parameter '%s' %s of plan '%s'", o.weightsPath.c_str(),
           e.param().c_str(), type.str().c_str(), o.planPath.c_str());
    const SafetensorsTensor &t = it->second;
    if (t.type.shape != type.shape || t.type.dtype == DType::I32)
      fail("weights '%s': tensor '%s' is %s, the plan's parameter is %s", o.weightsPath.c_str(),
           e.param().c_str(), t.type.str().c_str(), type.str().c_str());
    refuseNonFinite("weights '" + o.weightsPath + "'", e.param(), t);
    std::string bytes = convert(t, dtype, e.transpose());
    Shape shape = e.transpose() ? transposed(type.shape) : type.shape;
    for (const std::string &name : e.names()) out.push_back({name, dtype, shape, bytes});
  }
  if (!exists(o.outDir) && ::mkdir(o.outDir.c_str(), 0777) != 0)
    fail("--out '%s': cannot create the directory: %s", o.outDir.c_str(), std::strerror(errno));
  sortLikeSafetensors(out);
  writeTensors(modelPath, out, {{"format", "pt"}});
  std::string config = configJson(w, dtype);
  writeFileAtomic(configPath, "config", [&](std::ostream &f) { f.write(config.data(), (std::streamsize)config.size()); });
}

void importHf(const plan::Plan &plan, const HfImportOptions &o) {
  const plan::WeightExport &w = weightExport(plan, "hf", o.planPath, o.section);
  // A map of some of the parameters (one model class of several) takes the
  // others from --base: the output holds every parameter of the plan.
  std::set<std::string> inMap;
  for (const plan::WeightMapEntry &e : w.entries()) inMap.insert(e.param());
  const bool partial = (int)inMap.size() < plan.params_size();
  if (partial && o.basePath.empty() && w.omitted_size())
    fail("the hf name map '%s' of plan '%s' (%s) omits %d of its %d parameters ('%s'%s), which the model "
         "class lacks: give them with --base WEIGHTS (plan weights, e.g. `lmrt run --out`)",
         w.architecture().c_str(), o.planPath.c_str(), w.source_loc().c_str(), w.omitted_size(), plan.params_size(),
         w.omitted(0).c_str(), w.omitted_size() > 1 ? ", ..." : "");
  if (partial && o.basePath.empty())
    fail("the hf name map '%s' of plan '%s' maps %zu of its %d parameters: give the others with --base "
         "WEIGHTS (plan weights, e.g. `lmrt run --out`)", w.architecture().c_str(), o.planPath.c_str(),
         inMap.size(), plan.params_size());
  std::string modelPath = joinPath(o.dir, kModelFile), configPath = joinPath(o.dir, kConfigFile);
  struct stat st;
  if (::stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("'%s' is not a directory (give the directory save_pretrained wrote)", o.dir.c_str());
  if (!exists(modelPath)) {
    if (exists(joinPath(o.dir, "model.safetensors.index.json")))
      fail("'%s' holds a sharded model (model.safetensors.index.json): lmrt reads one model.safetensors; "
           "save it with save_pretrained(dir, max_shard_size=\"100GB\")", o.dir.c_str());
    if (exists(joinPath(o.dir, "pytorch_model.bin")))
      fail("'%s' holds pytorch_model.bin, not model.safetensors: save it with save_pretrained(dir) "
           "(safe_serialization, the default)", o.dir.c_str());
    fail("'%s' has no %s", o.dir.c_str(), kModelFile);
  }
  if (!exists(configPath)) fail("'%s' has no %s", o.dir.c_str(), kConfigFile);
  refuseOverlappingPaths({{"--out", o.outPath}}, {{"the plan", o.planPath},
                                                  {"the model", modelPath},
                                                  {"the config", configPath},
                                                  {"--base", o.basePath.empty() ? o.planPath : o.basePath}});
  if (exists(o.outPath) && !o.overwrite)
    fail("--out '%s' exists; pass --overwrite to replace it", o.outPath.c_str());
  checkOutputFile({"--out", o.outPath});

  // The HF config must describe the model the plan was compiled for: shapes
  // alone miss a different head count.
  json::Value config;
  try {
    config = json::parse(readWholeFile(configPath, "config"));
  } catch (const Error &e) {
    fail("'%s': %s", configPath.c_str(), e.what());
  }
  if (config.kind != json::Value::Object) fail("'%s' is not a JSON object", configPath.c_str());
  // The model class too: another class with the same tensor names (GPT2Model and
  // GPT2LMHeadModel, BertForPreTraining and BertForMaskedLM) would otherwise pass.
  const json::Value *archs = config.find("architectures");
  if (!archs || archs->kind != json::Value::Array || archs->items.empty()) {
    std::fprintf(stderr, "lmrt: warning: '%s' names no architectures: the model class is not checked against "
                 "the map's %s\n", configPath.c_str(), w.architecture().c_str());
  } else {
    bool found = false;
    for (const json::Value &a : archs->items) found = found || (a.kind == json::Value::String && a.text == w.architecture());
    if (!found)
      fail("'%s': architectures is %s, but the hf name map of plan '%s' is for %s (%s): a different model class",
           configPath.c_str(), jsonText(*archs).c_str(), o.planPath.c_str(), w.architecture().c_str(),
           w.source_loc().c_str());
  }
  std::map<std::string, plan::Attr> expected(w.config().begin(), w.config().end());
  std::string absent;
  for (const auto &[key, want] : expected) {
    const json::Value *got = config.find(key);
    if (!got) {
      absent += (absent.empty() ? "" : ", ") + key + " (the plan's " + configValueJson(want) + ")";
      continue;
    }
    // null is HF's "the default" (n_inner: 4 * n_embd): nothing to compare.
    if (got->kind != json::Value::Null && !sameConfigValue(want, *got))
      fail("'%s': %s is %s, but plan '%s' was compiled with %s = %s (recompile with matching -D values)",
           configPath.c_str(), key.c_str(), jsonText(*got).c_str(), o.planPath.c_str(), key.c_str(),
           configValueJson(want).c_str());
  }
  // save_pretrained leaves out values equal to the class's defaults, which lmrt does
  // not know: say which keys went unchecked rather than pass them in silence.
  if (!absent.empty())
    std::fprintf(stderr, "lmrt: warning: '%s' leaves out %s: the class defaults of %s apply to them, which lmrt "
                 "cannot check against the plan (write the config with to_json_file(path, use_diff=False) to "
                 "check them)\n", configPath.c_str(), absent.c_str(), w.architecture().c_str());

  SafetensorsFile file = readSafetensors(modelPath);
  std::set<std::string> known;
  for (const plan::WeightMapEntry &e : w.entries()) {
    known.insert(e.names().begin(), e.names().end());
    known.insert(e.tied().begin(), e.tied().end());
  }
  for (const std::string &name : file.order)
    if (!known.count(name))
      fail("'%s': tensor '%s' is not in the hf name map of plan '%s' (%s, from %s): a different model "
           "class or version?", modelPath.c_str(), name.c_str(), o.planPath.c_str(), w.architecture().c_str(),
           w.source_loc().c_str());
  const DType dtype = planDtype(plan);
  std::map<std::string, const plan::Param *> params;
  for (const plan::Param &p : plan.params()) params[p.name()] = &p;
  std::map<std::string, std::string> values;  // param -> bytes in plan layout
  for (const plan::WeightMapEntry &e : w.entries()) {
    TensorType type = toTensorType(params.at(e.param())->type());
    Shape want = e.transpose() ? transposed(type.shape) : type.shape;
    std::string first;
    std::vector<std::string> all(e.names().begin(), e.names().end());
    all.insert(all.end(), e.tied().begin(), e.tied().end());
    for (size_t k = 0; k < all.size(); ++k) {
      const std::string &name = all[k];
      auto it = file.tensors.find(name);
      if (it == file.tensors.end()) {
        if (k == 0)
          fail("'%s': no tensor '%s' (parameter '%s' %s%s)", modelPath.c_str(), name.c_str(),
               e.param().c_str(), type.str().c_str(), e.transpose() ? ", stored transposed" : "");
        if (k < (size_t)e.names_size())
          fail("'%s': no tensor '%s' (a copy of '%s')", modelPath.c_str(), name.c_str(), all[0].c_str());
        continue;  // a tied name HF left out, as it does
      }
      const SafetensorsTensor &t = it->second;
      if (t.type.shape != want || t.type.dtype == DType::I32)
        fail("'%s': tensor '%s' is %s, parameter '%s' needs %s%s", modelPath.c_str(), name.c_str(),
             t.type.str().c_str(), e.param().c_str(), TensorType{type.dtype, want}.str().c_str(),
             e.transpose() ? " (stored transposed)" : "");
      refuseNonFinite("'" + modelPath + "'", name, t);
      std::string bytes = convert(t, dtype, e.transpose());
      if (k == 0) first = std::move(bytes);
      else if (bytes != first)
        fail("'%s': tensor '%s' differs from '%s', which the map ties it to", modelPath.c_str(),
             name.c_str(), all[0].c_str());
    }
    values[e.param()] = std::move(first);
  }
  SafetensorsFile base;
  if (partial) {
    base = readSafetensors(o.basePath);
    for (const plan::Param &p : plan.params()) {
      if (inMap.count(p.name())) continue;
      TensorType type = toTensorType(p.type());
      auto it = base.tensors.find(p.name());
      if (it == base.tensors.end())
        fail("--base '%s': no tensor for parameter '%s' %s (which map '%s' leaves out)", o.basePath.c_str(),
             p.name().c_str(), type.str().c_str(), w.architecture().c_str());
      if (it->second.type.shape != type.shape || it->second.type.dtype == DType::I32)
        fail("--base '%s': tensor '%s' is %s, the plan's parameter is %s", o.basePath.c_str(), p.name().c_str(),
             it->second.type.str().c_str(), type.str().c_str());
      refuseNonFinite("--base '" + o.basePath + "'", p.name(), it->second);
      values[p.name()] = convert(it->second, dtype, false);
    }
  }
  // In plan order with plan names and no metadata: what `lmrt run --out` writes.
  std::vector<std::pair<std::string, TensorRef>> refs;
  for (const plan::Param &p : plan.params())
    refs.push_back({p.name(), TensorRef{values.at(p.name()).data(), TensorType{dtype, toTensorType(p.type()).shape}}});
  writeSafetensors(o.outPath, refs);
}

}  // namespace lmrt
