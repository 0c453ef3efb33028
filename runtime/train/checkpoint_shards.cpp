/* Implements: checkpoint_shards.h. */
#include "runtime/train/checkpoint_shards.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_io.h"
#include "base/hash.h"
#include "base/host_memory.h"
#include "contract/tensor_split.h"
#include "contract/zero3.h"
#include "contract/contract.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/held_state.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/exec/shard_layout.h"

namespace lmrt {
namespace {

/* A tensor-parallel block's size along the split dimension of a logical `size`: size /
   shards, or where the shards pad it (one segment) ceil(size / shards)
   (contract/tensor_split.h). */
int64_t blockSize(int64_t size, const plan::ParamSharding &s) {
  return s.logical_size() > 0 ? (size + s.shards() - 1) / s.shards() : size / (s.segments() * s.shards());
}

/* A block piece's type in its shard file: the tensor-parallel slice's, without its
   padding (a padded block stores its entries below the logical size only). */
TensorType blockType(const TensorType &logical, const plan::ParamSharding &s, int64_t index) {
  TensorType t = logical;
  const int64_t size = logical.shape[(size_t)s.dim()], block = blockSize(size, s);
  t.shape[(size_t)s.dim()] = s.logical_size() > 0 ? splitBlockFilled(size, block, index) : block * s.segments();
  return t;
}

/* What a rank holds of a tensor-parallel block: its entries and any padding (the local
   parameter's type). */
TensorType localBlockType(const TensorType &logical, const plan::ParamSharding &s) {
  TensorType t = logical;
  const int64_t block = blockSize(logical.shape[(size_t)s.dim()], s);
  t.shape[(size_t)s.dim()] = s.logical_size() > 0 ? block : block * s.segments();
  return t;
}

TensorType storedType(const CheckpointTensor &t, const ShardPiece &p) {
  if (p.block) return blockType(t.type, *t.sharding, p.index);
  return TensorType{t.type.dtype, {p.end - p.begin}};
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

bool parseDType(const std::string &name, DType &out) {
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::BF16, DType::F16})
    if (name == dtypeName(d)) return out = d, true;
  return false;
}

}  // namespace

std::vector<CheckpointTensor> checkpointTensors(const Session &s) {
  std::vector<CheckpointTensor> out;
  const std::vector<ParamState> &params = s.params();
  // A ZeRO stage 3 parameter (and its state) is a flat slice, the flat piece a rank
  // writes anyway: only tensor-parallel slices are block pieces (on a data x tensor mesh
  // a stage-3 slice is of such a block: Session::blockSharding).
  auto blockSharding = [&](size_t i) -> const plan::ParamSharding * {
    const plan::ParamSharding *sh = s.sharding(i);
    if (sh && isZeroSlice(*sh)) return s.blockSharding(i);
    return sh;
  };
  auto zeroSlice = [&](size_t i) { return s.sharding(i) && isZeroSlice(*s.sharding(i)); };
  for (size_t i = 0; i < params.size(); ++i)
    out.push_back({params[i].name, s.logicalType(i), blockSharding(i), zeroSlice(i)});
  const OptimizerConfig optimizer = optimizerConfig(s.plan());
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamState &p = params[i];
    const TensorType logical = s.logicalType(i);
    // An elementwise slot has its parameter's shape and is split alike (tensor_parallel.h).
    for (const StateSlot &slot : stateSlots(optimizer, p.type.shape)) {
      const bool alike = slot.shape == p.type.shape;
      out.push_back({slot.prefix + "." + p.name, TensorType{p.type.dtype, alike ? logical.shape : slot.shape},
                     alike ? blockSharding(i) : nullptr, alike && zeroSlice(i)});
    }
  }
  return out;
}

std::vector<ShardPiece> shardPieces(const std::vector<CheckpointTensor> &tensors, int rank, int data, int tensor) {
  const int ranks = data * tensor, dataRank = rank / tensor, tensorRank = rank % tensor;
  std::vector<ShardPiece> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const CheckpointTensor &t = tensors[i];
    if (t.sharding) {
      if (t.sharding->shards() != tensor)
        fail("'%s' is split into %lld shards, and the mesh has tensor = %d", t.name.c_str(),
             (long long)t.sharding->shards(), tensor);
      if (dataRank == 0) out.push_back({i, true, 0, 0, tensorRank});
      continue;
    }
    const ShardRange r = zeroShard(t.type.numel(), ranks, rank);
    if (r.size() > 0) out.push_back({i, false, r.begin, r.end, 0});
  }
  return out;
}

