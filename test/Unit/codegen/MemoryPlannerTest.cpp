//===- MemoryPlannerTest.cpp - Tests of the arena memory planner ----------===//
//
// Tests that assignArenaOffsets places every buffer where the plain statement
// of its rule does (greedy by size, first fit: the lowest 64-byte-aligned
// offset overlapping no placed buffer live at the same time, found by walking
// every placed buffer in offset order), on random programs and on a deep one
// whose live ranges nest as a train step's activations do; and that the plans
// it makes pass verifyMemoryPlan.
//
//===----------------------------------------------------------------------===//
#include "codegen/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using namespace mlir::lm;
namespace plan = lmrt::plan;

namespace {

/// The rule itself, quadratic: the reference the planner must agree with.
std::vector<int64_t> referenceOffsets(const plan::Program &program) {
  std::vector<LiveRange> ranges = computeLiveRanges(program);
  std::vector<int> order;
  for (int id = 0; id < program.buffers_size(); ++id)
    if (program.buffers(id).kind() == plan::Buffer::ARENA && !program.buffers(id).has_view_of())
      order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    int64_t sa = program.buffers(a).size_bytes(), sb = program.buffers(b).size_bytes();
    return sa != sb ? sa > sb : ranges[a].first < ranges[b].first;
  });
  struct Placed {
    int64_t offset, len;
    int id;
  };
  std::vector<Placed> placed;
  std::vector<int64_t> offsets(program.buffers_size(), -1);
  for (int id : order) {
    int64_t size = (program.buffers(id).size_bytes() + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    int64_t offset = 0;
    for (const Placed &p : placed) {
      if (!ranges[p.id].overlaps(ranges[id]))
        continue;
      if (offset + size <= p.offset)
        break;
      offset = std::max(offset, p.offset + p.len);
    }
    offsets[id] = offset;
    Placed entry{offset, size, id};
    auto at = std::upper_bound(placed.begin(), placed.end(), entry, [](const Placed &a, const Placed &b) {
      return a.offset != b.offset ? a.offset < b.offset : a.len < b.len;
    });
    placed.insert(at, entry);
  }
  return offsets;
}

/// A program of `steps` steps whose arena buffer i is written by step first[i]
/// and read by step last[i] (when later): the live ranges are exactly those.
plan::Program makeProgram(int steps, const std::vector<std::pair<int, int>> &live, const std::vector<int64_t> &bytes) {
  plan::Program program;
  program.set_name("p");
  for (int s = 0; s < steps; ++s)
    program.add_steps()->set_op("x");
  for (size_t i = 0; i < live.size(); ++i) {
    plan::Buffer *b = program.add_buffers();
    b->set_kind(plan::Buffer::ARENA);
    b->mutable_type()->set_dtype(plan::F32);
    b->mutable_type()->add_shape(bytes[i] / 4);
    b->set_size_bytes(bytes[i]);
    program.mutable_steps(live[i].first)->add_outputs(static_cast<int>(i));
    if (live[i].second > live[i].first)
      program.mutable_steps(live[i].second)->add_inputs(static_cast<int>(i));
  }
  return program;
}

void expectReferencePlacement(plan::Program program) {
  std::vector<int64_t> want = referenceOffsets(program);
  assignArenaOffsets(program);
  int64_t arena = 0;
  for (int id = 0; id < program.buffers_size(); ++id) {
    ASSERT_EQ(program.buffers(id).offset(), want[id]) << "buffer " << id;
    arena = std::max(arena, want[id] + program.buffers(id).size_bytes());
  }
  EXPECT_GE(program.arena_bytes(), arena);
  EXPECT_EQ(verifyMemoryPlan(program), "");
}

TEST(MemoryPlanner, MatchesFirstFitOnRandomPrograms) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int steps = 1 + static_cast<int>(rng() % 60), n = 1 + static_cast<int>(rng() % 80);
    std::vector<std::pair<int, int>> live;
    std::vector<int64_t> bytes;
    // Few distinct sizes, so that ties and exact fits are common; some empty.
    const int64_t sizes[] = {0, 4, 64, 128, 200, 256, 1000, 4096};
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % steps);
      int last = first + static_cast<int>(rng() % (rng() % 4 == 0 ? steps - first : std::min(4, steps - first)));
      live.push_back({first, last});
      bytes.push_back(sizes[rng() % 8]);
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectReferencePlacement(makeProgram(steps, live, bytes));
  }
}

