/* Tests, without a GPU, the chunk table of the CUDA backend's elementwise optimizers
   (runtime/cuda/zero_chunks.h): whole parameters without ZeRO; for each ZeRO rank its
   slices, the same as the CPU backend's ZeroShards (so checkpoints are
   interchangeable), every element updated by exactly one rank, and each rank's state
   packed without overlap; under ZeRO stage 2 each element's gradient where the train
   step's reduce-scatter leaves it (contract/zero3.h's padded slice); the gradient norm's
   blocks. Sizes around the chunk size, uneven and empty slices, a frozen parameter. */
#include <gtest/gtest.h>

#include <vector>

#include "contract/zero3.h"
#include "runtime/cpu/zero_shards.h"
#include "runtime/cuda/zero_chunks.h"

namespace lmrt::cuda {
namespace {

constexpr int64_t kAlignElems = 64;  // 256 bytes of f32, as the backend aligns

/* Parameters laid out as the backend lays them: each at an aligned offset. */
std::vector<ChunkParam> layout(const std::vector<int64_t> &sizes, const std::vector<bool> &frozen) {
  std::vector<ChunkParam> ps;
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ps.push_back({at, sizes[i], frozen[i], i % 2 == 0, i == 1 ? 0.5 : 1.0});
    at += (sizes[i] + kAlignElems - 1) / kAlignElems * kAlignElems;
  }
  return ps;
}

const std::vector<int64_t> kSizes = {0, 1, 7, 1000, 65536, 65537, 200003, 33};
const std::vector<bool> kFrozen = {false, false, false, false, false, false, false, true};

TEST(ZeroChunks, WholeParametersWithoutZero) {
  const std::vector<ChunkParam> ps = layout(kSizes, kFrozen);
  const ChunkTable t = elementwiseChunks(ps, 0, 1, kAlignElems);
  // The table the backend built before ZeRO: chunks of 64 Ki from each trainable parameter's start.
  std::vector<AdamWChunk> expected;
  for (const ChunkParam &p : ps)
    for (int64_t b = 0; !p.frozen && b < p.numel; b += kChunkElems)
      expected.push_back({p.offset + b, p.offset + std::min(p.numel, b + kChunkElems), p.decay ? 1 : 0, p.lrScale});
  ASSERT_EQ(t.chunks.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(t.chunks[k].begin, expected[k].begin) << k;
    EXPECT_EQ(t.chunks[k].end, expected[k].end) << k;
    EXPECT_EQ(t.chunks[k].decay, expected[k].decay) << k;
    EXPECT_EQ(t.chunks[k].lrScale, expected[k].lrScale) << k;
    EXPECT_EQ(t.chunks[k].stateShift, 0) << k;  // the state has the parameters' layout
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(t.stateOffset[i], ps[i].offset);
    EXPECT_EQ(t.slices[i].begin, 0);
    EXPECT_EQ(t.slices[i].end, ps[i].numel);
  }
}

TEST(ZeroChunks, RanksSliceAsTheCpuAndCoverEveryElementOnce) {
  const std::vector<ChunkParam> ps = layout(kSizes, kFrozen);
  const int64_t flat = ps.back().offset + ps.back().numel;
  // The CPU's ZeroShards over host buffers of the same sizes.
  std::vector<std::vector<float>> values(ps.size()), grads(ps.size());
  std::vector<ParamView> views;
  for (size_t i = 0; i < ps.size(); ++i) {
    values[i].resize((size_t)ps[i].numel + 1), grads[i].resize((size_t)ps[i].numel + 1);
    views.push_back({DType::F32, values[i].data(), grads[i].data(), ps[i].numel, ps[i].decay, ps[i].frozen,
                     ps[i].lrScale, false, {ps[i].numel}});
  }
  for (int ranks = 2; ranks <= 5; ++ranks) {
    std::vector<int> updates((size_t)flat, 0);
    for (int rank = 0; rank < ranks; ++rank) {
      const ChunkTable t = elementwiseChunks(ps, rank, ranks, kAlignElems);
      const cpu::ZeroShards cpuShards(views, rank, ranks, 1);
      std::vector<int> stateUse((size_t)t.stateElems, 0);
      int64_t packed = 0;
      for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(t.slices[i].begin, cpuShards.range(i).begin) << ranks << " ranks, rank " << rank << ", param " << i;
        EXPECT_EQ(t.slices[i].end, cpuShards.range(i).end) << ranks << " ranks, rank " << rank << ", param " << i;
        EXPECT_EQ(t.stateOffset[i], packed) << "slices packed in parameter order";
        EXPECT_EQ(t.stateOffset[i] % kAlignElems, 0);
        packed += (t.slices[i].size() + kAlignElems - 1) / kAlignElems * kAlignElems;
      }
      EXPECT_EQ(t.stateElems, packed);
      for (const AdamWChunk &c : t.chunks) {
        ASSERT_LT(c.begin, c.end);
        ASSERT_LE(c.end - c.begin, kChunkElems);
        // The chunk lies in one parameter's slice of this rank, its state in that slice's.
        size_t owner = ps.size();
        for (size_t i = 0; i < ps.size(); ++i)
          if (c.begin >= ps[i].offset + t.slices[i].begin && c.end <= ps[i].offset + t.slices[i].end) owner = i;
        ASSERT_LT(owner, ps.size()) << "chunk [" << c.begin << ", " << c.end << ") of rank " << rank;
        EXPECT_FALSE(ps[owner].frozen);
        EXPECT_EQ(c.decay, ps[owner].decay ? 1 : 0);
        EXPECT_EQ(c.lrScale, ps[owner].lrScale);
        EXPECT_EQ(c.begin - c.stateShift - t.stateOffset[owner], c.begin - ps[owner].offset - t.slices[owner].begin);
        for (int64_t e = c.begin; e < c.end; ++e) {
          ++updates[(size_t)e];
          const int64_t s = e - c.stateShift;
          ASSERT_GE(s, 0);
          ASSERT_LT(s, t.stateElems);
          ++stateUse[(size_t)s];
        }
      }
      for (int u : stateUse) ASSERT_LE(u, 1) << "two elements share a state element on rank " << rank;
    }
    for (size_t i = 0; i < ps.size(); ++i)
      for (int64_t e = 0; e < ps[i].numel; ++e)
        ASSERT_EQ(updates[(size_t)(ps[i].offset + e)], ps[i].frozen ? 0 : 1)
            << ranks << " ranks: parameter " << i << " element " << e;
  }
}