std::string shardFileName(int rank, int ranks) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "shard-%05d-of-%05d.safetensors", rank, ranks);
  return buf;
}

void writeShardFile(const std::string &path, Session &s, const std::vector<CheckpointTensor> &tensors,
                    const std::vector<ShardPiece> &pieces, const std::map<std::string, std::string> &metadata,
                    uint64_t &bytes, uint64_t &fnv) {
  // What this rank holds of each tensor: the parameters whole (a tensor-parallel one:
  // its slice), the optimizer state as the backend keeps it (a ZeRO rank: its slice).
  struct Held {
    const void *data;
    int64_t begin, end;
  };
  s.pullParams();
  std::vector<Held> held;
  for (ParamState &p : s.params()) held.push_back({p.valueRef().data, 0, p.valueRef().numel()});
  for (const HeldTensor &h : heldOptimizerState(s.backend())) held.push_back({h.data, h.begin, h.end});
  if (held.size() != tensors.size())
    fail("a sharded checkpoint of %zu tensors, and this rank holds %zu", tensors.size(), held.size());
  // ZeRO on a data x tensor mesh: a rank's slices are of its local tensors (the tensor-
  // parallel blocks and the whole tensors), which the layout's pieces are not cut from
  // (shard_layout.h has no piece for a flat run of a block yet). So each sliced tensor is
  // first all-gathered over the data group into the local tensor (every rank of the group
  // takes part, in tensor order), and kept where this rank writes a piece of it.
  const plan::Mesh &mesh = s.plan().train().mesh();
  std::vector<HostBytes> gathered;
  if (mesh.zero() > 0 && mesh.tensor() > 1 && mesh.data() > 1) {
    gathered.resize(held.size());
    std::vector<bool> written(held.size(), false);
    for (const ShardPiece &p : pieces) written[p.tensor] = true;
    comm::Communicator &group = comm::meshGroup(0);
    const int64_t D = mesh.data();
    for (size_t k = 0; k < held.size(); ++k) {
      // Stage 3 holds every tensor as its padded slice; stages 1 and 2 the optimizer
      // state as its zeroShard range and the parameters whole. The same on every rank.
      if (mesh.zero() < 3 && k < s.params().size()) continue;
      const CheckpointTensor &t = tensors[k];
      const TensorType local = t.sharding ? localBlockType(t.type, *t.sharding) : t.type;
      const int64_t n = local.numel(), chunk = zeroSliceLength(n, D);
      if (n == 0) continue;
      const size_t eb = dtypeSize(local.dtype);
      if (held[k].end - held[k].begin > chunk)
        fail("sharded checkpoint: this rank holds %lld elements of '%s', more than its slice of %lld",
             (long long)(held[k].end - held[k].begin), t.name.c_str(), (long long)chunk);
      HostBytes mine((size_t)chunk * eb, 0), all((size_t)(chunk * D) * eb);
      std::memcpy(mine.data(), held[k].data, (size_t)(held[k].end - held[k].begin) * eb);
      group.allGather(mine.data(), all.data(), chunk, local.dtype, "the sharded checkpoint's gather of '" + t.name + "'");
      if (!written[k]) continue;
      all.resize((size_t)n * eb);
      gathered[k] = std::move(all);
      held[k] = {gathered[k].data(), 0, n};
    }
  }
  // ZeRO stage 3: a parameter and its state are held as the rank's slice, which
  // begins where its flat piece does (zeroShard's split is the slices').
  for (const ShardPiece &p : pieces)
    if (gathered.empty())
    if (tensors[p.tensor].zeroSlice && !p.block) {
      Held &h = held[p.tensor];
      h.end = p.begin + (h.end - h.begin);
      h.begin = p.begin;
    }
  std::vector<NamedTensor> out;
  std::vector<HostBytes> compacted;  // padded blocks without their padding
  compacted.reserve(pieces.size());
  for (const ShardPiece &p : pieces) {
    const CheckpointTensor &t = tensors[p.tensor];
    const Held &h = held[p.tensor];
    const TensorType type = storedType(t, p);
    const char *data = static_cast<const char *>(h.data);
    const bool padded = p.block && t.sharding->logical_size() > 0;
    TensorType local = type;  // what the rank holds of a block: the stored entries and the padding
    if (padded) local.shape[(size_t)t.sharding->dim()] = blockSize(t.type.shape[(size_t)t.sharding->dim()], *t.sharding);
    if (p.block ? (h.begin != 0 || h.end != local.numel())
                : (p.begin < h.begin || p.end > h.end))
      fail("sharded checkpoint: this rank holds elements [%lld, %lld) of '%s', not its piece %s [%lld, %lld)",
           (long long)h.begin, (long long)h.end, t.name.c_str(), local.str().c_str(), (long long)p.begin,
           (long long)p.end);
    if (!p.block) data += (size_t)(p.begin - h.begin) * dtypeSize(t.type.dtype);
    if (padded && local.numel() != type.numel()) {
      // For each row before the split dimension, the block's first entries (the rest is padding).
      const size_t dim = (size_t)t.sharding->dim();
      int64_t outer = 1, inner = (int64_t)dtypeSize(t.type.dtype);
      for (size_t i = 0; i < dim; ++i) outer *= type.shape[i];
      for (size_t i = dim + 1; i < type.shape.size(); ++i) inner *= type.shape[i];
      const size_t kept = (size_t)(type.shape[dim] * inner), stride = (size_t)(local.shape[dim] * inner);
      HostBytes &bytes = compacted.emplace_back((size_t)type.bytes());
      for (int64_t o = 0; o < outer; ++o) std::memcpy(bytes.data() + (size_t)o * kept, data + (size_t)o * stride, kept);
      data = bytes.data();
    }
    out.emplace_back(t.name, TensorRef{const_cast<char *>(data), type});  // only read
  }
  writeSafetensors(path, out, metadata, &fnv);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail("checkpoint shard '%s' vanished after it was written", path.c_str());
  bytes = (uint64_t)st.st_size;
}

