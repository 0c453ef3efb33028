/* Implements: the shards of a sharded checkpoint (docs/runtime.md §8, docs/distributed.md
   "Checkpoints across meshes").

   A checkpoint holds logical tensors: every parameter and optimizer state tensor as
   one process would hold it. In a sharded checkpoint each rank of a distributed run
   writes its own part of them to its own file, shard-RRRRR-of-WWWWW.safetensors,
   without any gather; meta.json (checkpoint.h, written last by rank 0) lists each
   logical tensor's dtype, shape and pieces. A piece is one of:
     flat   elements [begin, end) of the tensor in row-major order: a tensor every rank
            holds whole is split so, each world rank w of W writing zeroShard(n, W, w);
            a ZeRO rank's optimizer state slice is exactly its piece of that split,
            so ZeRO ranks write what they hold (stage 3: its parameter slices too);
     block  a tensor-parallel slice (plan Param.sharding: dim, segments, shards, and
            the slice's index, shard_layout.h), written by the ranks of data rank 0;
            where the shards do not divide the split dimension (a padded vocabulary,
            one segment: blocks of ceil(size / shards)) a block stores its entries
            below the logical size only, never its padding.
   ZeRO on a data x tensor mesh holds flat runs of the local tensors, which have no piece
   yet: writeShardFile gathers each over the data group first and writes these pieces.
   The layout is a function of the logical tensors and the mesh only, so rank 0 can
   describe every rank's file. Loading reads, for each tensor, only the byte ranges of
   the pieces that overlap the rank's slice of it (ShardReader), whatever mesh wrote them. */
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/tensor.h"
#include "contract/plan.pb.h"
#include "runtime/weights/safetensors.h"

namespace lmrt {

class Session;

/* A tensor of the checkpoint: its name, logical type, and tensor-parallel sharding
   (null: every rank that holds it holds it whole, or a ZeRO slice of it). */
struct CheckpointTensor {
  std::string name;
  TensorType type;
  const plan::ParamSharding *sharding = nullptr;
  bool zeroSlice = false;  // ZeRO stage 3: ranks hold a parameter and its state as flat slices
};

/* The session's checkpoint tensors in checkpoint order: the parameters in plan order,
   then each parameter's optimizer state slots (optimizer.h). */
std::vector<CheckpointTensor> checkpointTensors(const Session &session);

struct ShardPiece {
  size_t tensor = 0;   // index into the checkpoint tensors
  bool block = false;  // a tensor-parallel slice; else flat elements [begin, end)
  int64_t begin = 0, end = 0;
  int64_t index = 0;   // block: the slice's index (the tensor rank that held it)
};

/* The pieces world rank `rank` of a data x tensor mesh writes, in tensor order. */
std::vector<ShardPiece> shardPieces(const std::vector<CheckpointTensor> &tensors, int rank, int data, int tensor);

/* "shard-00001-of-00002.safetensors" */
std::string shardFileName(int rank, int ranks);

/* Writes this rank's pieces (from the session's parameters and the backend's held
   optimizer state, no communication) to `path`, fsynced; returns its size and its
   FNV-1a-64 in `bytes` and `fnv`. */
void writeShardFile(const std::string &path, Session &session, const std::vector<CheckpointTensor> &tensors,
                    const std::vector<ShardPiece> &pieces, const std::map<std::string, std::string> &metadata,
                    uint64_t &bytes, uint64_t &fnv);

/* meta.json's "tensors" array: every tensor with its pieces over `ranks` world ranks. */
std::string shardedTensorsJson(const std::vector<CheckpointTensor> &tensors, int data, int tensor);

/* A sharded checkpoint opened for reading piece by piece (docs/distributed.md
   "Checkpoints across meshes"): meta.json's tensor table, and every shard file checked
   against it at once (its size and checksum, streamed: no file is held whole; its
   header; each piece's type; the same `metadata` keys in every file: step, updates,
   seed, plan). read() then fills a rank's buffer with the part of a tensor it keeps
   from the byte ranges of the files that hold it, so a rank never holds more than its
   slices. `corrupt` throws; its messages name the file and the tensor at fault. */
/* A run of consecutive logical elements [begin, begin + length) of a tensor, found at
   element `at` of a buffer (a stored piece, or a rank's local slice). */
struct ShardRun {
  int64_t begin, length, at;
};

class ShardReader {
public:
  ShardReader(const std::string &dir, const json::Value &root, const std::function<void(const std::string &)> &corrupt);
  ~ShardReader();
  ShardReader(const ShardReader &) = delete;
  ShardReader &operator=(const ShardReader &) = delete;

  /* The first shard's metadata (every shard agrees on step, updates, seed and plan). */
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  std::vector<std::string> names() const;  // meta.json's order
  size_t size() const;
  const TensorType *type(const std::string &name) const;  // null: no such tensor

  /* `local` = tensor `name` whole (`sharding` null), or rank `rank`'s slice of it by
     `sharding` (shard_layout.h: a tensor-parallel block, or a ZeRO stage 3 slice of the
     flattened tensor, zero-padded), whatever pieces the checkpoint's mesh wrote. */
  void read(const std::string &name, const TensorRef &local, const plan::ParamSharding *sharding,
            int64_t rank) const;

  /* `out` = elements [begin, end) of tensor `name`, flattened (a ZeRO stage 1 or 2
     rank's slice of its optimizer state). */
  void readRange(const std::string &name, int64_t begin, int64_t end, void *out) const;

private:
  struct Tensor;
  static uint64_t headerLength(const std::string &head);
  [[noreturn]] void bad(const std::string &msg) const;
  /* `out` = the runs `want` of tensor `t`, from the pieces that overlap them. */
  void readRuns(const Tensor &t, const std::vector<ShardRun> &want, char *out) const;

  std::function<void(const std::string &)> corrupt_;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::vector<int> fds_;
};

/* Reassembles the logical tensors of the sharded checkpoint in directory `dir` from its
   meta.json `root` (checksum already verified): every shard file is checked against
   the sizes and checksums meta.json lists, and its pieces copied into place
   (ShardReader: `lmrt checkpoint consolidate`; a resume reads only its slices). Every shard must record the same `metadata` keys as the first one
   (step, updates, seed, plan), which the result carries. `corrupt` throws; its
   messages name the file and the tensor at fault. */
SafetensorsFile assembleShards(const std::string &dir, const json::Value &root,
                               const std::function<void(const std::string &)> &corrupt);

}  // namespace lmrt
