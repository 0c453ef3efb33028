/* Tests reading a rank's slice of a sharded checkpoint's tensor straight from the
   shard files (runtime/train/checkpoint_shards.h, ShardReader): for checkpoints
   written by several meshes (1 rank; 2 and 3 data ranks, whose flat pieces a slice
   crosses; 2 tensor ranks with and without 2 data ranks), every read (the whole
   tensor; ZeRO stage 3 slices over 2, 3 and 5 ranks, the last one padded; tensor-
   parallel splits along dim 0 and along dim 1 with packed segments, and padded ones of
   a size the ranks do not divide, written and read; ZeRO stage 1/2's
   unpadded flat ranges) gives the bytes of slicing the assembled tensor
   (shard_layout.h's sliceShard). And a truncated
   shard is reported naming its file. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include "TempDir.h"
#include "base/json.h"
#include "contract/zero3.h"
#include "runtime/exec/backend.h"
#include "runtime/exec/shard_layout.h"
#include "runtime/train/checkpoint_shards.h"

namespace lmrt {
namespace {

using lmrt_test::TempDir;

plan::ParamSharding split(int64_t dim, int64_t segments, int64_t shards) {
  plan::ParamSharding s;
  s.set_dim(dim), s.set_segments(segments), s.set_shards(shards), s.set_mesh_axis(1);
  return s;
}

plan::ParamSharding zeroSlices(int64_t ranks) {
  plan::ParamSharding s;
  s.set_shards(ranks), s.set_mesh_axis(0);
  return s;
}

struct Logical {
  CheckpointTensor tensor;
  std::vector<float> values;
};

plan::ParamSharding padded(int64_t dim, int64_t shards, int64_t size) {
  plan::ParamSharding s = split(dim, 1, shards);
  s.set_logical_size(size);
  return s;
}

/* `w` f32[4, 6] (split along dim 1 as q|k|v: 3 segments, when `tp`), `b` f32[7] and `h`
   f32[3, 5] (split by `bs` and `hs` when given: padded blocks of a vocabulary the ranks
   do not divide), distinct values everywhere. */
std::vector<Logical> model(const plan::ParamSharding *tp, const plan::ParamSharding *bs = nullptr,
                           const plan::ParamSharding *hs = nullptr) {
  std::vector<Logical> out(3);
  out[0].tensor = {"w", TensorType{DType::F32, {4, 6}}, tp, false};
  out[1].tensor = {"b", TensorType{DType::F32, {7}}, bs, false};
  out[2].tensor = {"h", TensorType{DType::F32, {3, 5}}, hs, false};
  for (Logical &l : out)
    for (int64_t i = 0; i < l.tensor.type.numel(); ++i) l.values.push_back((float)(l.values.size() + 1) * 0.5f + (&l - out.data()) * 100);
  return out;
}

/* The sharded checkpoint a data x tensor mesh writes of `m` into `dir`; meta.json's
   tensors and files, parsed. */
json::Value writeSharded(const std::string &dir, const std::vector<Logical> &m, int data, int tensor) {
  std::vector<CheckpointTensor> tensors;
  for (const Logical &l : m) tensors.push_back(l.tensor);
  const int ranks = data * tensor;
  std::string files;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::vector<float>> blocks;
    std::vector<NamedTensor> out;
    const std::vector<ShardPiece> pieces = shardPieces(tensors, r, data, tensor);
    blocks.reserve(pieces.size());
    for (const ShardPiece &p : pieces) {
      const Logical &l = m[p.tensor];
      float *values = const_cast<float *>(l.values.data());
      if (p.block) {
        const plan::ParamSharding &sh = *l.tensor.sharding;
        const size_t dim = (size_t)sh.dim();
        TensorType type = l.tensor.type;
        const int64_t size = type.shape[dim];
        type.shape[dim] = sh.logical_size() > 0 ? (size + sh.shards() - 1) / sh.shards() : size / sh.shards();
        std::vector<float> local((size_t)type.numel());
        sliceShard(sh, TensorRef{values, l.tensor.type}, TensorRef{local.data(), type}, p.index);
        // A padded block is stored without its padding: each row's first `filled` entries.
        const int64_t block = type.shape[dim], filled = std::max<int64_t>(0, std::min(block, size - p.index * block));
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < dim; ++i) outer *= type.shape[i];
        for (size_t i = dim + 1; i < type.shape.size(); ++i) inner *= type.shape[i];
        blocks.emplace_back();
        for (int64_t o = 0; o < outer; ++o)
          blocks.back().insert(blocks.back().end(), local.begin() + o * block * inner,
                               local.begin() + (o * block + filled) * inner);
        type.shape[dim] = filled;
        out.emplace_back(l.tensor.name, TensorRef{blocks.back().data(), type});
      } else {
        out.emplace_back(l.tensor.name, TensorRef{values + p.begin, TensorType{DType::F32, {p.end - p.begin}}});
      }
    }
    const std::string name = shardFileName(r, ranks);
    uint64_t fnv = 0;
    writeSafetensors(dir + "/" + name, out,
                     {{"step", "3"}, {"updates", "3"}, {"seed", "1"}, {"plan_fnv1a64", "0123456789abcdef"}}, &fnv);
    struct stat st;
    EXPECT_EQ(::stat((dir + "/" + name).c_str(), &st), 0);
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv);
    files += std::string(r ? ", " : "") + "\"" + name + "\": {\"bytes\": " + std::to_string(st.st_size) +
             ", \"fnv1a64\": \"" + hex + "\"}";
  }
  return json::parse("{\"tensors\": " + shardedTensorsJson(tensors, data, tensor) + ", \"files\": {" + files + "}}");
}

