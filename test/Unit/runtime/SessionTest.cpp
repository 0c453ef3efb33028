/* Tests the executor: the hand-built bigram plan runs through Session and its
   loss, gradients and logits match a direct computation; inputs are checked at
   the program boundary; kernel failures name the step; outputs are only served
   while valid. */
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test/Unit/ProcessTempDir.h"
#include "contract/plan_file.h"
#include "runtime/exec/session.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

#define EXPECT_HAS(msg, part) EXPECT_NE(std::string(msg).find(part), std::string::npos) << (msg)

struct Reference {
  double loss = 0;
  std::vector<double> logits, dw, dwte;  // logits [B, T, V] of tokens[:, :-1]
};

/* The bigram model computed directly from its definition. */
Reference reference(const std::vector<double> &wte, const std::vector<double> &w,
                    const std::vector<int32_t> &tok, test::TinyDims d) {
  Reference r;
  int64_t N = d.B * d.T;
  r.logits.assign(N * d.V, 0);
  r.dw.assign(d.D * d.V, 0);
  r.dwte.assign(d.V * d.D, 0);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < d.T; ++t) {
      int64_t n = b * d.T + t;
      int32_t id = tok[b * (d.T + 1) + t], target = tok[b * (d.T + 1) + t + 1];
      const double *h = &wte[id * d.D];
      double *z = &r.logits[n * d.V];
      for (int64_t v = 0; v < d.V; ++v)
        for (int64_t k = 0; k < d.D; ++k) z[v] += h[k] * w[k * d.V + v];
      double m = z[0];
      for (int64_t v = 1; v < d.V; ++v) m = std::max(m, z[v]);
      double s = 0;
      for (int64_t v = 0; v < d.V; ++v) s += std::exp(z[v] - m);
      r.loss += (m + std::log(s) - z[target]) / N;
      for (int64_t v = 0; v < d.V; ++v) {
        double g = (std::exp(z[v] - m) / s - (v == target)) / N;  // dloss/dlogit
        for (int64_t k = 0; k < d.D; ++k) {
          r.dw[k * d.V + v] += h[k] * g;
          r.dwte[id * d.D + k] += g * w[k * d.V + v];
        }
      }
    }
  return r;
}

template <typename T> std::vector<double> values(const HostBytes &bytes) {
  std::vector<double> out(bytes.size() / sizeof(T));
  const T *p = reinterpret_cast<const T *>(bytes.data());
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  return out;
}

std::vector<int32_t> someTokens(test::TinyDims d) {
  std::vector<int32_t> tok(d.B * (d.T + 1));
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = (int32_t)((i * 7 + 3) % d.V);
  return tok;
}

TensorRef tokensRef(std::vector<int32_t> &tok, int64_t B, int64_t T) {
  return TensorRef{tok.data(), TensorType{DType::I32, {B, T}}};
}

template <typename T> void expectMatches(plan::DType dt, double tol) {
  test::TinyDims d;
  auto s = Session::fromPlan(test::tinyPlan(dt, d), "tiny.plan");
  s->initParams(42);
  std::vector<int32_t> tok = someTokens(d);
  Reference ref = reference(values<T>(s->param("wte").value), values<T>(s->param("w").value), tok, d);
  ASSERT_GT(ref.loss, 1.0);  // a real loss (~log 5), not a trivially zero one

  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  EXPECT_NEAR(*s->output("train_step", "loss").as<T>(), ref.loss, tol);
  std::vector<double> dw = values<T>(s->param("w").grad), dwte = values<T>(s->param("wte").grad);
  ASSERT_EQ(dw.size(), ref.dw.size());
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], ref.dw[i], tol) << "dw[" << i << "]";
  for (size_t i = 0; i < dwte.size(); ++i) EXPECT_NEAR(dwte[i], ref.dwte[i], tol) << "dwte[" << i << "]";
  TensorRef g = s->output("train_step", "grad:w");
  EXPECT_EQ(g.data, s->param("w").grad.data());

  s->run("eval", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  EXPECT_NEAR(*s->output("eval", "loss").as<T>(), ref.loss, tol);

  std::vector<int32_t> ftok;
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < d.T; ++t) ftok.push_back(tok[b * (d.T + 1) + t]);
  s->run("forward", {{"tokens", tokensRef(ftok, d.B, d.T)}});
  TensorRef logits = s->output("forward", "logits");
  EXPECT_EQ(logits.type.str(), std::string(dt == plan::F64 ? "f64" : "f32") + "[2, 3, 5]");
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_NEAR(logits.as<T>()[i], ref.logits[i], tol);
}

TEST(Session, TrainStepMatchesHandComputationF64) { expectMatches<double>(plan::F64, 1e-12); }
TEST(Session, TrainStepMatchesHandComputationF32) { expectMatches<float>(plan::F32, 1e-5); }

TEST(Session, LoadsFromFile) {
  std::string path = lmrt_test::processTempDir() + "lmrt_session_tiny.plan";
  writePlanFile(path, test::tinyPlan());
  auto s = Session::load(path);
  EXPECT_TRUE(s->hasProgram("forward"));
  EXPECT_FALSE(s->hasProgram("generate"));
  EXPECT_EQ(s->params().size(), 2u);
  EXPECT_EQ(s->input("tokens").vocab(), 5);
  EXPECT_THROW(s->param("nope"), Error);
}

TEST(Session, LoadRejectsInvalidPlan) {
  plan::Plan p = test::tinyPlan();
  test::program(p, "eval")->mutable_steps(2)->set_op("nope");
  try {
    Session::fromPlan(p, "bad.plan");
    FAIL();
  } catch (const Error &e) {
    EXPECT_HAS(e.what(), "plan 'bad.plan': program 'eval', step 2 (nope");
  }
}