std::string shardedTensorsJson(const std::vector<CheckpointTensor> &tensors, int data, int tensor) {
  const int ranks = data * tensor;
  std::vector<std::vector<std::string>> pieces(tensors.size());
  for (int r = 0; r < ranks; ++r)
    for (const ShardPiece &p : shardPieces(tensors, r, data, tensor)) {
      std::string j = "{\"file\": " + json::quote(shardFileName(r, ranks)) + ", ";
      j += p.block ? "\"index\": " + std::to_string(p.index)
                   : "\"begin\": " + std::to_string(p.begin) + ", \"end\": " + std::to_string(p.end);
      pieces[p.tensor].push_back(j + "}");
    }
  std::string s = "[";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const CheckpointTensor &t = tensors[i];
    s += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + json::quote(t.name) + ", \"dtype\": \"" +
         dtypeName(t.type.dtype) + "\", \"shape\": [";
    for (size_t k = 0; k < t.type.shape.size(); ++k) s += (k ? ", " : "") + std::to_string(t.type.shape[k]);
    s += "]";
    if (t.sharding)
      s += ", \"split\": {\"dim\": " + std::to_string(t.sharding->dim()) + ", \"segments\": " +
           std::to_string(t.sharding->segments()) + ", \"shards\": " + std::to_string(t.sharding->shards()) + "}";
    s += ", \"pieces\": [";
    for (size_t k = 0; k < pieces[i].size(); ++k) s += (k ? ", " : "") + pieces[i][k];
    s += "]}";
  }
  return s + "\n  ]";
}