TEST(MemoryPlanner, MatchesFirstFitOnNestedLiveRanges) {
  // A train step's shape: layer i's activations live from its forward step to
  // its backward step, so they nest and are all live at the turn; a temporary
  // beside each lives one step.
  const int layers = 300, steps = 4 * layers;
  std::vector<std::pair<int, int>> live;
  std::vector<int64_t> bytes;
  for (int i = 0; i < layers; ++i) {
    live.push_back({2 * i, steps - 1 - 2 * i});
    bytes.push_back(i % 3 == 0 ? 4096 : 1024);
    live.push_back({2 * i + 1, 2 * i + 1});
    bytes.push_back(8192);
    live.push_back({steps - 2 - 2 * i, steps - 2 - 2 * i});
    bytes.push_back(2048);
  }
  expectReferencePlacement(makeProgram(steps, live, bytes));
}

} // namespace

namespace {

/// A collective is in flight in lmrt (overlapped) from its step until its result is
/// first read (docs/distributed.md, "Buckets and overlap"): its input is planned live
/// until the step before that read (the end, for an output no step reads), so no step
/// in between takes its bytes; the plain ranges (verifyMemoryPlan's) are unchanged.
TEST(MemoryPlanner, CollectiveInputsLiveUntilTheirResultIsRead) {
  // Buffer 0 (the gradient) written by step 0, all-reduced by step 1 into buffer 1,
  // which step 4 reads; steps 2 and 3 make buffers 2 and 3 of the same size.
  plan::Program program = makeProgram(6, {{0, 1}, {1, 4}, {2, 3}, {3, 5}}, {256, 256, 256, 256});
  program.mutable_steps(1)->set_op("all_reduce");
  EXPECT_EQ(computeLiveRanges(program)[0].last, 1);
  std::vector<LiveRange> planned = computePlanningRanges(program);
  EXPECT_EQ(planned[0].last, 3);  // until step 4 reads the result
  EXPECT_EQ(planned[1].last, 4);
  EXPECT_EQ(planned[2].last, 3);
  assignArenaOffsets(program);
  EXPECT_NE(program.buffers(0).offset(), program.buffers(2).offset());
  EXPECT_NE(program.buffers(0).offset(), program.buffers(3).offset());
  EXPECT_EQ(verifyMemoryPlan(program), "");
  // A result no step reads (a returned gradient): the input lives to the end.
  plan::Program returned = makeProgram(4, {{0, 1}, {1, 1}, {2, 3}}, {256, 256, 256});
  returned.mutable_steps(1)->set_op("all_reduce");
  EXPECT_EQ(computePlanningRanges(returned)[0].last, 3);
  // Read by the very next step: nothing runs in between, nothing changes.
  plan::Program next = makeProgram(4, {{0, 1}, {1, 2}, {2, 3}}, {256, 256, 256});
  next.mutable_steps(1)->set_op("all_gather");
  EXPECT_EQ(computePlanningRanges(next)[0].last, 1);
}

} // namespace

namespace {

/// A parameter's bf16 copy (a cast of a PARAM buffer in the train step) is planned over
/// the whole program, so that it outlives the run (lmrt::paramCopies); a ZeRO-3 slice's
/// cast, which an all_gather reads, is that gather's temporary and is not.
TEST(MemoryPlanner, ParamCopiesButNotGatheredSliceCasts) {
  // Step 0 casts parameter w (buffer 4) into 0; step 1 casts slice s (buffer 5) into 1,
  // which step 2 gathers into 2; step 4 reads 0 and 2 into 3; step 5 ends.
  plan::Program program = makeProgram(6, {{0, 4}, {1, 2}, {2, 4}, {4, 5}}, {256, 128, 256, 256});
  program.set_name("train_step");
  for (int id : {0, 1, 2}) {
    program.mutable_buffers(id)->mutable_type()->set_dtype(plan::BF16);
    program.mutable_buffers(id)->mutable_type()->set_shape(0, program.buffers(id).size_bytes() / 2);
  }
  for (const char *name : {"w", "s"}) {
    plan::Buffer *p = program.add_buffers();
    p->set_kind(plan::Buffer::PARAM);
    p->set_name(name);
    p->mutable_type()->set_dtype(plan::F32);
    p->mutable_type()->add_shape(name[0] == 'w' ? 128 : 64);
  }
  program.mutable_steps(0)->set_op("cast");
  program.mutable_steps(0)->add_inputs(4);
  program.mutable_steps(1)->set_op("cast");
  program.mutable_steps(1)->add_inputs(5);
  program.mutable_steps(2)->set_op("all_gather");
  EXPECT_EQ(lmrt::paramCopies(program), std::vector<int>{0});
  std::vector<LiveRange> planned = computePlanningRanges(program);
  EXPECT_EQ(planned[0].first, 0);
  EXPECT_EQ(planned[0].last, 5);  // the whole program
  EXPECT_EQ(planned[1].last, 3);  // the gather's input, in flight until its result is read
  assignArenaOffsets(program);
  EXPECT_EQ(verifyMemoryPlan(program), "");
  // Other programs keep no copies.
  program.set_name("eval");
  EXPECT_TRUE(lmrt::paramCopies(program).empty());
}

} // namespace
