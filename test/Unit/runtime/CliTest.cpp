/* Tests the `lmrt` command line on hand-built plans: inspect prints a summary,
   gradcheck passes on correct gradients and fails (exit 1) on wrong ones, and
   bad input ends in "lmrt: error: ..." with a non-zero status, never a crash. */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "test/Unit/ProcessTempDir.h"
#include "contract/plan_file.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

struct Result {
  int status;
  std::string out;  // stdout and stderr
};

// ctest runs each test as its own process, two at a time: files a test writes
// carry its name, so concurrent tests never read each other's output or plans.
std::string testFile(const std::string &name) {
  return lmrt_test::processTempDir() + "lmrt_cli_" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + name;
}

Result lmrtRun(const std::string &args) {
  std::string outPath = testFile("out");
  int rc = std::system((std::string(LMRT_BIN) + " " + args + " > " + outPath + " 2>&1").c_str());
  std::ifstream f(outPath);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), ss.str()};
}

std::string planFile(const std::string &name, const plan::Plan &p) {
  std::string path = testFile(name);
  writePlanFile(path, p);
  return path;
}

TEST(Cli, Inspect) {
  Result r = lmrtRun("inspect " + planFile("tiny.plan", test::tinyPlan()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_HAS(r.out, "params: 2 tensors, 40 elements");
  EXPECT_HAS(r.out, "wte  f64[5, 4]");
  EXPECT_HAS(r.out, "train_step    11 steps");
  EXPECT_HAS(r.out, "data: causal, batch 2, seq 3, vocab 5");
  EXPECT_HAS(r.out, "plan ok");
}

TEST(Cli, GradcheckPasses) {
  Result r = lmrtRun("gradcheck " + planFile("tiny64.plan", test::tinyPlan()) + " --seed 3 --max-elems 8");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_HAS(r.out, "gradcheck: ok (2 params, 16 elements, max rel err");
}

TEST(Cli, GradcheckCatchesWrongGradients) {
  // dloss = 2 instead of 1: every gradient is twice what it should be.
  plan::Plan p = test::tinyPlan();
  for (auto &b : *test::program(p, "train_step")->mutable_buffers())
    if (b.kind() == plan::Buffer::CONSTANT) {
      double two = 2.0;
      b.set_data(std::string(reinterpret_cast<const char *>(&two), 8));
    }
  Result r = lmrtRun("gradcheck " + planFile("wrong.plan", p));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_HAS(r.out, "gradcheck: FAILED (");
  EXPECT_HAS(r.out, "max rel err 3.333e-01");  // (2g - g) / (2g + g)
  EXPECT_HAS(r.out, "lmrt: error: gradcheck failed");
}

TEST(Cli, GradcheckNeedsF64) {
  Result r = lmrtRun("gradcheck " + planFile("tiny32.plan", test::tinyPlan(plan::F32)));
  EXPECT_EQ(r.status, 1);
  EXPECT_HAS(r.out, "lmrt: error: gradcheck needs an f64 plan, but parameter 'wte' is f32[5, 4]; "
                    "compile it with `lmc compile --float-type=f64`");
}

TEST(Cli, BadInputIsAnErrorNotACrash) {
  Result missing = lmrtRun("inspect /nonexistent/x.plan");
  EXPECT_EQ(missing.status, 1);
  EXPECT_HAS(missing.out, "lmrt: error: cannot open plan '/nonexistent/x.plan'");

  std::string garbage = testFile("garbage.plan");
  std::ofstream(garbage) << "definitely not a plan";
  Result bad = lmrtRun("inspect " + garbage);
  EXPECT_EQ(bad.status, 1);
  EXPECT_HAS(bad.out, "is not an LMC plan");

  plan::Plan p = test::tinyPlan();
  test::program(p, "eval")->mutable_steps(2)->set_op("nope");
  Result invalid = lmrtRun("inspect " + planFile("invalid.plan", p));
  EXPECT_EQ(invalid.status, 1);
  EXPECT_HAS(invalid.out, "program 'eval', step 2 (nope, from tiny.lm:6:5): no kernel for op 'nope'");

  Result flag = lmrtRun("gradcheck --eps");
  EXPECT_NE(flag.status, 0);
  EXPECT_LT(flag.status, 128) << "crashed: " << flag.out;
  Result none = lmrtRun("");
  EXPECT_NE(none.status, 0);
  EXPECT_HAS(none.out, "subcommand");
}

}  // namespace
}  // namespace lmrt