namespace {

/* The runs of block `index` of a tensor-parallel split of a `shape` tensor, in the
   order the block stores them (shard_layout.h: for every row before `dim`, block
   `index` of each segment). A padded block's runs are its entries below the logical
   size, placed as a shard file stores them (`withPadding` false: the entries alone)
   or as the rank holds them (true: each row followed by its padding). */
void blockRuns(const std::vector<int64_t> &shape, const plan::ParamSharding &s, int64_t index, bool withPadding,
               std::vector<ShardRun> &out) {
  const size_t dim = (size_t)s.dim();
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i) outer *= shape[i];
  for (size_t i = dim + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t rows = shape[dim], segments = s.segments(), shards = s.shards(), block = blockSize(rows, s);
  const int64_t filled = s.logical_size() > 0 ? splitBlockFilled(rows, block, index) : block;
  const int64_t stride = withPadding ? block : filled;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t seg = 0; seg < segments; ++seg)
      if (filled > 0)
        out.push_back({(o * rows + (seg * shards + index) * block) * inner, filled * inner,
                       (o * segments + seg) * stride * inner});
}

constexpr size_t kChecksumChunk = size_t(4) << 20;  // the streamed checksum's buffer

}  // namespace

struct ShardReader::Tensor {
  std::string name;
  TensorType type;
  bool split = false;
  plan::ParamSharding sharding;
  struct Piece {
    std::string file;
    bool block;
    int64_t begin, end, index;
    int fd = -1;          // its shard file, open
    uint64_t offset = 0;  // where its bytes begin in the file
  };
  std::vector<Piece> pieces;
};