/* Rank 0's state is the largest (ceil(n / D) of every parameter): what lmc predicts. */
TEST(ZeroChunks, RankZeroKeepsTheLargestState) {
  const std::vector<ChunkParam> ps = layout(kSizes, kFrozen);
  for (int ranks = 2; ranks <= 5; ++ranks) {
    const int64_t zero = elementwiseChunks(ps, 0, ranks, 1).stateElems;
    int64_t all = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      const int64_t mine = elementwiseChunks(ps, rank, ranks, 1).stateElems;
      EXPECT_LE(mine, zero);
      all += mine;
    }
    int64_t total = 0;
    for (const ChunkParam &p : ps) total += p.numel;
    EXPECT_EQ(all, total) << "unaligned, the ranks' states add up to the parameters";
  }
}

/* Stage 2: the train step leaves rank r the padded slice [ceil(n / D)] of each gradient, its
   element j being element r * ceil(n / D) + j of the whole (the reduce-scatter's part r), and
   the backend packs those slices one after another (aligned). Each updated element must read
   its own gradient element there, within its parameter's slice, and nothing else moves: the
   slices, the state and the decay flags are stage 1's. */
TEST(ZeroChunks, StageTwoReadsEachGradientFromTheRanksSlice) {
  for (int ranks = 2; ranks <= 5; ++ranks)
    for (int rank = 0; rank < ranks; ++rank) {
      std::vector<ChunkParam> ps = layout(kSizes, kFrozen);
      std::vector<int64_t> gradAt;
      int64_t grads = 0;
      for (ChunkParam &p : ps) {
        p.gradSlice = grads;
        gradAt.push_back(grads);
        grads += (zeroSliceLength(p.numel, ranks) + kAlignElems - 1) / kAlignElems * kAlignElems;
      }
      const ChunkTable t = elementwiseChunks(ps, rank, ranks, kAlignElems);
      const ChunkTable stage1 = elementwiseChunks(layout(kSizes, kFrozen), rank, ranks, kAlignElems);
      ASSERT_EQ(t.chunks.size(), stage1.chunks.size());
      std::vector<int> read((size_t)grads, 0);
      for (size_t k = 0; k < t.chunks.size(); ++k) {
        const AdamWChunk &c = t.chunks[k];
        EXPECT_EQ(c.begin, stage1.chunks[k].begin);
        EXPECT_EQ(c.end, stage1.chunks[k].end);
        EXPECT_EQ(c.stateShift, stage1.chunks[k].stateShift);
        EXPECT_EQ(stage1.chunks[k].gradShift, 0) << "whole gradients: the parameters' layout";
        size_t owner = ps.size();
        for (size_t i = 0; i < ps.size(); ++i)
          if (c.begin >= ps[i].offset && c.end <= ps[i].offset + ps[i].numel) owner = i;
        ASSERT_LT(owner, ps.size());
        const int64_t padded = zeroSliceLength(ps[owner].numel, ranks);
        for (int64_t e = c.begin; e < c.end; ++e) {
          const int64_t whole = e - ps[owner].offset;                    // element of the whole gradient
          const int64_t j = whole - (int64_t)rank * padded;               // its place in rank's padded slice
          ASSERT_GE(j, 0) << ranks << " ranks, rank " << rank << ": element " << whole << " is not the rank's";
          ASSERT_LT(j, padded);
          ASSERT_EQ(e - c.gradShift, gradAt[owner] + j) << ranks << " ranks, rank " << rank << ", param " << owner;
          ++read[(size_t)(e - c.gradShift)];
        }
      }
      for (int r : read) ASSERT_LE(r, 1);
    }
}

