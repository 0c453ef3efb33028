/* Implements: `lmrt gradcheck X.plan`: checks the plan's analytic gradients
   (train_step's "grad:<p>" outputs) against central finite differences of the
   loss, in double precision. Parameters are set to deterministic N(0, 0.5^2)
   values (not the plan's init, so zero-initialised biases are exercised too),
   token inputs to random ids below their vocab; up to --max-elems elements per
   parameter are perturbed. Exit status 1 when any element is off. */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "contract/contract.h"
#include "contract/transform_spec.h"
#include "runtime/exec/init.h"
#include "contract/plan_types.h"
#include "runtime/exec/session.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  std::string plan;
  uint64_t seed = 1;
  double eps = 1e-6;
  double rtol = 1e-5;
  double atol = 1e-8;
  int64_t maxElems = 16;
};

/* Random values for every input of `prog`: ids in [0, vocab) for token inputs,
   any 32-bit word for i32 inputs without a bound (random bits); a float input
   that the plan's batch transform fills as a 0/1 mask (attention_mask) gets 0/1
   values, mostly 1 (a normal draw there would give padding biases of +-1e9 that
   saturate every softmax, so the gradients of the attention scores would be
   exactly zero and go unchecked). */
std::map<std::string, std::vector<char>> makeInputs(const plan::Program &prog, const plan::DataConfig &dc,
                                                    uint64_t seed) {
  const data::TransformSpec *spec = data::findTransform(dc.transform());
  std::map<std::string, std::vector<char>> data;
  for (const plan::Input &in : prog.inputs()) {
    TensorType t = toTensorType(in.type());
    std::vector<char> &buf = data[in.name()];
    buf.assign((size_t)t.bytes(), 0);
    TensorRef ref{buf.data(), t};
    uint64_t key = streamKey(seed, "gradcheck-input:" + in.name());
    if (t.dtype == DType::I32) {
      // Without a vocab bound an i32 input takes any value (random bits, for lm.sample).
      int32_t *ids = ref.as<int32_t>();
      const double range = in.vocab() > 0 ? (double)in.vocab() : 4294967296.0;
      for (int64_t i = 0; i < t.numel(); ++i)
        ids[i] = (int32_t)(uint32_t)std::min<int64_t>((int64_t)range - 1, (int64_t)(uniformAt(key, i) * range));
    } else if (const data::TransformOutput *mask = spec ? data::findOutput(*spec, in.name()) : nullptr;
               mask && mask->isFloat) {
      for (int64_t i = 0; i < t.numel(); ++i) {
        double one = uniformAt(key, i) < 0.75 ? 1.0 : 0.0;
        if (t.dtype == DType::F64) ref.as<double>()[i] = one;
        else ref.as<float>()[i] = (float)one;
      }
    } else {
      fillNormal(ref, 0, 1, seed, "gradcheck-input:" + in.name());
    }
  }
  return data;
}

std::map<std::string, TensorRef> refs(const plan::Program &prog,
                                      std::map<std::string, std::vector<char>> &data) {
  std::map<std::string, TensorRef> r;
  for (const plan::Input &in : prog.inputs())
    r[in.name()] = TensorRef{data.at(in.name()).data(), toTensorType(in.type())};
  return r;
}

const plan::Program &program(const plan::Plan &p, const std::string &name) {
  for (const plan::Program &prog : p.programs())
    if (prog.name() == name) return prog;
  fail("plan has no '%s' program", name.c_str());
}

/* Up to `max` distinct element indices of [0, n), chosen deterministically. */
std::vector<int64_t> pickElements(int64_t n, int64_t max, uint64_t key) {
  std::vector<int64_t> idx;
  if (n <= max) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  std::set<int64_t> chosen;
  for (uint64_t draw = 0; (int64_t)chosen.size() < max; ++draw)
    chosen.insert(std::min<int64_t>(n - 1, (int64_t)(uniformAt(key, draw) * n)));
  return std::vector<int64_t>(chosen.begin(), chosen.end());
}

