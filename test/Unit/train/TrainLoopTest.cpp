/* Tests the training loop, the parity dump and generation end to end on the
   runtime's hand-built bigram plan (test/Unit/runtime/TinyPlan.h) with byte
   data: the loss falls, a run is deterministic for its seed, metrics and dump
   files hold what docs/runtime.md promises, and bad data is refused. */
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sys/stat.h>

#include "TempDir.h"
#include "runtime/data/shard.h"
#include "runtime/weights/safetensors.h"
#include "runtime/exec/session.h"
#include "runtime/weights/weights.h"
#include "runtime/train/generate.h"
#include "runtime/train/train_loop.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;

namespace {

/* Text with strong bigram structure: "abcd...xyz " repeated, so a bigram model
   can drive the loss far below ln 256. */
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

std::unique_ptr<Session> byteSession(plan::DType dt = plan::F32, int64_t vocab = 256) {
  test::TinyDims dims;
  dims.B = 4;
  dims.T = 16;
  dims.V = vocab;
  dims.D = 16;
  plan::Plan p = test::tinyPlan(dt, dims);
  p.mutable_train()->mutable_optimizer()->set_lr(0.05);
  p.mutable_train()->mutable_schedule()->set_warmup_steps(5);
  p.mutable_train()->mutable_schedule()->set_min_lr(0.005);
  return Session::fromPlan(p, "tiny.plan");
}

TrainOptions options(const TempDir &d, const std::string &data, int64_t steps) {
  TrainOptions o;
  o.planPath = d.file("tiny.plan");
  o.dataDir = data;
  o.steps = steps;
  o.seed = 3;
  o.evalInterval = 20;
  o.evalBatches = 2;
  o.metricsPath = d.file("m.jsonl");
  return o;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> r;
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    r.push_back(text.substr(i, nl - i));
    i = nl == std::string::npos ? text.size() : nl + 1;
  }
  return r;
}

}  // namespace

TEST(TrainLoop, LossFallsAndOutputsAreWritten) {
  TempDir d;
  std::string data = makeByteData(d);
  auto s = byteSession();
  FILE *log = std::fopen(d.file("log").c_str(), "w");
  TrainResult r = train(*s, options(d, data, 60), log);
  std::fclose(log);
  std::vector<std::string> m = lines(readFile(d.file("m.jsonl")));
  ASSERT_EQ(m.size(), 60u);
  EXPECT_EQ(m[0].rfind("{\"step\": 1, \"loss\": ", 0), 0u) << m[0];
  EXPECT_EQ(m[18].find("val_loss"), std::string::npos);  // step 19: no evaluation
  EXPECT_NE(m[19].find("\"step\": 20"), std::string::npos);
  EXPECT_NE(m[19].find("\"tokens_per_s\": "), std::string::npos);
  EXPECT_NE(m[19].find("\"val_loss\": "), std::string::npos);  // every --eval-interval
  EXPECT_NE(m[59].find("\"val_loss\": "), std::string::npos);  // and at the end
  double first = std::stod(m[0].substr(m[0].find("\"loss\": ") + 8));
  EXPECT_NEAR(first, std::log(256.0), 0.2);  // a fresh model is near uniform
  EXPECT_LT(r.lastLoss, first - 1.0);
  EXPECT_LT(r.lastValLoss, first - 1.0);
  std::string text = readFile(d.file("log"));
  EXPECT_NE(text.find("step  1/60 | loss "), std::string::npos) << text.substr(0, 200);
  EXPECT_NE(text.find("step 20 | val_loss "), std::string::npos);
  EXPECT_NE(text.find("wrote " + d.file("tiny.safetensors")), std::string::npos);
  EXPECT_NE(text.find("memory: peak RSS "), std::string::npos);
  SafetensorsFile w = readSafetensors(d.file("tiny.safetensors"));
  EXPECT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors.at("wte").type.shape, (Shape{256, 16}));
}

/* --profile: every train_step kernel of the plan appears once with its calls per step,
   and the loop phases follow; profiling changes no number of the run. */
TEST(TrainLoop, ProfileListsKernelsAndPhasesWithoutChangingTheRun) {
  TempDir d;
  std::string data = makeByteData(d);
  std::vector<std::string> metrics;
  for (bool profile : {false, true}) {
    auto s = byteSession();
    TrainOptions o = options(d, data, 5);
    o.profile = profile;
    o.overwrite = true;  // the second run replaces the first one's metrics
    FILE *log = std::fopen(d.file("log").c_str(), "w");
    train(*s, o, log);
    std::fclose(log);
    std::string losses;  // every metrics line up to its timing
    for (const std::string &line : lines(readFile(d.file("m.jsonl"))))
      losses += line.substr(0, line.find("\"tokens_per_s\"")) + "\n";
    metrics.push_back(losses);
    std::string text = readFile(d.file("log"));
    if (!profile) {
      EXPECT_EQ(text.find("profile:"), std::string::npos);
      continue;
    }
    ASSERT_NE(text.find("profile: 4 steps, "), std::string::npos) << text;
    const plan::Program *step = nullptr;
    for (const plan::Program &p : s->plan().programs())
      if (p.name() == "train_step") step = &p;
    ASSERT_NE(step, nullptr);
    std::map<std::string, int> calls;
    for (const plan::Step &st : step->steps()) calls[st.op()] += 1;
    for (const auto &[op, n] : calls) {
      // Only matmuls get a transpose suffix; the tiny plan's are plain or transposed.
      if (op == "matmul") continue;
      size_t at = text.find("\n  " + op + " ");
      ASSERT_NE(at, std::string::npos) << op << " missing from\n" << text;
      std::string row = text.substr(at + 3, text.find('\n', at + 1) - at - 3);
      EXPECT_EQ(std::stoi(row.substr(op.size())), n) << row;
    }
    for (const char *phase : {"gradient norm", "clipping + adamw (one pass)", "data (batch)"})
      EXPECT_NE(text.find(phase), std::string::npos) << phase;
  }
  EXPECT_EQ(metrics[0], metrics[1]);
}