void corrupt(const std::string &msg) { throw Error(msg); }

/* Every read of every tensor against slicing the logical tensor. */
void expectSlicesMatch(const ShardReader &reader, const std::vector<Logical> &m, const std::string &what) {
  const plan::ParamSharding reads[] = {zeroSlices(2), zeroSlices(3), zeroSlices(5), split(0, 1, 2), split(1, 3, 2),
                                       split(1, 1, 2), split(0, 1, 3), split(1, 1, 3)};
  for (const Logical &l : m) {
    SCOPED_TRACE(what + ", tensor " + l.tensor.name);
    std::vector<float> whole(l.values.size(), -1);
    reader.read(l.tensor.name, TensorRef{whole.data(), l.tensor.type}, nullptr, 0);
    EXPECT_EQ(whole, l.values);
    // A ZeRO stage 1 or 2 rank's flat range of its optimizer state, unpadded.
    for (int64_t ranks : {2, 3, 5})
      for (int64_t r = 0; r < ranks; ++r) {
        const int64_t n = (int64_t)l.values.size(), chunk = zeroSliceLength(n, ranks);
        const int64_t begin = std::min(n, r * chunk), end = std::min(n, begin + chunk);
        std::vector<float> got((size_t)(end - begin), -1);
        reader.readRange(l.tensor.name, begin, end, got.data());
        EXPECT_EQ(got, std::vector<float>(l.values.begin() + begin, l.values.begin() + end))
            << "elements [" << begin << ", " << end << ")";
      }
    for (plan::ParamSharding s : reads) {
      TensorType local = l.tensor.type;
      if (isZeroSlice(s)) {
        local.shape = {zeroSliceLength(local.numel(), s.shards())};
      } else {
        if (local.shape.size() <= (size_t)s.dim()) continue;  // b has no dim 1
        const int64_t size = local.shape[(size_t)s.dim()];
        if (size % (s.segments() * s.shards())) {
          // A padded read (one segment): blocks of ceil(size / shards), zeros past the size.
          const int64_t block = (size + s.shards() - 1) / s.shards();
          if (s.segments() != 1 || (s.shards() - 1) * block >= size) continue;
          s.set_logical_size(size);
          local.shape[(size_t)s.dim()] = block;
        } else {
          local.shape[(size_t)s.dim()] /= s.shards();
        }
      }
      for (int64_t r = 0; r < s.shards(); ++r) {
        SCOPED_TRACE("read " + local.str() + " of rank " + std::to_string(r) + (isZeroSlice(s) ? " (ZeRO)" : " (TP dim " + std::to_string(s.dim()) + ")"));
        std::vector<float> want((size_t)local.numel(), -1), got((size_t)local.numel(), -1);
        sliceShard(s, TensorRef{const_cast<float *>(l.values.data()), l.tensor.type}, TensorRef{want.data(), local}, r);
        reader.read(l.tensor.name, TensorRef{got.data(), local}, &s, r);
        EXPECT_EQ(got, want);
      }
    }
  }
}

TEST(ShardReader, ARanksSliceIsTheSliceOfTheAssembledTensorForEveryMesh) {
  const std::vector<Logical> flat = model(nullptr);
  for (int data : {1, 2, 3}) {
    TempDir dir;
    const json::Value root = writeSharded(dir.path, flat, data, 1);
    const ShardReader reader(dir.path, root, corrupt);
    EXPECT_EQ(reader.metadata().at("step"), "3");
    EXPECT_EQ(reader.size(), 3u);
    expectSlicesMatch(reader, flat, std::to_string(data) + " data ranks wrote it");
  }
  const plan::ParamSharding qkv = split(1, 3, 2);
  const std::vector<Logical> tp = model(&qkv);
  for (int data : {1, 2}) {
    TempDir dir;
    const json::Value root = writeSharded(dir.path, tp, data, 2);
    const ShardReader reader(dir.path, root, corrupt);
    expectSlicesMatch(reader, tp, "data = " + std::to_string(data) + ", tensor = 2 wrote it");
  }
  // Padded blocks (b's 7 entries in blocks of 4 over 2 ranks, h's 5 columns in blocks of
  // 3), each stored without its padding, read back into every layout.
  const plan::ParamSharding b2 = padded(0, 2, 7), h2 = padded(1, 2, 5);
  const std::vector<Logical> pad = model(&qkv, &b2, &h2);
  for (int data : {1, 2}) {
    TempDir dir;
    const json::Value root = writeSharded(dir.path, pad, data, 2);
    const ShardReader reader(dir.path, root, corrupt);
    expectSlicesMatch(reader, pad, "padded, data = " + std::to_string(data) + ", tensor = 2 wrote it");
  }
}

TEST(ShardReader, ATruncatedShardIsReportedNamingItsFile) {
  TempDir dir;
  const std::vector<Logical> flat = model(nullptr);
  const json::Value root = writeSharded(dir.path, flat, 2, 1);
  ASSERT_EQ(::truncate(dir.file("shard-00001-of-00002.safetensors").c_str(), 40), 0);
  try {
    ShardReader reader(dir.path, root, corrupt);
    FAIL() << "a truncated shard was read";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("shard file 'shard-00001-of-00002.safetensors' (it holds a piece of 'w') "
                                         "has 40 bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lmrt