TEST(Session, InputsAreChecked) {
  test::TinyDims d;
  auto s = Session::fromPlan(test::tinyPlan(), "tiny.plan");
  std::vector<int32_t> tok = someTokens(d);
  auto msg = [&](const std::map<std::string, TensorRef> &in, const std::string &prog = "eval") {
    try {
      s->run(prog, in);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(ran)");
  };
  EXPECT_HAS(msg({}), "program 'eval': input 'tokens' is missing");
  EXPECT_HAS(msg({{"tokens", tokensRef(tok, d.B + 1, d.T)}}),
             "input 'tokens': expected i32[2, 4], got i32[3, 3]");
  EXPECT_HAS(msg({{"tokens", tokensRef(tok, d.B, d.T + 1)}, {"extra", tokensRef(tok, 1, 1)}}),
             "reads no input 'extra' (it reads: tokens)");
  EXPECT_HAS(msg({{"tokens", tokensRef(tok, d.B, d.T + 1)}}, "generate"), "no program 'generate'");
  tok[6] = 9;
  EXPECT_HAS(msg({{"tokens", tokensRef(tok, d.B, d.T + 1)}}),
             "input 'tokens': id 9 at [1, 2] is outside the vocabulary [0, 5)");
}

TEST(Session, KernelErrorsNameTheStep) {
  // Without a vocab bound ids are not checked at the boundary; the embedding
  // kernel catches the bad id and the session says which step it was.
  plan::Plan p = test::tinyPlan();
  p.mutable_inputs(0)->set_vocab(0);
  for (auto &prog : *p.mutable_programs()) prog.mutable_inputs(0)->set_vocab(0);
  auto s = Session::fromPlan(p, "tiny.plan");
  test::TinyDims d;
  std::vector<int32_t> tok = someTokens(d);
  tok[1] = 77;
  try {
    s->run("eval", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
    FAIL();
  } catch (const Error &e) {
    EXPECT_HAS(e.what(), "plan 'tiny.plan': program 'eval', step 1 (embedding, from tiny.lm:5:3): ");
    EXPECT_HAS(e.what(), "77");
  }
}

TEST(Session, ArenaOutputsExpireWhenAnotherProgramRuns) {
  test::TinyDims d;
  auto s = Session::fromPlan(test::tinyPlan(), "tiny.plan");
  s->initParams(1);
  std::vector<int32_t> tok = someTokens(d);
  EXPECT_THROW(s->output("eval", "loss"), Error);  // never ran
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  EXPECT_NO_THROW(s->output("train_step", "loss"));
  s->run("eval", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  try {
    s->output("train_step", "loss");
    FAIL();
  } catch (const Error &e) {
    EXPECT_HAS(e.what(), "last successful run: 'eval'");
  }
  EXPECT_NO_THROW(s->output("train_step", "grad:wte"));  // gradients persist
  EXPECT_THROW(s->output("eval", "logits"), Error);      // no such output
}

TEST(Session, GradientsAreOverwrittenNotAccumulated) {
  test::TinyDims d;
  auto s = Session::fromPlan(test::tinyPlan(), "tiny.plan");
  s->initParams(3);
  std::vector<int32_t> tok = someTokens(d);
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  HostBytes first = s->param("w").grad;
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  EXPECT_EQ(first, s->param("w").grad);
}

TEST(Session, NonFiniteCheckNamesTheFirstOpOrParameter) {
  test::TinyDims d;
  auto s = Session::fromPlan(test::tinyPlan(plan::F32, d), "tiny.plan");
  s->initParams(1);
  std::vector<int32_t> tok = someTokens(d);
  NonFiniteValue v;
  s->setNonFiniteCheck(&v);
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  EXPECT_FALSE(v.found);  // a healthy step: nothing to report, outputs valid
  EXPECT_NO_THROW(s->output("train_step", "loss"));

  // A parameter that is already non-finite is the cause, named before any op runs on it.
  float *w = reinterpret_cast<float *>(s->param("w").value.data());
  w[3] = std::numeric_limits<float>::infinity();
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  ASSERT_TRUE(v.found);
  EXPECT_EQ(v.program, "train_step");
  EXPECT_HAS(v.tensor, "parameter 'w'");
  EXPECT_EQ(v.element, 3);
  EXPECT_TRUE(std::isinf(v.value));
  EXPECT_THROW(s->output("train_step", "loss"), Error);  // the run stopped there

  // A huge finite value: the first op whose output overflows is named instead.
  w[3] = 3e38f;
  float *wte = reinterpret_cast<float *>(s->param("wte").value.data());
  for (int64_t i = 0; i < s->param("wte").type.numel(); ++i) wte[i] = 3e38f;
  v = NonFiniteValue();
  s->run("train_step", {{"tokens", tokensRef(tok, d.B, d.T + 1)}});
  ASSERT_TRUE(v.found);
  EXPECT_HAS(v.tensor, "output 0");
  EXPECT_FALSE(v.op.empty());
  s->setNonFiniteCheck(nullptr);
}

/* Large host buffers start on a huge page (so THP can back them) and come zeroed;
   small ones keep the 64-byte alignment the kernels' vector loads assume. */
TEST(HostMemory, LargeBuffersStartOnAHugePageSmallOnesOn64Bytes) {
  HostBytes big(kHugePageBytes + 12345, 0), small(100, 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  for (size_t i = 0; i < big.size(); i += 4096) ASSERT_EQ(big[i], 0) << i;
  void *arena = allocHost(3 * kHugePageBytes, 64);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena) % kHugePageBytes, 0u);
  std::free(arena);
}

}  // namespace
}  // namespace lmrt