TEST(TrainLoop, SameSeedSameWeightsOtherSeedOtherWeights) {
  TempDir d;
  std::string data = makeByteData(d);
  auto run = [&](uint64_t seed, const std::string &out) {
    auto s = byteSession();
    TrainOptions o = options(d, data, 8);
    o.seed = seed;
    o.outPath = d.file(out);
    o.metricsPath = "";
    FILE *log = std::fopen("/dev/null", "w");
    train(*s, o, log);
    std::fclose(log);
    return readFile(d.file(out));
  };
  std::string a = run(11, "a.safetensors"), b = run(11, "b.safetensors"), c = run(12, "c.safetensors");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(TrainLoop, ParityDumpHoldsBatchLossLrGradientsAndParams) {
  TempDir d;
  std::string data = makeByteData(d);
  auto s = byteSession(plan::F64);
  TrainOptions o = options(d, data, 2);
  o.dumpDir = d.file("dump");
  o.evalBatches = 0;
  FILE *log = std::fopen("/dev/null", "w");
  train(*s, o, log);
  std::fclose(log);
  SafetensorsFile init = readSafetensors(d.file("dump/init.safetensors"));
  SafetensorsFile s1 = readSafetensors(d.file("dump/step1.safetensors"));
  SafetensorsFile s2 = readSafetensors(d.file("dump/step2.safetensors"));
  EXPECT_EQ(init.tensors.size(), 2u);
  EXPECT_EQ(s1.tensors.at("tokens").type.str(), "i32[4, 17]");
  EXPECT_EQ(s1.tensors.at("loss").type.str(), "f64[]");
  EXPECT_EQ(s1.tensors.at("lr").type.str(), "f64[]");
  double lr1, lr2;
  std::memcpy(&lr1, s1.tensors.at("lr").bytes.data(), 8);
  std::memcpy(&lr2, s2.tensors.at("lr").bytes.data(), 8);
  EXPECT_DOUBLE_EQ(lr1, 0.05 * 1 / 6);  // warmup 5: lr * (s + 1) / (W + 1)
  EXPECT_DOUBLE_EQ(lr2, 0.05 * 2 / 6);
  // The step-1 parameters are init moved by one AdamW update: after the weight decay,
  // lr * g / (|g| + eps) per element (with g clipped), so lr * sign(g) where |g| >> eps.
  const double *p0 = (const double *)init.tensors.at("w").bytes.data();
  const double *p1 = (const double *)s1.tensors.at("param.w").bytes.data();
  const double *g1 = (const double *)s1.tensors.at("grad.w").bytes.data();
  int64_t n = s1.tensors.at("param.w").type.numel(), large = 0;
  for (int64_t i = 0; i < n; ++i) {
    large += std::fabs(g1[i]) > 1e-3;
    double moved = p0[i] * (1 - lr1 * 0.1) - p1[i];
    EXPECT_LE(std::fabs(moved), lr1 * (1 + 1e-12)) << i;
    if (std::fabs(g1[i]) > 1e-3) {
      EXPECT_NEAR(moved, lr1 * (g1[i] > 0 ? 1 : -1), lr1 * 1e-4) << i;
    }
  }
  EXPECT_GT(large, 10);
}

TEST(TrainLoop, RefusesTokensOutsideTheVocabulary) {
  TempDir d;
  std::string data = makeByteData(d);
  auto s = byteSession(plan::F32, 64);
  try {
    FILE *log = std::fopen("/dev/null", "w");
    train(*s, options(d, data, 1), log);
    std::fclose(log);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "data '" + data + "/train.bin': token 97 at offset 0 is outside the plan's vocabulary (64)");
  }
  TrainOptions o = options(d, d.file("missing"), 1);
  EXPECT_THROW(train(*s, o, stdout), Error);
}

TEST(Generate, IsDeterministicAndLearnsTheAlphabet) {
  TempDir d;
  std::string data = makeByteData(d);
  auto s = byteSession();
  TrainOptions o = options(d, data, 150);
  o.evalBatches = 0;
  FILE *log = std::fopen("/dev/null", "w");
  train(*s, o, log);
  std::fclose(log);
  auto sample = [&](uint64_t seed, double temperature) {
    auto fresh = byteSession();
    loadWeights(*fresh, d.file("tiny.safetensors"));
    SampleOptions so;
    so.prompt = "abc";
    so.tokens = 20;
    so.seed = seed;
    so.temperature = temperature;
    std::string out;
    generate(*fresh, so, [&](unsigned char c) { out += (char)c; return true; });
    return out;
  };
  EXPECT_EQ(sample(1, 0.8), sample(1, 0.8));
  EXPECT_EQ(sample(1, 0.0).substr(0, 5), "defgh");  // greedy follows the learned bigrams
}
