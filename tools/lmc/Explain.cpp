//===- Explain.cpp - `lmc explain` -----------------------------------------===//
//
// Everything here is read from the finished plan (no IR): the memory terms are
// contract/contract.h's predictedMemory, the one sum lmc prints and lmrt
// allocates; liveness is codegen/MemoryPlanner.h's, the one the arena was
// planned with. What the plan does not say directly is worked out as follows
// (docs/explain.md):
//  - the forward: the steps the train step's "loss" output depends on (walked
//    backwards from it); every other step is the backward;
//  - a recomputed step: a backward step identical to a forward one (op,
//    attributes, location, types): remat clones the forward's op, so the clone
//    keeps all four, and no gradient rule repeats its forward op exactly;
//  - a saved tensor: a forward step's output that a backward step reads. A loss
//    op that also computes its gradient (`*_with_grad`) is a forward step, but
//    of its outputs only those the loss depends on are forward values.
//
//===----------------------------------------------------------------------===//

#include "tools/lmc/Explain.h"

#include "base/file_io.h"
#include "base/json.h"
#include "codegen/MemoryPlanner.h"
#include "contract/contract.h"
#include "contract/cost_model.h"
#include "contract/op_table.h"
#include "pipelines/MemoryBudget.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <vector>

namespace pb = lmrt::plan;
using mlir::lm::describeBytes;
using mlir::lm::groupThousands;