void gradcheck(const Options &o) {
  if (!(o.eps > 0)) fail("gradcheck: --eps must be > 0");
  if (!(o.rtol >= 0) || !(o.atol >= 0)) fail("gradcheck: --rtol and --atol must be >= 0");
  if (o.maxElems < 1) fail("gradcheck: --max-elems must be >= 1");
  std::unique_ptr<Session> s = Session::load(o.plan);
  for (ParamState &p : s->params())
    if (p.type.dtype != DType::F64)
      fail("gradcheck needs an f64 plan, but parameter '%s' is %s; compile it with "
           "`lmc compile --float-type=f64`",
           p.name.c_str(), p.type.str().c_str());

  for (ParamState &p : s->params()) fillNormal(p.valueRef(), 0.0, 0.5, o.seed, "gradcheck:" + p.name);
  const plan::Program &train = program(s->plan(), "train_step");
  auto inputData = makeInputs(train, s->plan().data(), o.seed);
  auto trainInputs = refs(train, inputData);

  s->run("train_step", trainInputs);
  double loss0 = *s->output("train_step", "loss").as<double>();
  if (!std::isfinite(loss0)) fail("gradcheck: the loss at the test point is %g", loss0);
  std::vector<std::vector<double>> analytic;
  for (ParamState &p : s->params()) {
    const double *g = p.gradRef().as<double>();
    analytic.emplace_back(g, g + p.type.numel());
  }

  // Central differences of the eval loss when eval reads the same inputs (no
  // backward pass, so cheaper); its loss must equal train_step's at the start.
  // With dropout, eval drops nothing: train_step's own loss, whose mask the
  // fixed dropout_key input fixes, is differenced instead.
  std::string lossProgram = "train_step";
  if (s->hasProgram("eval") && contract::dataInputs(train).size() == (size_t)train.inputs_size()) {
    const plan::Program &eval = program(s->plan(), "eval");
    bool same = eval.inputs_size() == train.inputs_size();
    for (int i = 0; same && i < eval.inputs_size(); ++i)
      same = eval.inputs(i).name() == train.inputs(i).name() &&
             planTypeStr(eval.inputs(i).type()) == planTypeStr(train.inputs(i).type());
    if (same) {
      s->run("eval", trainInputs);
      double l = *s->output("eval", "loss").as<double>();
      if (std::fabs(l - loss0) > 1e-12 * std::max(1.0, std::fabs(loss0)))
        fail("gradcheck: eval loss %.17g differs from train_step loss %.17g on the same weights and "
             "inputs", l, loss0);
      lossProgram = "eval";
    }
  }
  auto lossAt = [&] {
    s->run(lossProgram, trainInputs);
    return *s->output(lossProgram, "loss").as<double>();
  };

  std::printf("gradcheck %s: loss %.10g, central differences of %s with eps %g; an element is ok "
              "when rel err <= %g or abs err <= %g\n",
              o.plan.c_str(), loss0, lossProgram.c_str(), o.eps, o.rtol, o.atol);
  size_t width = 0;
  for (ParamState &p : s->params()) width = std::max(width, p.name.size());
  int64_t elements = 0, bad = 0;
  double worst = 0, worstAbs = 0;
  for (size_t pi = 0; pi < s->params().size(); ++pi) {
    ParamState &p = s->params()[pi];
    if (p.frozen) {  // no gradient: the train step computes none
      std::printf("  %-*s  %-20s frozen: no gradient\n", (int)width, p.name.c_str(), p.type.str().c_str());
      continue;
    }
    double *w = p.valueRef().as<double>();
    double maxRel = 0, maxAbs = 0;
    int64_t paramBad = 0, worstAt = -1;
    double worstA = 0, worstN = 0;
    std::vector<int64_t> idx = pickElements(p.type.numel(), o.maxElems, streamKey(o.seed, "pick:" + p.name));
    for (int64_t i : idx) {
      double saved = w[i];
      w[i] = saved + o.eps;
      double up = lossAt();
      w[i] = saved - o.eps;
      double down = lossAt();
      w[i] = saved;
      double numeric = (up - down) / (2 * o.eps), a = analytic[pi][i];
      double absErr = std::fabs(a - numeric);
      double rel = absErr / std::max(std::fabs(a) + std::fabs(numeric), 1e-10);
      bool ok = rel <= o.rtol || absErr <= o.atol;
      if (!ok) ++paramBad;
      maxAbs = std::max(maxAbs, absErr);
      if (worstAt < 0 || rel > maxRel) maxRel = rel, worstAt = i, worstA = a, worstN = numeric;
    }
    elements += (int64_t)idx.size();
    bad += paramBad;
    worst = std::max(worst, maxRel);
    worstAbs = std::max(worstAbs, maxAbs);
    std::printf("  %-*s %-18s %3zu elems  max rel err %.3e  max abs err %.3e  (worst rel at %lld: "
                "analytic %.6e, numeric %.6e)%s\n",
                (int)width, p.name.c_str(), p.type.str().c_str(), idx.size(), maxRel, maxAbs,
                (long long)worstAt, worstA, worstN, paramBad ? "  FAILED" : "");
  }
  if (bad) {
    std::printf("gradcheck: FAILED (%lld of %lld elements off, %zu params, max rel err %.3e, max abs "
                "err %.3e)\n",
                (long long)bad, (long long)elements, s->params().size(), worst, worstAbs);
    std::fflush(stdout);
    throw Error("gradcheck failed: " + std::to_string(bad) + " gradient elements disagree with "
                "finite differences");
  }
  std::printf("gradcheck: ok (%zu params, %lld elements, max rel err %.3e, max abs err %.3e)\n",
              s->params().size(), (long long)elements, worst, worstAbs);
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("gradcheck", "Check a plan's gradients against finite differences (f64 plans)");
  auto o = std::make_shared<Options>();
  cmd->add_option("plan", o->plan, "Plan compiled with `lmc compile --float-type=f64`")->required();
  addU64Option(cmd, "--seed", o->seed, "Seed for the test point (parameters, inputs, chosen elements)");
  // A step of 0 divides by zero, one above 1 is no derivative; tolerances of 1 accept anything.
  addRealOption(cmd, "--eps", o->eps, 1e-15, 1, "Finite-difference step");
  addRealOption(cmd, "--rtol", o->rtol, 0, 1, "Relative tolerance |a-n| / (|a|+|n|)");
  addRealOption(cmd, "--atol", o->atol, 0, 1, "Absolute tolerance |a-n| (for gradients near zero)");
  addIntOption(cmd, "--max-elems", o->maxElems, 1, int64_t(1) << 30, "Elements checked per parameter");
  cmd->callback([o] { gradcheck(*o); });
}

RegisterCommand reg("gradcheck", add);

}  // namespace
}  // namespace lmrt
