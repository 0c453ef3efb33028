/* Tests where a tensor-parallel rank's slice lies in the logical tensor
   (runtime/exec/shard_layout.h): against index arithmetic written out here, for a
   column split, a packed q|k|v split (segments) and a row split; slicing then
   placing every rank's slice rebuilds the tensor; mismatched types are refused; a
   padded split (a vocabulary the ranks do not divide) holds zeros past the logical
   size. And ZeRO stage 3's padded slices of the flattened tensor. */
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "runtime/exec/shard_layout.h"

namespace lmrt {
namespace {

plan::ParamSharding sharding(int64_t dim, int64_t segments, int64_t shards) {
  plan::ParamSharding s;
  s.set_dim(dim);
  s.set_segments(segments);
  s.set_mesh_axis(1);
  s.set_shards(shards);
  return s;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = (float)i;
  return v;
}

TEST(ShardLayout, PackedColumnsGiveEachRankItsBlockOfEverySegment) {
  // A [2, 12] logical q|k|v (3 segments of 4 columns) over 2 ranks: rank r holds
  // columns 2r..2r+1 of each segment, in segment order.
  const plan::ParamSharding s = sharding(1, 3, 2);
  const TensorType local{DType::F32, {2, 6}};
  EXPECT_EQ(logicalType(local, s).str(), "f32[2, 12]");
  std::vector<float> whole = iota(24), part(12);
  TensorRef logical{whole.data(), logicalType(local, s)};
  for (int64_t r = 0; r < 2; ++r) {
    sliceShard(s, logical, TensorRef{part.data(), local}, r);
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t seg = 0; seg < 3; ++seg)
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(part[(size_t)(row * 6 + seg * 2 + c)], (float)(row * 12 + seg * 4 + r * 2 + c))
              << "rank " << r << " row " << row << " segment " << seg << " column " << c;
  }
}

TEST(ShardLayout, RowsSplitAndPlacingEveryRankRebuildsTheTensor) {
  for (const auto &[dim, segments, shards, shape] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, Shape>>{{0, 1, 2, {3, 5}},  // rows of [6, 5]
                                                                 {1, 3, 4, {2, 3}},  // q|k|v of [2, 12]
                                                                 {0, 1, 3, {4}}}) {  // a bias of 12
    const plan::ParamSharding s = sharding(dim, segments, shards);
    const TensorType local{DType::F32, shape}, whole = logicalType(local, s);
    std::vector<float> src = iota(whole.numel()), rebuilt((size_t)whole.numel(), -1.f), part((size_t)local.numel());
    for (int64_t r = 0; r < shards; ++r) {
      sliceShard(s, TensorRef{src.data(), whole}, TensorRef{part.data(), local}, r);
      placeShard(s, TensorRef{part.data(), local}, TensorRef{rebuilt.data(), whole}, r);
    }
    EXPECT_EQ(rebuilt, src) << whole.str();
  }
  // Rows: rank 1 of 2 holds rows 3..5 of a [6, 5].
  const plan::ParamSharding rows = sharding(0, 1, 2);
  std::vector<float> src = iota(30), part(15);
  sliceShard(rows, TensorRef{src.data(), TensorType{DType::F32, {6, 5}}},
             TensorRef{part.data(), TensorType{DType::F32, {3, 5}}}, 1);
  EXPECT_EQ(part[0], 15.f);
  EXPECT_EQ(part[14], 29.f);
}

TEST(ShardLayout, RefusesTypesThatDoNotMatch) {
  const plan::ParamSharding s = sharding(1, 1, 2);
  std::vector<float> a(24), b(12);
  // A logical [2, 10] is not two [2, 6] slices.
  EXPECT_THROW(sliceShard(s, TensorRef{a.data(), TensorType{DType::F32, {2, 10}}},
                          TensorRef{b.data(), TensorType{DType::F32, {2, 6}}}, 0),
               Error);
  EXPECT_THROW(sliceShard(s, TensorRef{a.data(), TensorType{DType::F32, {2, 12}}},
                          TensorRef{b.data(), TensorType{DType::F32, {2, 6}}}, 2),
               Error);
  EXPECT_THROW(logicalType(TensorType{DType::F32, {2, 5}}, sharding(1, 3, 2)), Error);
}

/* A padded split (logical_size: a vocabulary the ranks do not divide): blocks of
   ceil(size / shards), rank r's covering [r b, min((r + 1) b, size)); the tail of the
   last block is zeros when cut and never placed. Rows of a [7, 2] table over 2 ranks
   (blocks of 4) and columns of a [2, 7] head over 3 ranks (blocks of 3: 3, 3, 1). */
TEST(ShardLayout, PaddedBlocksHoldZerosPastTheLogicalSize) {
  for (const auto &[dim, shards, whole, local] :
       std::vector<std::tuple<int64_t, int64_t, TensorType, TensorType>>{
           {0, 2, TensorType{DType::F32, {7, 2}}, TensorType{DType::F32, {4, 2}}},
           {1, 3, TensorType{DType::F32, {2, 7}}, TensorType{DType::F32, {2, 3}}}}) {
    plan::ParamSharding s = sharding(dim, 1, shards);
    s.set_logical_size(7);
    EXPECT_EQ(logicalType(local, s).str(), whole.str());
    const int64_t block = local.shape[(size_t)dim], inner = dim == 0 ? 2 : 1, outer = dim == 0 ? 1 : 2;
    std::vector<float> src = iota(14), rebuilt(14, -1.f), part((size_t)local.numel(), -1.f);
    for (int64_t r = 0; r < shards; ++r) {
      sliceShard(s, TensorRef{src.data(), whole}, TensorRef{part.data(), local}, r);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < block; ++k)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t entry = r * block + k;  // along the split dimension
            const float want = entry < 7 ? src[(size_t)((o * 7 + entry) * inner + i)] : 0.f;
            EXPECT_EQ(part[(size_t)((o * block + k) * inner + i)], want)
                << whole.str() << " rank " << r << " entry " << entry;
          }
      for (float &x : part) x = x == 0.f ? 99.f : x;  // padding never reaches the logical tensor
      placeShard(s, TensorRef{part.data(), local}, TensorRef{rebuilt.data(), whole}, r);
    }
    std::vector<float> expect = src;
    expect[0] = 99.f;  // (element 0 holds 0, marked as the padding is)
    EXPECT_EQ(rebuilt, expect) << whole.str();
  }
  // A logical size the blocks cannot pad: one with a whole block of padding (7 over 4
  // blocks of 3), one beyond the blocks, and padded segments.
  plan::ParamSharding s = sharding(0, 1, 4);
  s.set_logical_size(7);
  EXPECT_THROW(logicalType(TensorType{DType::F32, {3}}, s), Error);
  s.set_shards(2);
  EXPECT_THROW(logicalType(TensorType{DType::F32, {3}}, s), Error);
  s = sharding(0, 3, 2);
  s.set_logical_size(7);
  EXPECT_THROW(logicalType(TensorType{DType::F32, {6}}, s), Error);
}