ShardReader::ShardReader(const std::string &dir, const json::Value &root,
                         const std::function<void(const std::string &)> &corrupt)
    : corrupt_(corrupt) {
  auto field = [&](const json::Value &obj, const char *key, json::Value::Kind kind) -> const json::Value & {
    const json::Value *v = obj.find(key);
    if (!v || v->kind != kind)
      bad(std::string("meta.json: field '") + key + "' is missing or not a " + json::kindName(kind));
    return *v;
  };
  auto integer = [&](const json::Value &obj, const char *key) {
    int64_t x = 0;
    if (!field(obj, key, json::Value::Number).asInt(x) || x < 0)
      bad(std::string("meta.json: field '") + key + "' is not an integer >= 0");
    return x;
  };

  for (const json::Value &v : field(root, "tensors", json::Value::Array).items) {
    if (v.kind != json::Value::Object) bad("meta.json: an entry of 'tensors' is not an object");
    Tensor t;
    t.name = field(v, "name", json::Value::String).text;
    if (!parseDType(field(v, "dtype", json::Value::String).text, t.type.dtype))
      bad("meta.json: tensor '" + t.name + "' has an unknown dtype");
    for (const json::Value &d : field(v, "shape", json::Value::Array).items) {
      int64_t x = 0;
      if (d.kind != json::Value::Number || !d.asInt(x) || x < 0)
        bad("meta.json: tensor '" + t.name + "' has a shape that is not a list of sizes");
      t.type.shape.push_back(x);
    }
    if (const json::Value *sp = v.find("split")) {
      if (sp->kind != json::Value::Object) bad("meta.json: tensor '" + t.name + "': 'split' is not an object");
      t.split = true;
      t.sharding.set_dim(integer(*sp, "dim"));
      t.sharding.set_segments(integer(*sp, "segments"));
      t.sharding.set_shards(integer(*sp, "shards"));
      t.sharding.set_mesh_axis(1);  // a block piece is a tensor-parallel slice (mesh axis 1)
      const int64_t dim = t.sharding.dim();
      if (dim >= (int64_t)t.type.shape.size() || t.sharding.segments() < 1 || t.sharding.shards() < 1)
        bad("meta.json: tensor '" + t.name + "' " + t.type.str() + " cannot be split as its 'split' says");
      // Blocks that do not divide the dimension pad it (one segment, blocks of ceil(size / shards)).
      const int64_t size = t.type.shape[(size_t)dim], shards = t.sharding.shards();
      if (size % (t.sharding.segments() * shards) != 0) {
        if (t.sharding.segments() != 1 || !splitPaddingFits(size, (size + shards - 1) / shards, shards))
          bad("meta.json: tensor '" + t.name + "' " + t.type.str() + " cannot be split as its 'split' says");
        t.sharding.set_logical_size(size);
      }
    }
    for (const json::Value &p : field(v, "pieces", json::Value::Array).items) {
      if (p.kind != json::Value::Object) bad("meta.json: a piece of '" + t.name + "' is not an object");
      Tensor::Piece q{field(p, "file", json::Value::String).text, p.find("index") != nullptr, 0, 0, 0};
      if (q.block) q.index = integer(p, "index");
      else q.begin = integer(p, "begin"), q.end = integer(p, "end");
      t.pieces.push_back(q);
    }
    // The pieces cover the tensor exactly once.
    const std::string where = "meta.json: the pieces of tensor '" + t.name + "' " + t.type.str();
    if (t.split) {
      std::vector<int> seen((size_t)t.sharding.shards(), 0);
      for (const Tensor::Piece &q : t.pieces)
        if (!q.block || q.index >= t.sharding.shards() || seen[(size_t)q.index]++)
          bad(where + " are not its " + std::to_string(t.sharding.shards()) + " tensor-parallel slices");
      if (t.pieces.size() != seen.size()) bad(where + " miss a tensor-parallel slice");
    } else {
      std::vector<Tensor::Piece> sorted = t.pieces;
      std::sort(sorted.begin(), sorted.end(),
                [](const Tensor::Piece &a, const Tensor::Piece &b) { return a.begin < b.begin; });
      int64_t at = 0;
      for (const Tensor::Piece &q : sorted) {
        if (q.block || q.begin != at || q.end <= q.begin)
          bad(where + " do not cover it (a gap or an overlap at element " + std::to_string(at) + ")");
        at = q.end;
      }
      if (at != t.type.numel())
        bad(where + " cover " + std::to_string(at) + " of its " + std::to_string(t.type.numel()) + " elements");
    }
    if (index_.count(t.name)) bad("meta.json lists tensor '" + t.name + "' twice");
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // Each shard file: its size and checksum (streamed, never held whole), its header,
  // and where each piece meta.json puts in it lies. It stays open for read().
  const json::Value &files = field(root, "files", json::Value::Object);
  std::string firstFile;
  for (const auto &[file, entry] : files.members) {
    if (file.rfind("shard-", 0) != 0) continue;  // meta.json lists only shards in a sharded checkpoint
    if (entry.kind != json::Value::Object) bad("meta.json: files entry '" + file + "' is not an object");
    // The first piece it holds, to name in errors.
    std::string holds;
    for (const Tensor &t : tensors_)
      for (const Tensor::Piece &q : t.pieces)
        if (holds.empty() && q.file == file) holds = " (it holds a piece of '" + t.name + "')";
    const int64_t bytes = integer(entry, "bytes");
    const std::string fnvText = field(entry, "fnv1a64", json::Value::String).text;
    const std::string path = dir + "/" + file;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) bad("shard file '" + file + "'" + holds + " is missing or unreadable: " + std::strerror(errno));
    fds_.push_back(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) bad("shard file '" + file + "'" + holds + " is unreadable: " + std::strerror(errno));
    if ((int64_t)st.st_size != bytes)
      bad("shard file '" + file + "'" + holds + " has " + std::to_string(st.st_size) + " bytes, meta.json says " +
          std::to_string(bytes) + " (truncated?)");
    Fnv1a64 sum;
    std::string chunk(std::min<size_t>(kChecksumChunk, (size_t)bytes), '\0'), head;
    for (int64_t at = 0; at < bytes;) {
      const size_t want = (size_t)std::min<int64_t>((int64_t)chunk.size(), bytes - at);
      const ssize_t got = ::pread(fd, chunk.data(), want, (off_t)at);
      if (got <= 0) bad("shard file '" + file + "'" + holds + " could not be read at byte " + std::to_string(at));
      sum.update(chunk.data(), (size_t)got);
      // The header: the 8-byte length and the JSON (within the file's first chunks).
      if (head.size() < 8 || head.size() < 8 + headerLength(head)) head.append(chunk.data(), (size_t)got);
      at += got;
    }
    if (hex64(sum.h) != fnvText)
      bad("shard file '" + file + "'" + holds + " checksum mismatch (stored " + fnvText + ", computed " +
          hex64(sum.h) + ")");
    if (head.size() >= 8) head.resize(std::min<size_t>(head.size(), 8 + headerLength(head)));
    SafetensorsFile shard;
    try {
      shard = decodeSafetensorsHeader(std::move(head), (uint64_t)bytes, path);
    } catch (const Error &e) {
      bad(std::string("shard file '") + file + "': " + e.what());
    }
    if (firstFile.empty()) {
      firstFile = file, metadata_ = shard.metadata;
    } else {
      for (const char *key : {"step", "updates", "seed", "plan_fnv1a64"}) {
        auto a = metadata_.find(key), b = shard.metadata.find(key);
        if (a == metadata_.end() || b == shard.metadata.end() || a->second != b->second)
          bad("shard file '" + file + "' is of another " + key + " than '" + firstFile +
              "' (the files are of different checkpoints)");
      }
    }
    for (Tensor &t : tensors_)
      for (Tensor::Piece &q : t.pieces) {
        if (q.file != file) continue;
        auto it = shard.tensors.find(t.name);
        if (it == shard.tensors.end())
          bad("shard file '" + file + "' has no tensor '" + t.name + "' (meta.json puts a piece of it there)");
        const TensorType want =
            q.block ? blockType(t.type, t.sharding, q.index) : TensorType{t.type.dtype, {q.end - q.begin}};
        if (it->second.type.str() != want.str() || it->second.type.dtype != want.dtype)
          bad("shard file '" + file + "': tensor '" + t.name + "' is " + it->second.type.str() + ", expected " +
              want.str());
        q.fd = fd;
        q.offset = it->second.offset;
      }
  }
  for (const Tensor &t : tensors_)
    for (const Tensor::Piece &q : t.pieces)
      if (q.fd < 0)
        bad("meta.json puts a piece of '" + t.name + "' in '" + q.file + "', which its files do not list");
  corrupt_ = nullptr;  // it may refer to the caller's frame; read()'s errors are plain
}

