/* Implements: the step-time cost model (cost_model.h). */
#include "contract/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/json.h"
#include "base/tensor.h"
#include "contract/contract.h"
#include "contract/op_table.h"

namespace lmrt {

const char *opFamilyName(OpFamily f) {
  static const char *const names[] = {"matmul", "attention", "norm", "elementwise", "loss", "other"};
  return names[int(f)];
}

OpFamily opFamily(const plan::Plan &plan, const plan::Step &step) {
  const std::string &op = step.op();
  if (op == "matmul") return OpFamily::Matmul;
  if (op == ops::kFusedOpName) {
    auto kernel = step.attrs().find("kernel");
    bool gemm = kernel != step.attrs().end() && kernel->second.i() >= 0 &&
                kernel->second.i() < plan.kernels_size() &&
                plan.kernels(kernel->second.i()).schedule() == plan::Kernel::MATMUL_EPILOGUE;
    return gemm ? OpFamily::Matmul : OpFamily::Elementwise;
  }
  if (op.find("attention") != std::string::npos) return OpFamily::Attention;
  if (op.rfind("layer_norm", 0) == 0 || op.rfind("rms_norm", 0) == 0) return OpFamily::Norm;
  if (op.find("cross_entropy") != std::string::npos) return OpFamily::Loss;
  static const char *const elementwise[] = {"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt",
                                            "tanh", "sin", "cos", "relu", "gelu", "gelu_grad", "gelu_erf",
                                            "gelu_erf_grad", "silu", "sigmoid", "log_sigmoid", "softplus",
                                            "where", "where_int", "eq", "ne", "lt", "le", "gt", "ge", "to_float", "to_int"};
  for (const char *name : elementwise)
    if (op == name) return OpFamily::Elementwise;
  return OpFamily::Other;
}

KernelClass kernelClass(const plan::Plan &plan, const plan::Step &step) {
  OpFamily f = opFamily(plan, step);
  if (f == OpFamily::Matmul || step.op().rfind("linear_cross_entropy", 0) == 0) return KernelClass::Gemm;
  if (f == OpFamily::Attention) return KernelClass::Attention;
  return KernelClass::Memory;
}

double rateAt(const std::vector<RatePoint> &curve, double size) {
  if (curve.empty()) return 0;
  if (size <= curve.front().size) return curve.front().rate;
  if (size >= curve.back().size) return curve.back().rate;
  for (size_t i = 1; i < curve.size(); ++i)
    if (size <= curve[i].size) {
      const RatePoint &a = curve[i - 1], &b = curve[i];
      double t = std::log(size / a.size) / std::log(b.size / a.size);
      return a.rate + t * (b.rate - a.rate);
    }
  return curve.back().rate;
}

MachineRates defaultMachineRates() {
  MachineRates r;
  r.gemm = {{1e6, 20}, {1e8, 70}, {1e9, 100}};
  r.memory = {{1e5, 40}, {1e7, 20}};
  r.kernelOverheadUs = 5;
  r.streamGbps = 40;
  r.threads = 0;
  return r;
}

double streamBandwidth(const MachineRates &rates) {
  if (rates.streamGbps > 0) return rates.streamGbps;
  double best = 0;
  for (const RatePoint &p : rates.memory) best = std::max(best, p.rate);
  return best;
}

std::string defaultMachineFile() {
  if (const char *file = std::getenv("LMC_MACHINE_FILE"); file && *file) return file;
  std::string root;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    root = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    root = std::string(home) + "/.cache";
  else
    root = "/tmp";
  return root + "/lmc/machine.json";
}

namespace {

std::string curveJson(const std::vector<RatePoint> &curve) {
  std::string s = "[";
  char buf[96];
  for (size_t i = 0; i < curve.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s[%.6g, %.4g]", i ? ", " : "", curve[i].size, curve[i].rate);
    s += buf;
  }
  return s + "]";
}

double number(const json::Value &v, const std::string &what) {
  if (v.kind != json::Value::Number) fail("%s must be a number, got %s", what.c_str(), json::kindName(v.kind));
  double d = std::strtod(v.text.c_str(), nullptr);
  if (!std::isfinite(d) || d < 0) fail("%s must be a finite number >= 0, got %s", what.c_str(), v.text.c_str());
  return d;
}

std::vector<RatePoint> parseCurve(const json::Value &root, const char *key) {
  const json::Value *v = root.find(key);
  if (!v || v->kind != json::Value::Array || v->items.empty())
    fail("\"%s\" must be a non-empty array of [size, rate] pairs", key);
  std::vector<RatePoint> curve;
  for (const json::Value &p : v->items) {
    if (p.kind != json::Value::Array || p.items.size() != 2) fail("\"%s\": each point must be [size, rate]", key);
    RatePoint point{number(p.items[0], std::string(key) + " size"), number(p.items[1], std::string(key) + " rate")};
    if (point.size <= 0 || point.rate <= 0) fail("\"%s\": sizes and rates must be > 0", key);
    if (!curve.empty() && point.size <= curve.back().size) fail("\"%s\": sizes must increase", key);
    curve.push_back(point);
  }
  return curve;
}

}  // namespace

std::string machineRatesJson(const MachineRates &r) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "\"stream_gbps\": %.4g, \"kernel_overhead_us\": %.3g, \"attention_fraction\": %.3g, \"threads\": %d",
                r.streamGbps, r.kernelOverheadUs, r.attentionFraction, r.threads);
  return "{\"lmc_machine\": 1, \"device\": " + json::quote(r.device) + ",\n \"gemm_gflops\": " + curveJson(r.gemm) +
         ",\n \"memory_gbps\": " + curveJson(r.memory) + ",\n " + buf + "}\n";
}

