/* Tests that causal batches are deterministic functions of (seed, step, row),
   stay inside the shard, and that vocabulary and missing-data errors are clear. */
#include <gtest/gtest.h>

#include <set>
#include <sys/stat.h>

#include "TempDir.h"
#include "runtime/data/batches.h"
#include "runtime/data/shard.h"
#include "runtime/data/counter_rng.h"
#include "base/tensor.h"

using namespace lmrt;
using lmrt_test::TempDir;

namespace {

/* DIR with train.bin = tokens 0..n-1 (mod 256) and a small val.bin. */
std::string makeData(const TempDir &d, uint32_t n, uint32_t valN = 50) {
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t(n), v(valN);
  for (uint32_t i = 0; i < n; ++i) t[i] = i % 256;
  for (uint32_t i = 0; i < valN; ++i) v[i] = (i * 7) % 256;
  writeShard(dir + "/train.bin", t, {0});
  writeShard(dir + "/val.bin", v, {0});
  return dir;
}

std::string errorOf(std::function<void()> f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Batches, WindowsAreContiguousInBoundsAndDeterministic) {
  TempDir d;
  std::string dir = makeData(d, 1000);
  CausalBatcher b(dir, 4, 17, 5);
  std::vector<int32_t> x(4 * 17), y(4 * 17), z(4 * 17);
  b.trainBatch(3, x.data());
  CausalBatcher again(dir, 4, 17, 5);
  again.trainBatch(3, y.data());
  EXPECT_EQ(x, y);  // a fresh batcher (a resumed run) sees the same batch
  b.trainBatch(4, z.data());
  EXPECT_NE(x, z);
  for (int r = 0; r < 4; ++r)
    for (int j = 1; j < 17; ++j) EXPECT_EQ(x[r * 17 + j], (x[r * 17 + j - 1] + 1) % 256);
  // Other seeds give other batches.
  CausalBatcher other(dir, 4, 17, 6);
  other.trainBatch(3, z.data());
  EXPECT_NE(x, z);
}

TEST(Batches, OffsetsCoverTheWholeRangeAndNeverOverrun) {
  const uint64_t tokens = 40, window = 17;  // 24 possible starts
  std::set<uint64_t> seen;
  for (uint64_t step = 0; step < 2000; ++step)
    for (uint64_t row = 0; row < 4; ++row) {
      uint64_t s = CausalBatcher::windowStart(1, false, step, row, tokens, window);
      ASSERT_LE(s + window, tokens);
      seen.insert(s);
    }
  EXPECT_EQ(seen.size(), tokens - window + 1);
  // An exact fit has one start.
  EXPECT_EQ(CausalBatcher::windowStart(9, true, 3, 2, window, window), 0u);
}

TEST(Batches, ValidationBatchesAreFixedAndDifferFromTraining) {
  TempDir d;
  std::string dir = makeData(d, 1000, 300);
  CausalBatcher b(dir, 2, 9, 1);
  std::vector<int32_t> v1(18), v2(18), t(18);
  b.valBatch(0, v1.data());
  b.trainBatch(100, t.data());  // training in between changes nothing
  b.valBatch(0, v2.data());
  EXPECT_EQ(v1, v2);
  EXPECT_NE(CausalBatcher::windowStart(1, true, 0, 0, 1 << 20, 9),
            CausalBatcher::windowStart(1, false, 0, 0, 1 << 20, 9));
}

TEST(Batches, VocabularyCheckNamesTokenAndOffset) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t(2000, 5);
  t[1234] = 300;
  writeShard(dir + "/train.bin", t, {0});
  writeShard(dir + "/val.bin", {1, 2, 3}, {0});
  CausalBatcher b(dir, 1, 3, 1);
  std::string e = errorOf([&] { b.checkVocab(256); });
  EXPECT_EQ(e, "data '" + dir + "/train.bin': token 300 at offset 1234 is outside the plan's "
               "vocabulary (256)");
  EXPECT_EQ(errorOf([&] { b.checkVocab(301); }), "");
}

TEST(Batches, MissingOrShortDataIsReported) {
  TempDir d;
  std::string e = errorOf([&] { CausalBatcher(d.file("no-such-dir"), 1, 3, 1); });
  EXPECT_NE(e.find("no-such-dir' does not exist"), std::string::npos) << e;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  e = errorOf([&] { CausalBatcher(dir, 1, 3, 1); });
  EXPECT_NE(e.find("has no train.bin"), std::string::npos) << e;
  writeShard(dir + "/train.bin", {1, 2, 3, 4}, {0});
  e = errorOf([&] { CausalBatcher(dir, 1, 3, 1); });
  EXPECT_NE(e.find("has no val.bin"), std::string::npos) << e;
  writeShard(dir + "/val.bin", {1}, {0});
  e = errorOf([&] { CausalBatcher(dir, 1, 9, 1); });
  EXPECT_NE(e.find("fewer than one window"), std::string::npos) << e;
  CausalBatcher b(dir, 1, 3, 1);
  std::vector<int32_t> out(3);
  e = errorOf([&] { b.valBatch(0, out.data()); });
  EXPECT_NE(e.find("val.bin' has 1 tokens"), std::string::npos) << e;
}

TEST(CounterRng, UniformBelowIsInRangeAndKeysAreOrdered) {
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_LT(uniformBelow(splitmix64(i), 7), 7u);
  EXPECT_EQ(uniformBelow(~0ull, 10), 9u);
  EXPECT_EQ(uniformBelow(0, 10), 0u);
  EXPECT_NE(counterRandom(1, RngStream::Train, 2, 3), counterRandom(1, RngStream::Train, 3, 2));
  EXPECT_NE(counterRandom(1, RngStream::Train, 2, 3), counterRandom(1, RngStream::Val, 2, 3));
  double u = uniform01(~0ull);
  EXPECT_LT(u, 1.0);
}