/* The gradient norm's blocks cover each parameter's counted elements exactly once, in order,
   in blocks of at most kChunkElems that never straddle two parameters. */
TEST(ZeroChunks, NormBlocksCoverEachGradient) {
  const std::vector<int64_t> at = {0, 64, 128, 70000, 200000, 400000};
  const std::vector<int64_t> count = {0, 1, 65536, 65537, 131072 + 5, 33};
  const NormBlocks t = normBlocks(at, count);
  ASSERT_EQ(t.first.size(), at.size() + 1);
  EXPECT_EQ(t.first.back(), (int64_t)t.blocks.size());
  for (size_t i = 0; i < at.size(); ++i) {
    int64_t next = at[i];
    for (int64_t b = t.first[i]; b < t.first[i + 1]; ++b) {
      const NormBlock &k = t.blocks[(size_t)b];
      EXPECT_EQ(k.begin, next) << "parameter " << i << ", block " << b;
      EXPECT_LT(k.begin, k.end);
      EXPECT_LE(k.end - k.begin, kChunkElems);
      next = k.end;
    }
    EXPECT_EQ(next, at[i] + count[i]) << "parameter " << i;
    EXPECT_EQ(t.first[i + 1] - t.first[i], (count[i] + kChunkElems - 1) / kChunkElems);
  }
}

/* The parameters of kSizes as a rank of `ranks` binds them at `stage` (session.cpp with
   contract/zero3.h): stage 3 binds the padded slices, stages 2 and 3 the gradients' slices. */
std::vector<LayoutParam> bound(int stage, int ranks) {
  std::vector<LayoutParam> ps;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    const int64_t n = kSizes[i], slice = n == 0 ? 0 : zeroSliceLength(n, ranks);
    ps.push_back({stage >= 3 ? slice : n, stage >= 2 ? slice : n, n, kFrozen[i], i % 2 == 0, i == 1 ? 0.5 : 1.0});
  }
  return ps;
}

/* Without ZeRO, and under stage 1, the gradients have the parameters' layout and the chunks
   are elementwiseChunks' of the whole parameters (stage 1: of the rank's slices). */