/* ZeRO stage 3's slices (mesh axis 0): rank r holds elements [r c, (r + 1) c) of the
   flattened tensor, c = ceil(n / ranks), padded with zeros; placing writes below n only. */
TEST(ShardLayout, ZeroStage3SlicesThePaddedFlattenedTensor) {
  plan::ParamSharding s;
  s.set_mesh_axis(0);
  s.set_segments(1);
  s.set_shards(3);
  ASSERT_TRUE(isZeroSlice(s));
  const TensorType whole{DType::F32, {2, 5}}, local{DType::F32, {4}};  // 10 elements: 4, 4, 2 (+ 2 zeros)
  std::vector<float> src = iota(10), rebuilt(10, -1.f), part(4, -1.f);
  for (int64_t r = 0; r < 3; ++r) {
    sliceShard(s, TensorRef{src.data(), whole}, TensorRef{part.data(), local}, r);
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(part[(size_t)k], r * 4 + k < 10 ? (float)(r * 4 + k) : 0.f) << "rank " << r << " element " << k;
    part[3] = r == 2 ? 99.f : part[3];  // padding never reaches the logical tensor
    placeShard(s, TensorRef{part.data(), local}, TensorRef{rebuilt.data(), whole}, r);
  }
  EXPECT_EQ(rebuilt, src);
  // A slice of another length, a rank outside the group, and a logical type asked of the slice.
  EXPECT_THROW(sliceShard(s, TensorRef{src.data(), whole}, TensorRef{part.data(), TensorType{DType::F32, {3}}}, 0),
               Error);
  EXPECT_THROW(sliceShard(s, TensorRef{src.data(), whole}, TensorRef{part.data(), local}, 3), Error);
  EXPECT_THROW(logicalType(local, s), Error);
}

}  // namespace
}  // namespace lmrt
