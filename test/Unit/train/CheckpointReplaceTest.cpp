/* Tests the replacement of a checkpoint by one of the same step (a resumed run
   writing again a step it had written before): the swap leaves one complete
   checkpoint and nothing beside it, and a replace killed between the two renames of
   the fallback path (step-N moved to step-N.old, the new one not yet in place) is
   put back by the next run rather than lost with the temporary files. */
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "TempDir.h"
#include "runtime/data/shard.h"
#include "runtime/exec/session.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/train_loop.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;

namespace {

bool isDir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct ScratchRun {
  TempDir d;
  std::string data = d.file("data");
  ScratchRun() {
    mkdir(data.c_str(), 0777);
    std::vector<uint32_t> train, val;
    for (int i = 0; i < 2000; ++i) train.push_back('a' + i % 26);
    for (int i = 0; i < 300; ++i) val.push_back('a' + i % 26);
    writeShard(data + "/train.bin", train, {0});
    writeShard(data + "/val.bin", val, {0});
  }
  std::unique_ptr<Session> session() {
    test::TinyDims dims;
    dims.B = 2, dims.T = 8, dims.V = 256, dims.D = 8;
    return Session::fromPlan(test::tinyPlan(plan::F32, dims), "tiny.plan");
  }
  TrainResult train(int64_t steps, int64_t stopAt, const std::string &resume, const std::string &out) {
    auto s = session();
    TrainOptions o;
    o.planPath = d.file("tiny.plan");
    o.dataDir = data;
    o.steps = steps;
    o.evalBatches = 0;
    o.checkpointDir = resume.empty() ? d.file("ck") : "";
    o.resumePath = resume;
    o.stopAt = stopAt;
    o.outPath = d.file(out);
    FILE *log = std::fopen(d.file("log").c_str(), "a");
    TrainResult r = lmrt::train(*s, o, log);
    std::fclose(log);
    return r;
  }
};

}  // namespace

TEST(CheckpointReplace, SameStepLeavesOneCompleteCheckpoint) {
  ScratchRun run;
  run.train(6, 3, "", "a.safetensors");
  const std::string ck = run.d.file("ck"), step3 = ck + "/step-00000003";
  ASSERT_TRUE(isDir(step3));
  auto s = run.session();
  Checkpoint c = readCheckpoint(step3, *s);
  restoreCheckpoint(c, *s);
  EXPECT_EQ(writeCheckpoint(ck, *s, c.meta), step3);
  EXPECT_FALSE(isDir(step3 + ".tmp"));
  EXPECT_FALSE(isDir(step3 + ".old"));
  EXPECT_NO_THROW(readCheckpoint(step3, *s));
}

TEST(CheckpointReplace, AnInterruptedReplaceIsPutBack) {
  ScratchRun run;
  TrainResult whole = run.train(6, 0, "", "whole.safetensors");
  ScratchRun again;
  again.train(6, 3, "", "a.safetensors");
  const std::string ck = again.d.file("ck"), step3 = ck + "/step-00000003";
  // The fallback replace killed between its renames: only step-N.old is left.
  ASSERT_EQ(std::rename(step3.c_str(), (step3 + ".old").c_str()), 0);
  removeStaleCheckpointTemps(ck, nullptr);
  ASSERT_TRUE(isDir(step3));
  EXPECT_FALSE(isDir(step3 + ".old"));
  again.train(0, 0, ck, "resumed.safetensors");
  EXPECT_TRUE(readFile(run.d.file("whole.safetensors")) == readFile(again.d.file("resumed.safetensors")))
      << "the resumed run's weights differ from the uninterrupted run's";
}