TEST(ZeroChunks, FlatLayoutWithoutZeroAndStageOne) {
  const FlatLayout none = flatLayout(bound(0, 1), 0, 0, 1, kAlignElems);
  EXPECT_EQ(none.gradOffset, none.paramOffset);
  EXPECT_EQ(none.gradElems, none.paramElems);
  const ChunkTable whole = elementwiseChunks(layout(kSizes, kFrozen), 0, 1, kAlignElems);
  ASSERT_EQ(none.chunks.chunks.size(), whole.chunks.size());
  for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(none.paramOffset[i], layout(kSizes, kFrozen)[i].offset);
  for (int ranks = 2; ranks <= 5; ++ranks)
    for (int rank = 0; rank < ranks; ++rank) {
      const FlatLayout one = flatLayout(bound(1, ranks), 1, rank, ranks, kAlignElems);
      const ChunkTable t = elementwiseChunks(layout(kSizes, kFrozen), rank, ranks, kAlignElems);
      EXPECT_EQ(one.gradOffset, one.paramOffset);
      ASSERT_EQ(one.chunks.chunks.size(), t.chunks.size());
      for (size_t k = 0; k < t.chunks.size(); ++k) {
        EXPECT_EQ(one.chunks.chunks[k].begin, t.chunks[k].begin);
        EXPECT_EQ(one.chunks.chunks[k].stateShift, t.chunks[k].stateShift);
        EXPECT_EQ(one.chunks.chunks[k].gradShift, 0);
      }
      EXPECT_EQ(one.chunks.stateElems, t.stateElems);
    }
}

/* Stage 2: the gradients are the padded slices, packed; every trainable element reads its
   gradient where the reduce-scatter leaves it; the log's counts are the CPU's. */
TEST(ZeroChunks, FlatLayoutStageTwo) {
  for (int ranks = 2; ranks <= 5; ++ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      const std::vector<LayoutParam> ps = bound(2, ranks);
      const FlatLayout l = flatLayout(ps, 2, rank, ranks, kAlignElems);
      int64_t grads = 0;
      for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(l.gradOffset[i], grads) << "slices packed in parameter order";
        grads += (ps[i].gradNumel + kAlignElems - 1) / kAlignElems * kAlignElems;
      }
      EXPECT_EQ(l.gradElems, grads);
      for (const AdamWChunk &c : l.chunks.chunks) {
        size_t owner = ps.size();
        for (size_t i = 0; i < ps.size(); ++i)
          if (c.begin >= l.paramOffset[i] && c.end <= l.paramOffset[i] + ps[i].numel) owner = i;
        ASSERT_LT(owner, ps.size());
        for (int64_t e = c.begin; e < c.end; ++e) {
          const int64_t j = e - l.paramOffset[owner] - (int64_t)rank * ps[owner].gradNumel;
          ASSERT_GE(j, 0);
          ASSERT_LT(j, zeroShard(ps[owner].numel, ranks, rank).size()) << "an element of the rank's slice";
          ASSERT_EQ(e - c.gradShift, l.gradOffset[owner] + j);
        }
      }
      int64_t mine = 0, all = 0;
      for (size_t i = 0; i < ps.size(); ++i) mine += zeroShard(ps[i].numel, ranks, rank).size(), all += ps[i].numel;
      EXPECT_EQ(l.mine, mine);
      EXPECT_EQ(l.all, all);
    }
  }
}

/* Stage 3: the parameters are the padded slices, updated whole (no state shift, no gradient
   shift, padding included: its zeros stay zeros), the gradients in their layout; the log
   counts the logical tensors. */
TEST(ZeroChunks, FlatLayoutStageThree) {
  for (int ranks = 2; ranks <= 5; ++ranks) {
    int64_t mine = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      const std::vector<LayoutParam> ps = bound(3, ranks);
      const FlatLayout l = flatLayout(ps, 3, rank, ranks, kAlignElems);
      EXPECT_EQ(l.gradOffset, l.paramOffset);
      EXPECT_EQ(l.gradElems, l.paramElems);
      int64_t updated = 0;
      for (const AdamWChunk &c : l.chunks.chunks) {
        EXPECT_EQ(c.stateShift, 0);
        EXPECT_EQ(c.gradShift, 0);
        updated += c.end - c.begin;
      }
      int64_t slices = 0;
      for (size_t i = 0; i < ps.size(); ++i) {
        slices += ps[i].frozen ? 0 : ps[i].numel;
      }
      EXPECT_EQ(updated, slices) << "every element of every trainable slice, padding too";
      mine += l.mine;
      int64_t all = 0;
      for (const LayoutParam &p : ps) all += p.logicalNumel;
      EXPECT_EQ(l.all, all);
    }
    int64_t all = 0;
    for (int64_t n : kSizes) all += n;
    EXPECT_EQ(mine, all) << ranks << " ranks keep every logical element once";
  }
  EXPECT_THROW(flatLayout(bound(3, 2), 3, 2, 2, kAlignElems), Error);
}

}  // namespace
}  // namespace lmrt::cuda