MachineRates parseMachineRates(const std::string &text, const std::string &origin) {
  try {
    json::Value root = json::parse(text);
    if (root.kind != json::Value::Object) fail("the file must hold one JSON object");
    const json::Value *version = root.find("lmc_machine");
    int64_t v = 0;
    if (!version || !version->asInt(v) || v != 1) fail("\"lmc_machine\" must be 1 (written by lmrt calibrate)");
    MachineRates r;
    r.origin = origin;
    if (const json::Value *d = root.find("device"); d && d->kind == json::Value::String) r.device = d->text;
    r.gemm = parseCurve(root, "gemm_gflops");
    r.memory = parseCurve(root, "memory_gbps");
    if (const json::Value *b = root.find("stream_gbps")) r.streamGbps = number(*b, "stream_gbps");
    if (const json::Value *o = root.find("kernel_overhead_us")) r.kernelOverheadUs = number(*o, "kernel_overhead_us");
    if (const json::Value *a = root.find("attention_fraction")) {
      r.attentionFraction = number(*a, "attention_fraction");
      if (r.attentionFraction <= 0) fail("attention_fraction must be > 0");
    }
    // "gemm_fraction" (files before the GEMMs' operand term, cost_model.h) is ignored.
    if (const json::Value *t = root.find("threads")) r.threads = int(number(*t, "threads"));
    return r;
  } catch (const Error &e) {
    fail("machine file %s: %s", origin.c_str(), e.what());
  }
}

double predictKernelSeconds(const plan::Plan &plan, const plan::Step &step, const MachineRates &rates) {
  double flops = double(step.flops()), bytes = double(step.bytes());
  double seconds = 0;
  switch (kernelClass(plan, step)) {
  case KernelClass::Gemm:
    // The isolated rate (operands in cache) plus streaming the operands and
    // the result (and a fused epilogue's inputs) through memory once.
    seconds = flops / (rateAt(rates.gemm, flops) * 1e9);
    if (bytes > 0 && streamBandwidth(rates) > 0) seconds += bytes / (streamBandwidth(rates) * 1e9);
    break;
  case KernelClass::Attention:
    seconds = flops / (rates.attentionFraction * rateAt(rates.gemm, flops) * 1e9);
    break;
  case KernelClass::Memory: seconds = bytes / (rateAt(rates.memory, bytes) * 1e9); break;
  }
  return seconds + rates.kernelOverheadUs * 1e-6;
}

StepTimePrediction predictStepTime(const plan::Plan &plan, const MachineRates &rates) {
  StepTimePrediction p;
  if (plan.programs_size() == 0) return p;
  for (const plan::Step &step : plan.programs(0).steps()) {
    double s = predictKernelSeconds(plan, step, rates);
    p.kernels += s;
    p.family[int(opFamily(plan, step))] += s;
  }
  // The update: the gradient norm reads every gradient, then one pass of
  // clipping and AdamW reads parameter, gradient, m and v and writes the
  // parameter, m and v (runtime/cpu/adamw.cpp): 8 passes of the parameters' bytes,
  // plain streams (no per-row reduction like the memory curve's layer norm):
  // GPT-2 small's update took 77 ms in --profile, 52 GB/s, where the layer
  // norm's rate said 142 ms.
  double paramBytes = double(predictedMemory(plan).params);
  if (paramBytes > 0 && streamBandwidth(rates) > 0)
    p.optimizer = 8 * paramBytes / (streamBandwidth(rates) * 1e9) + 2 * rates.kernelOverheadUs * 1e-6;
  return p;
}

}  // namespace lmrt