ShardReader::~ShardReader() {
  for (int fd : fds_) ::close(fd);
}

uint64_t ShardReader::headerLength(const std::string &head) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t((unsigned char)head[(size_t)i]) << (8 * i);
  return std::min<uint64_t>(n, uint64_t(100) << 20);  // decodeSafetensorsHeader refuses a longer one
}

void ShardReader::bad(const std::string &msg) const {
  if (corrupt_) corrupt_(msg);  // throws
  throw Error("sharded checkpoint: " + msg);
}

size_t ShardReader::size() const { return tensors_.size(); }

std::vector<std::string> ShardReader::names() const {
  std::vector<std::string> out;
  for (const Tensor &t : tensors_) out.push_back(t.name);
  return out;
}

const TensorType *ShardReader::type(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second].type;
}

void ShardReader::read(const std::string &name, const TensorRef &local, const plan::ParamSharding *sharding,
                       int64_t rank) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("sharded checkpoint: no tensor '%s'", name.c_str());
  const Tensor &t = tensors_[it->second];
  const int64_t n = t.type.numel();
  const size_t eb = dtypeSize(t.type.dtype);
  // The logical elements `local` holds (shard_layout.h's layouts, its checks).
  std::vector<ShardRun> want;
  if (!sharding) {
    if (local.type.str() != t.type.str() || local.type.dtype != t.type.dtype)
      fail("sharded checkpoint: tensor '%s' is %s, read into %s", name.c_str(), t.type.str().c_str(),
           local.type.str().c_str());
    want.push_back({0, n, 0});
  } else if (isZeroSlice(*sharding)) {
    const int64_t chunk = local.type.numel();
    if (sharding->shards() < 1 || local.type.shape.size() != 1 || chunk != zeroSliceLength(n, sharding->shards()) ||
        local.type.dtype != t.type.dtype || rank < 0 || rank >= sharding->shards())
      fail("sharded checkpoint: ZeRO stage 3 slice %s of rank %lld of %lld of a logical %s ('%s')",
           local.type.str().c_str(), (long long)rank, (long long)sharding->shards(), t.type.str().c_str(),
           name.c_str());
    const int64_t begin = std::min(n, rank * chunk), end = std::min(n, begin + chunk);
    std::memset(local.data, 0, (size_t)chunk * eb);  // the padding past the tensor's end
    if (end > begin) want.push_back({begin, end - begin, 0});
  } else {
    const TensorType expect = logicalType(local.type, *sharding);
    if (expect.str() != t.type.str() || expect.dtype != t.type.dtype || rank < 0 || rank >= sharding->shards())
      fail("sharded checkpoint: tensor-parallel slice %s of rank %lld (dim %lld, %lld segments, %lld shards) of "
           "'%s' %s",
           local.type.str().c_str(), (long long)rank, (long long)sharding->dim(), (long long)sharding->segments(),
           (long long)sharding->shards(), name.c_str(), t.type.str().c_str());
    if (sharding->logical_size() > 0) std::memset(local.data, 0, (size_t)local.type.bytes());  // the padding
    blockRuns(t.type.shape, *sharding, rank, /*withPadding=*/true, want);
  }
  readRuns(t, want, static_cast<char *>(local.data));
}