namespace {

const char *const kWhy[] = {"saved", "recomputed", "temporary"};
enum Why { Saved, Recomputed, Temporary };
constexpr int kNumFamilies = lmrt::kNumOpFamilies;

struct Tensor {
  int buffer;
  int64_t bytes;
  std::string type, op, loc;
  Why why;
  int64_t first, last;
};

struct Analysis {
  lmrt::PredictedMemory mem;
  std::string arenaProgram;
  const pb::Program *train = nullptr;
  std::vector<int64_t> live[3]; // per step, per Why
  int peakStep = 0;
  int64_t peakBytes = 0, byWhy[3] = {0, 0, 0};
  std::vector<Tensor> atPeak;
  int64_t familyFlops[kNumFamilies] = {}, familySteps[kNumFamilies] = {}, flops = 0;
  lmrt::MachineRates rates;
  std::string ratesNote; // where the rates came from, in words
  lmrt::StepTimePrediction time;
};

std::string signature(const pb::Step &step, const pb::Program &p) {
  std::string s = step.op() + "|" + step.loc();
  std::map<std::string, std::string> attrs;
  for (const auto &[name, attr] : step.attrs())
    attrs[name] = attr.SerializeAsString(); // sorted: map order is unspecified
  for (const auto &[name, attr] : attrs)
    s += "|" + name + "=" + attr;
  for (int id : step.inputs())
    s += "|i" + p.buffers(id).type().SerializeAsString();
  for (int id : step.outputs())
    s += "|o" + p.buffers(id).type().SerializeAsString();
  return s;
}

Analysis analyze(const pb::Plan &plan) {
  Analysis a;
  a.mem = lmrt::predictedMemory(plan);
  for (const pb::Program &program : plan.programs())
    if (program.arena_bytes() == a.mem.arena && a.arenaProgram.empty())
      a.arenaProgram = program.name();
  if (plan.programs_size() == 0)
    return a;
  const pb::Program &p = plan.programs(0); // the train step comes first (plan contract)
  a.train = &p;
  int n = p.buffers_size(), steps = p.steps_size();
  auto base = [&](int id) { return p.buffers(id).has_view_of() ? p.buffers(id).view_of() : id; };

  // The forward, walked backwards from the loss: a step is forward when it
  // writes a value still needed; that value is then defined, its inputs needed.
  std::vector<char> needed(n, 0), forwardValue(n, 0), forwardStep(steps, 0);
  for (const pb::Output &out : p.outputs())
    if (out.name() == "loss")
      needed[base(out.buffer())] = 1;
  for (int s = steps - 1; s >= 0; --s) {
    const pb::Step &step = p.steps(s);
    bool forward = false;
    for (int o : step.outputs())
      forward |= needed[base(o)] != 0;
    if (!forward)
      continue;
    forwardStep[s] = 1;
    bool withGrad = llvm::StringRef(step.op()).ends_with("_with_grad");
    for (int o : step.outputs()) {
      if (!withGrad || needed[base(o)])
        forwardValue[base(o)] = 1;
      needed[base(o)] = 0;
    }
    for (int i : step.inputs())
      needed[base(i)] = 1;
  }
  std::map<std::string, int> forwardSignatures;
  for (int s = 0; s < steps; ++s)
    if (forwardStep[s])
      forwardSignatures[signature(p.steps(s), p)] = s;
  std::vector<char> recomputeStep(steps, 0), readByBackward(n, 0);
  std::vector<int> writer(n, -1);
  for (int s = 0; s < steps; ++s) {
    const pb::Step &step = p.steps(s);
    if (!forwardStep[s]) {
      recomputeStep[s] = forwardSignatures.count(signature(step, p)) > 0;
      for (int i : step.inputs())
        readByBackward[base(i)] = 1;
    }
    for (int o : step.outputs())
      if (writer[o] < 0)
        writer[o] = s;
    a.flops += step.flops();
    int family = int(lmrt::opFamily(plan, step));
    a.familyFlops[family] += step.flops();
    a.familySteps[family] += 1;
  }

  // Live bytes per step and category, as MemoryBudget.cpp's describePeak
  // counts them (views share their buffer's bytes).
  std::vector<mlir::lm::LiveRange> ranges = mlir::lm::computeLiveRanges(p);
  std::vector<Why> why(n, Temporary);
  for (int w = 0; w < 3; ++w)
    a.live[w].assign(steps, 0);
  std::vector<int> counted;
  for (int id = 0; id < n; ++id) {
    const pb::Buffer &b = p.buffers(id);
    if (b.kind() != pb::Buffer::ARENA || b.has_view_of() || ranges[id].first < 0)
      continue;
    counted.push_back(id);
    int s = writer[id];
    why[id] = s >= 0 && recomputeStep[s]                                          ? Recomputed
              : s >= 0 && forwardStep[s] && forwardValue[id] && readByBackward[id] ? Saved
                                                                                   : Temporary;
    for (int64_t t = ranges[id].first; t <= ranges[id].last && t < steps; ++t)
      a.live[why[id]][t] += b.size_bytes();
  }
  int64_t best = -1;
  for (int s = 0; s < steps; ++s) {
    int64_t total = a.live[0][s] + a.live[1][s] + a.live[2][s];
    if (total > best)
      best = total, a.peakStep = s;
  }
  a.peakBytes = std::max<int64_t>(best, 0);
  for (int id : counted)
    if (ranges[id].first <= a.peakStep && a.peakStep <= ranges[id].last) {
      const pb::Buffer &b = p.buffers(id);
      const pb::Step *w = writer[id] >= 0 ? &p.steps(writer[id]) : nullptr;
      a.atPeak.push_back({id, b.size_bytes(), lmrt::planTypeStr(b.type()), w ? w->op() : "?",
                          w && !w->loc().empty() ? w->loc() : "(no source line)", why[id], ranges[id].first,
                          ranges[id].last});
      a.byWhy[why[id]] += b.size_bytes();
    }
  std::stable_sort(a.atPeak.begin(), a.atPeak.end(),
                   [](const Tensor &x, const Tensor &y) { return x.bytes > y.bytes; });
  return a;
}

/// `text` safe inside an XML element (a source path may hold '&' or '<').
std::string xmlEscape(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

std::string flopStr(int64_t flops) {
  const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  double v = double(flops);
  int u = 0;
  while (v >= 1000.0 && u < 5)
    v /= 1000.0, ++u;
  return llvm::formatv("{0:f2} {1}", v, units[u]).str();
}

std::string percent(int64_t part, int64_t whole) {
  return llvm::formatv("{0:f1} %", whole ? 100.0 * double(part) / double(whole) : 0.0).str();
}


std::string precisionOf(const pb::Plan &plan) { return plan.precision().empty() ? "fp32" : plan.precision(); }

/// "data=2, tensor=1" for a plan compiled for a mesh (its figures are one rank's), else "";
/// ", zero=1" follows for a ZeRO plan.
std::string meshOf(const pb::Plan &plan) {
  if (!plan.train().has_mesh()) return "";
  const pb::Mesh &m = plan.train().mesh();
  return "data=" + std::to_string(m.data()) + ", tensor=" + std::to_string(m.tensor()) +
         (m.zero() > 0 ? ", zero=" + std::to_string(m.zero()) : "");
}

/// The optimizer state's row under ZeRO: whose share it is.
std::string zeroNote(const pb::Plan &plan) {
  const pb::Mesh &m = plan.train().mesh();
  if (m.zero() < 1) return "";
  return "ZeRO-" + std::to_string(m.zero()) + ": rank 0's 1/" + std::to_string(m.data()) + " of each parameter's";
}

std::string header(const pb::Plan &plan, const std::string &source, const lmc::ExplainOptions &o) {
  std::string mesh = meshOf(plan);
  return "lmc explain " + source + ": remat " + (plan.remat().empty() ? std::string("none") : plan.remat()) +
         ", fusion " + (o.fusion.empty() ? std::string("auto") : o.fusion) + ", precision " + precisionOf(plan) +
         (mesh.empty() ? "" : ", mesh " + mesh + " (each figure is one rank's)");
}

void printText(const pb::Plan &plan, const std::string &source, const lmc::ExplainOptions &o, const Analysis &a,
               llvm::raw_ostream &os) {
  const lmrt::PredictedMemory &m = a.mem;
  os << header(plan, source, o) << "\n\n";
  os << "memory (the predicted peak lmc prints, term by term):\n";
  auto row = [&](llvm::StringRef what, int64_t bytes, const std::string &note = "") {
    std::string line = llvm::formatv("  {0,-22} {1,-34}", what, describeBytes(bytes)).str() + note;
    os << llvm::StringRef(line).rtrim() << "\n";
  };
  const int64_t zero = plan.train().mesh().zero(), ranks = plan.train().mesh().data();
  row("parameters", m.params,
      groupThousands(plan.param_count()) + " values" +
          (zero >= 3 ? "; ZeRO-3: rank 0's 1/" + std::to_string(ranks) + " of each, gathered in the arena before each use"
                     : ""));
  row("gradients", m.grads,
      zero >= 2 ? "ZeRO-" + std::to_string(zero) + ": rank 0's 1/" + std::to_string(ranks) +
                      ", reduce-scattered by the train step"
                : "");
  row("AdamW state (m, v)", m.optimizer, zeroNote(plan));
  row("inputs (one batch)", m.inputs);
  row("arena", m.arena, "the largest program's: " + a.arenaProgram);
  row("matmul scratch", m.matmulScratch);
  row("loss scratch", m.lossScratch);
  if (m.commScratch > 0) row("communication", m.commScratch, "the collectives' buffers (MPI's own not counted)");
  row("total", m.total(), m.total() == plan.predicted_peak_bytes() ? "= the predicted peak"
                                                                  : "!= the plan's predicted peak " +
                                                                        std::to_string(plan.predicted_peak_bytes()));
  if (!a.train)
    return;
  const pb::Program &p = *a.train;
  const pb::Step &peak = p.steps(a.peakStep);
  os << "\n" << p.name() << " activations at the peak (step " << a.peakStep << " of " << p.steps_size() << ", "
     << peak.op() << (peak.loc().empty() ? "" : " at " + peak.loc()) << "): " << describeBytes(a.peakBytes)
     << " live in " << a.atPeak.size() << " tensors\n";
  int count[3] = {0, 0, 0};
  for (const Tensor &t : a.atPeak)
    ++count[t.why];
  for (int w = 0; w < 3; ++w)
    row(std::string(kWhy[w]) + " (" + std::to_string(count[w]) + ")", a.byWhy[w]);
  row("arena of " + p.name(), p.arena_bytes(),
      "first fit: " + describeBytes(p.arena_bytes() - a.peakBytes) + " more than the live peak");
  // The op column as wide as its longest name (linear_cross_entropy_with_grad).
  size_t opWidth = 2;
  for (const Tensor &t : a.atPeak)
    opWidth = std::max(opWidth, t.op.size());
  auto tensorRow = [&](llvm::StringRef bytes, llvm::StringRef type, llvm::StringRef why, llvm::StringRef op,
                       llvm::StringRef loc) {
    os << "  " << llvm::formatv("{0,-34}{1,-22} {2,-10} ", bytes, type, why) << op
       << std::string(opWidth + 1 - op.size(), ' ') << loc << "\n";
  };
  tensorRow("bytes", "shape", "why", "op", "source");
  for (const Tensor &t : a.atPeak)
    tensorRow(describeBytes(t.bytes), t.type, kWhy[t.why], t.op, t.loc);
  os << "\nFLOPs per step (" << p.name() << "): " << flopStr(a.flops) << "\n";
  for (int f = 0; f < kNumFamilies; ++f)
    os << llvm::formatv("  {0,-12} {1,14}  {2,7}  {3} step(s)", lmrt::opFamilyName(lmrt::OpFamily(f)), flopStr(a.familyFlops[f]),
                        percent(a.familyFlops[f], a.flops), a.familySteps[f])
       << "\n";
  const lmrt::StepTimePrediction &t = a.time;
  auto ms = [](double seconds) { return llvm::formatv("{0:f2} ms", seconds * 1e3).str(); };
  auto share = [&](double seconds) {
    return llvm::formatv("{0:f1} %", t.total() > 0 ? 100.0 * seconds / t.total() : 0.0).str();
  };
  os << "\npredicted step time: " << ms(t.total()) << " (" << p.name() << "'s kernels " << ms(t.kernels)
     << ", the optimizer update " << ms(t.optimizer) << ")\n  rates: " << a.ratesNote << "\n";
  for (int f = 0; f < kNumFamilies; ++f)
    os << llvm::formatv("  {0,-12} {1,14}  {2,7}", lmrt::opFamilyName(lmrt::OpFamily(f)), ms(t.family[f]),
                        share(t.family[f]))
       << "\n";
  os << llvm::formatv("  {0,-12} {1,14}  {2,7}", "optimizer", ms(t.optimizer), share(t.optimizer)) << "\n";
}

void printJson(const pb::Plan &plan, const std::string &source, const lmc::ExplainOptions &o, const Analysis &a,
               llvm::raw_ostream &os) {
  using lmrt::json::quote;
  const lmrt::PredictedMemory &m = a.mem;
  os << "{\"source\": " << quote(source) << ", \"remat\": " << quote(plan.remat().empty() ? "none" : plan.remat())
     << ", \"fusion\": " << quote(o.fusion.empty() ? "auto" : o.fusion)
     << ", \"precision\": " << quote(precisionOf(plan)) << ", \"mesh\": " << quote(meshOf(plan))
     << ", \"predicted_peak_bytes\": " << plan.predicted_peak_bytes() << ",\n \"memory\": {\"param_count\": "
     << plan.param_count() << ", \"params_bytes\": " << m.params << ", \"grads_bytes\": " << m.grads
     << ", \"adamw_bytes\": " << m.optimizer << ", \"inputs_bytes\": " << m.inputs
     << ", \"arena_bytes\": " << m.arena << ", \"arena_program\": " << quote(a.arenaProgram)
     << ", \"matmul_scratch_bytes\": " << m.matmulScratch << ", \"loss_scratch_bytes\": " << m.lossScratch
     << ", \"communication_bytes\": " << m.commScratch << ", \"total_bytes\": " << m.total() << "}";
  if (a.train) {
    const pb::Program &p = *a.train;
    const pb::Step &peak = p.steps(a.peakStep);
    os << ",\n \"train_step\": {\"program\": " << quote(p.name()) << ", \"steps\": " << p.steps_size()
       << ", \"arena_bytes\": " << p.arena_bytes() << ", \"peak_step\": " << a.peakStep
       << ", \"peak_op\": " << quote(peak.op()) << ", \"peak_loc\": " << quote(peak.loc())
       << ", \"peak_live_bytes\": " << a.peakBytes << ", \"saved_bytes\": " << a.byWhy[Saved]
       << ", \"recomputed_bytes\": " << a.byWhy[Recomputed] << ", \"temporary_bytes\": " << a.byWhy[Temporary]
       << ",\n  \"tensors\": [";
    for (size_t i = 0; i < a.atPeak.size(); ++i) {
      const Tensor &t = a.atPeak[i];
      const pb::TensorType &type = p.buffers(t.buffer).type();
      os << (i ? ",\n   " : "\n   ") << "{\"buffer\": " << t.buffer << ", \"type\": " << quote(t.type)
         << ", \"shape\": [";
      for (int d = 0; d < type.shape_size(); ++d)
        os << (d ? ", " : "") << type.shape(d);
      os << "], \"bytes\": " << t.bytes << ", \"why\": \"" << kWhy[t.why] << "\", \"op\": " << quote(t.op)
         << ", \"loc\": " << quote(t.loc) << ", \"live_steps\": [" << t.first << ", " << t.last << "]}";
    }
    os << "]}";
    os << ",\n \"flops\": {\"total\": " << a.flops << ", \"families\": {";
    for (int f = 0; f < kNumFamilies; ++f)
      os << (f ? ", " : "") << "\"" << lmrt::opFamilyName(lmrt::OpFamily(f)) << "\": {\"flops\": " << a.familyFlops[f]
         << ", \"steps\": " << a.familySteps[f] << "}";
    os << "}}";
    const lmrt::StepTimePrediction &t = a.time;
    os << ",\n \"step_time\": {\"predicted_seconds\": " << llvm::formatv("{0:e6}", t.total()).str()
       << ", \"kernels_seconds\": " << llvm::formatv("{0:e6}", t.kernels).str()
       << ", \"optimizer_seconds\": " << llvm::formatv("{0:e6}", t.optimizer).str() << ", \"families\": {";
    for (int f = 0; f < kNumFamilies; ++f)
      os << (f ? ", " : "") << "\"" << lmrt::opFamilyName(lmrt::OpFamily(f))
         << "\": " << llvm::formatv("{0:e6}", t.family[f]).str();
    os << "}, \"rates\": {\"measured\": " << (a.rates.origin.empty() ? "false" : "true")
       << ", \"file\": " << quote(a.rates.origin) << ", \"device\": " << quote(a.rates.device)
       << ", \"threads\": " << a.rates.threads << "}}";
  }
  os << "}\n";
}

/// The train step's live bytes over its steps, stacked: saved activations at
/// the bottom, then recomputed values, then temporaries; the peak marked.
void writeSvg(const Analysis &a, const std::string &title, std::ostream &os) {
  const double W = 900, H = 420, left = 90, right = 20, top = 40, bottom = 50;
  const pb::Program &p = *a.train;
  int steps = std::max(p.steps_size(), 1);
  double maxBytes = std::max<double>(double(a.peakBytes), 1.0);
  auto x = [&](double s) { return left + (W - left - right) * (steps > 1 ? s / (steps - 1) : 0.5); };
  auto y = [&](double bytes) { return top + (H - top - bottom) * (1.0 - bytes / maxBytes); };
  auto fmt = [](double v) { return llvm::formatv("{0:f1}", v).str(); };
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
     << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<title>" << title << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const char *colors[3] = {"#4477aa", "#ccbb44", "#ee6677"};
  std::vector<double> below(p.steps_size(), 0.0);
  for (int w = 0; w < 3; ++w) {
    std::string points;
    for (int s = 0; s < p.steps_size(); ++s)
      points += fmt(x(s)) + "," + fmt(y(below[s] + double(a.live[w][s]))) + " ";
    for (int s = p.steps_size() - 1; s >= 0; --s)
      points += fmt(x(s)) + "," + fmt(y(below[s])) + " ";
    for (int s = 0; s < p.steps_size(); ++s)
      below[s] += double(a.live[w][s]);
    os << "<polygon class=\"" << kWhy[w] << "\" fill=\"" << colors[w] << "\" fill-opacity=\"0.8\" points=\""
       << points << "\"/>\n";
  }
  // Axes, with the byte scale in MiB and the step index.
  os << "<line x1=\"" << left << "\" y1=\"" << fmt(y(0)) << "\" x2=\"" << W - right << "\" y2=\"" << fmt(y(0))
     << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
     << fmt(y(0)) << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double bytes = maxBytes * i / 4;
    os << "<text x=\"" << left - 6 << "\" y=\"" << fmt(y(bytes) + 4) << "\" text-anchor=\"end\">"
       << fmt(bytes / (1024.0 * 1024.0)) << " MiB</text>\n";
    int step = int((steps - 1) * i / 4);
    os << "<text x=\"" << fmt(x(step)) << "\" y=\"" << fmt(y(0) + 16) << "\" text-anchor=\"middle\">" << step
       << "</text>\n";
  }
  os << "<text x=\"" << fmt((left + W - right) / 2) << "\" y=\"" << H - 8
     << "\" text-anchor=\"middle\">step of " << p.name() << "</text>\n";
  os << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">" << title << "</text>\n";
  for (int w = 0; w < 3; ++w)
    os << "<rect x=\"" << W - right - 300 + 100 * w << "\" y=\"10\" width=\"10\" height=\"10\" fill=\""
       << colors[w] << "\"/><text x=\"" << W - right - 286 + 100 * w << "\" y=\"20\">" << kWhy[w] << "</text>\n";
  os << "<g id=\"peak\"><line x1=\"" << fmt(x(a.peakStep)) << "\" y1=\"" << top << "\" x2=\"" << fmt(x(a.peakStep))
     << "\" y2=\"" << fmt(y(0)) << "\" stroke=\"black\" stroke-dasharray=\"4 3\"/>"
     << "<circle cx=\"" << fmt(x(a.peakStep)) << "\" cy=\"" << fmt(y(double(a.peakBytes))) << "\" r=\"4\"/>"
     << "<text x=\"" << fmt(x(a.peakStep) + 6) << "\" y=\"" << top + 12 << "\">peak: step " << a.peakStep << ", "
     << a.peakBytes << " bytes</text></g>\n</svg>\n";
}

/// The machine's rates for the step time: --machine FILE, else the file
/// `lmrt calibrate` writes (contract/cost_model.h, defaultMachineFile) when
/// there is one, else the stated defaults. False (error printed) on a bad file.
bool loadRates(const lmc::ExplainOptions &o, Analysis &a) {
  std::string file = o.machine.empty() ? lmrt::defaultMachineFile() : o.machine;
  if (o.machine.empty() && !llvm::sys::fs::exists(file)) {
    a.rates = lmrt::defaultMachineRates();
    a.ratesNote = "lmc's defaults, not this machine's (no " + file + ": `lmrt calibrate` measures them)";
    return true;
  }
  try {
    a.rates = lmrt::parseMachineRates(lmrt::readWholeFile(file, "machine file", 1 << 20), file);
  } catch (const std::exception &e) {
    llvm::errs() << "lmc: error: " << e.what() << "\n";
    return false;
  }
  a.ratesNote = "measured by lmrt calibrate, " + file + " (" + a.rates.device + ", " +
                std::to_string(a.rates.threads) + " threads)";
  return true;
}

} // namespace

int lmc::explainPlan(const pb::Plan &plan, const std::string &source, const ExplainOptions &options) {
  Analysis a = analyze(plan);
  if (!loadRates(options, a))
    return 1;
  a.time = lmrt::predictStepTime(plan, a.rates);
  if (options.format == "json")
    printJson(plan, source, options, a, llvm::outs());
  else
    printText(plan, source, options, a, llvm::outs());
  if (!options.chart.empty()) {
    if (!a.train) {
      llvm::errs() << "lmc: error: --chart: the plan has no train step\n";
      return 1;
    }
    try {
      lmrt::writeFileAtomic(options.chart, "chart",
                            [&](std::ostream &os) { writeSvg(a, xmlEscape("live memory of " + source), os); });
    } catch (const std::exception &e) {
      llvm::errs() << "lmc: error: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}