void ShardReader::readRange(const std::string &name, int64_t begin, int64_t end, void *out) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("sharded checkpoint: no tensor '%s'", name.c_str());
  const Tensor &t = tensors_[it->second];
  if (begin < 0 || end < begin || end > t.type.numel())
    fail("sharded checkpoint: elements [%lld, %lld) of '%s' %s", (long long)begin, (long long)end, name.c_str(),
         t.type.str().c_str());
  if (end > begin) readRuns(t, {{begin, end - begin, 0}}, static_cast<char *>(out));
}

void ShardReader::readRuns(const Tensor &t, const std::vector<ShardRun> &want, char *out) const {
  const std::string &name = t.name;
  const size_t eb = dtypeSize(t.type.dtype);
  // Where those elements are stored: every piece's runs, ordered by logical element.
  struct Stored {
    ShardRun run;
    const Tensor::Piece *piece;
  };
  std::vector<Stored> have;
  std::vector<ShardRun> runs;
  for (const Tensor::Piece &q : t.pieces) {
    runs.clear();
    if (q.block) blockRuns(t.type.shape, t.sharding, q.index, /*withPadding=*/false, runs);
    else runs.push_back({q.begin, q.end - q.begin, 0});
    for (const ShardRun &r : runs) have.push_back({r, &q});
  }
  std::sort(have.begin(), have.end(), [](const Stored &a, const Stored &b) { return a.run.begin < b.run.begin; });
  // Each wanted run, from the stored runs it overlaps (they tile the tensor).
  for (const ShardRun &w : want) {
    auto at = std::upper_bound(have.begin(), have.end(), w.begin,
                               [](int64_t x, const Stored &s) { return x < s.run.begin; });
    if (at != have.begin()) --at;
    for (; at != have.end() && at->run.begin < w.begin + w.length; ++at) {
      const int64_t lo = std::max(w.begin, at->run.begin);
      const int64_t hi = std::min(w.begin + w.length, at->run.begin + at->run.length);
      if (hi <= lo) continue;
      size_t size = (size_t)(hi - lo) * eb;
      char *dst = out + (size_t)(w.at + lo - w.begin) * eb;
      off_t from = (off_t)(at->piece->offset + (uint64_t)(at->run.at + lo - at->run.begin) * eb);
      while (size > 0) {
        const ssize_t got = ::pread(at->piece->fd, dst, size, from);
        if (got <= 0) bad("shard file '" + at->piece->file + "' could not be read (tensor '" + name + "')");
        dst += got, from += got, size -= (size_t)got;
      }
    }
  }
}

SafetensorsFile assembleShards(const std::string &dir, const json::Value &root,
                               const std::function<void(const std::string &)> &corrupt) {
  const ShardReader reader(dir, root, corrupt);
  size_t total = 0;
  std::vector<std::string> names = reader.names();
  std::vector<size_t> offsets;
  for (const std::string &name : names) {
    offsets.push_back(total);
    total += ((size_t)reader.type(name)->bytes() + 7) / 8 * 8;
  }
  auto storage = std::make_shared<std::string>(total, '\0');
  SafetensorsFile out;
  out.metadata = reader.metadata();
  out.storage = storage;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorType &type = *reader.type(names[i]);
    reader.read(names[i], TensorRef{storage->data() + offsets[i], type}, nullptr, 0);
    out.tensors[names[i]] = SafetensorsTensor{type, std::string_view(storage->data() + offsets[i], (size_t)type.bytes())};
    out.order.push_back(names[i]);
  }
  return out;
}

}  // namespace lmrt
