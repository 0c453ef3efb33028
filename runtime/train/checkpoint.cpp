/* Implements: writing, verifying, finding and pruning checkpoints (see checkpoint.h). */
#include "runtime/train/checkpoint.h"

#include "runtime/exec/optimizer.h"
#include "contract/tensor_split.h"

#include <algorithm>
#include <set>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/comm/communicator.h"
#include "runtime/data/token_source.h"
#include "base/file_io.h"
#include "base/hash.h"
#include "base/json.h"
#include "contract/plan_file.h"
#include "contract/plan_types.h"
#include "runtime/exec/held_state.h"
#include "runtime/exec/session.h"
#include "runtime/exec/shard_layout.h"
#include "runtime/train/checkpoint_shards.h"
#include "runtime/train/tensor_parallel.h"
#include "runtime/weights/weights.h"

namespace lmrt {
namespace {

const char *kFormat = "lmc-checkpoint";
const char *kStateFile = "state.safetensors";
const char *kMetaFile = "meta.json";
const char *kMetaChecksumKey = "\"meta_fnv1a64\"";

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool isDirectory(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/* The step of "step-00000040" (exactly 8+ digits after "step-", nothing after), or -1. */
int64_t stepOfName(const std::string &name) {
  if (name.rfind("step-", 0) != 0 || name.size() < 6) return -1;
  int64_t v = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::vector<std::string> directoryEntries(const std::string &dir) {
  std::vector<std::string> names;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return names;
  while (struct dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

/* A file a checkpoint directory holds: its state or meta.json, a sharded one's
   shard-RRRRR-of-WWWWW.safetensors, or the temporary of one of them. */
bool isCheckpointFile(std::string n) {
  if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) n.resize(n.size() - 4);
  const std::string ext = ".safetensors";
  return n == kStateFile || n == kMetaFile ||
         (n.rfind("shard-", 0) == 0 && n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0);
}

/* Removes a checkpoint directory we wrote: only our files, then the directory. An
   unexpected file makes it stay (nothing of the user's is deleted). */
bool removeCheckpointDir(const std::string &path, FILE *log) {
  for (const std::string &n : directoryEntries(path)) {
    if (!isCheckpointFile(n)) {
      if (log) std::fprintf(log, "kept '%s': it holds '%s', which lmrt did not write\n", path.c_str(), n.c_str());
      return false;
    }
    ::unlink((path + "/" + n).c_str());
  }
  return ::rmdir(path.c_str()) == 0;
}

// --- meta.json -------------------------------------------------------------------


/* The plan's identity across data-parallel meshes (docs/distributed.md): the plan without
   its mesh, its train_step program (where -lm-data-parallel adds the all-reduces) and the
   predictions that count them. The plans of one model for D data-parallel ranks and for
   one process on the same rank batch share it: a checkpoint of one resumes on the other. */
uint64_t meshFreeHash(const plan::Plan &plan) {
  plan::Plan p = plan;
  p.mutable_train()->clear_mesh();
  p.clear_flops_per_step();
  p.clear_predicted_peak_bytes();
  p.clear_signature();
  auto *programs = p.mutable_programs();
  for (int i = programs->size() - 1; i >= 0; --i)
    if (programs->Get(i).name() == "train_step") programs->DeleteSubrange(i, 1);
  return fnv1a64(serializePlan(p));
}

/* The plan's identity across tensor-parallel meshes too (docs/distributed.md, "Tensor
   parallelism"): -lm-spmd partitions every program (and so its generated kernels and
   the decode caches' shapes) and gives each split parameter its slice's type, so what
   is left to compare is the model, config, parameters with their logical types, inputs,
   train and data settings: the plan without its mesh, programs, kernels, states and the
   counts and predictions that follow from them. Accepted only where a tensor axis, or
   ZeRO stage 2 or 3 (whose -lm-zero-shard-params rewrites the train step, and with it
   the kernel table the programs share; stage 3 every program), is involved
   (the checkpoint's or the plan's): between plans without one the mesh-free hash, which
   keeps the other programs, decides. */
uint64_t tensorFreeHash(const plan::Plan &plan) {
  plan::Plan p = plan;
  p.mutable_train()->clear_mesh();
  p.clear_flops_per_step();
  p.clear_predicted_peak_bytes();
  p.clear_param_count();
  p.clear_signature();
  p.clear_programs();
  p.clear_kernels();
  p.clear_kernel_libraries();
  p.clear_states();
  for (plan::Param &param : *p.mutable_params()) {
    if (!param.has_sharding()) continue;
    param.mutable_type()->set_shape((int)param.sharding().dim(),
                                    splitLogicalSize(param.sharding(), param.type().shape((int)param.sharding().dim())));
    param.clear_sharding();
  }
  return fnv1a64(serializePlan(p));
}

/* Parameter i's type as a checkpoint records it: the logical tensor's. */
std::string paramType(const Session &s, size_t i) { return s.logicalType(i).str(); }

/* The plan's identity as meta.json records it. */
std::string planJson(const Session &session) {
  const plan::Plan &plan = session.plan();
  const std::vector<ParamState> &params = session.params();
  std::string s = "{\n    \"fnv1a64\": \"" + hex64(fnv1a64(serializePlan(plan))) + "\",\n";
  s += "    \"mesh_free_fnv1a64\": \"" + hex64(meshFreeHash(plan)) + "\",\n";
  s += "    \"tensor_free_fnv1a64\": \"" + hex64(tensorFreeHash(plan)) + "\",\n";
  if (plan.train().mesh().tensor() > 1)
    s += "    \"mesh_tensor\": " + std::to_string(plan.train().mesh().tensor()) + ",\n";
  if (plan.train().mesh().zero() >= 2)  // -lm-zero-shard-params rewrites its programs, as a tensor axis does
    s += "    \"mesh_zero\": " + std::to_string(plan.train().mesh().zero()) + ",\n";
  s += "    \"source\": " + json::quote(plan.source()) + ",\n";
  s += "    \"model\": " + json::quote(plan.model()) + ",\n";
  s += "    \"objective\": " + json::quote(plan.objective()) + ",\n";
  std::vector<std::pair<std::string, double>> config(plan.config().begin(), plan.config().end());
  std::sort(config.begin(), config.end());
  s += "    \"config\": {";
  for (size_t i = 0; i < config.size(); ++i)
    s += (i ? ", " : "") + json::quote(config[i].first) + ": " + num(config[i].second);
  s += "},\n";
  const plan::TrainConfig &tc = plan.train();
  const plan::Optimizer &o = tc.optimizer();
  s += "    \"train\": {\"optimizer\": " + json::quote(o.kind()) + ", \"lr\": " + num(o.lr()) +
       ", \"beta1\": " + num(o.beta1()) + ", \"beta2\": " + num(o.beta2()) + ", \"eps\": " + num(o.eps()) +
       ", \"weight_decay\": " + num(o.weight_decay()) + ", \"clip_grad_norm\": " + num(tc.clip_grad_norm()) +
       ", \"schedule\": " + json::quote(tc.schedule().kind()) + ", \"warmup_steps\": " +
       std::to_string(tc.schedule().warmup_steps()) + ", \"min_lr\": " + num(tc.schedule().min_lr()) +
       ", \"decay_steps\": " + std::to_string(tc.schedule().decay_steps()) + "},\n";
  s += "    \"params\": [";
  for (size_t i = 0; i < params.size(); ++i)
    s += std::string(i ? ",\n      " : "\n      ") + "[" + json::quote(params[i].name) + ", " +
         json::quote(paramType(session, i)) + "]";
  s += "\n    ]\n  }";
  return s;
}

/* `files`: the "files" object's members (each file's bytes and checksum); `tensors`:
   a sharded checkpoint's "tensors" array (checkpoint_shards.h), "" for a whole one. */
std::string metaJson(const Session &s, const CheckpointMeta &m, const std::string &files,
                     const std::string &tensors = "") {
  const LrSchedule &sc = m.schedule;
  std::string j = "{\n";
  j += "  \"format\": \"" + std::string(kFormat) + "\",\n";
  j += "  \"version\": " + std::to_string(tensors.empty() ? kCheckpointFormatVersion : kShardedCheckpointVersion) +
       ",\n";
  if (!tensors.empty()) {
    const plan::Mesh &mesh = s.plan().train().mesh();
    j += "  \"layout\": \"sharded\",\n";
    j += "  \"mesh\": {\"data\": " + std::to_string(std::max<int64_t>(1, mesh.data())) + ", \"tensor\": " +
         std::to_string(std::max<int64_t>(1, mesh.tensor())) + ", \"zero\": " + std::to_string(mesh.zero()) +
         ", \"ranks\": " + std::to_string(comm::world().size()) + "},\n";
  }
  j += "  \"step\": " + std::to_string(m.step) + ",\n";
  j += "  \"total_steps\": " + std::to_string(m.totalSteps) + ",\n";
  j += "  \"accumulate\": " + std::to_string(m.accumulate) + ",\n";
  j += "  \"schedule\": {\"kind\": " + json::quote(sc.kind) + ", \"lr\": " + num(sc.lr) +
       ", \"min_lr\": " + num(sc.minLr) + ", \"warmup_steps\": " + std::to_string(sc.warmupSteps) +
       ", \"decay_steps\": " + std::to_string(sc.decaySteps) + ", \"cooldown_fraction\": " +
       num(sc.cooldownFraction) + ", \"next_step\": " + std::to_string(m.step) + "},\n";
  j += "  \"optimizer\": {\"kind\": " + json::quote(s.plan().train().optimizer().kind()) +
       ", \"updates\": " + std::to_string(m.adamwUpdates) +
       ", \"skipped_steps\": " + std::to_string(m.nanSkips) + "},\n";
  if (m.lossScaler)  // fp16 plans: the scaler's whole state (docs/mixed-precision.md)
    j += "  \"loss_scaler\": {\"scale\": " + num(m.lossScaler->scale) + ", \"hysteresis_left\": " +
         std::to_string(m.lossScaler->hysteresisLeft) + ", \"clean_steps\": " +
         std::to_string(m.lossScaler->cleanSteps) + ", \"overflows\": " + std::to_string(m.lossScaler->overflows) +
         "},\n";
  // Every random stream is counter-based (docs/runtime.md, section 4): its whole state
  // is the seed plus the counters below.
  j += "  \"rng\": {\"seed\": \"" + std::to_string(m.seed) +
       "\", \"streams\": [\"init(seed, parameter)\", \"train(seed, step, row)\", \"val(seed, batch, row)\"]},\n";
  j += "  \"data\": {\"next_train_step\": " + std::to_string(m.step) + ", \"train_tokens\": " +
       std::to_string(m.trainTokens) + ", \"val_tokens\": " + std::to_string(m.valTokens) +
       ", \"train_fingerprint\": \"" + hex64(m.trainFingerprint) + "\", \"val_fingerprint\": \"" +
       hex64(m.valFingerprint) + "\"},\n";
  j += "  \"metrics\": {\"path\": " + json::quote(m.metricsPath) + ", \"bytes\": " +
       std::to_string(m.metricsBytes) + "},\n";
  j += "  \"plan\": " + planJson(s) + ",\n";
  if (!tensors.empty()) j += "  \"tensors\": " + tensors + ",\n";
  j += "  \"files\": {" + files + "},\n  ";
  j += std::string(kMetaChecksumKey) + ": \"" + hex64(fnv1a64(j)) + "\"\n}\n";
  return j;
}

// Field readers for a parsed meta.json; a missing or mistyped field means corruption.
struct MetaReader {
  const std::string &path;
  [[noreturn]] void corrupt(const std::string &msg) const {
    throw CheckpointError("checkpoint '" + path + "' is corrupted: " + msg, true);
  }
  const json::Value &field(const json::Value &obj, const char *key, json::Value::Kind kind) const {
    const json::Value *v = obj.find(key);
    if (!v || v->kind != kind)
      corrupt(std::string("meta.json: field '") + key + "' is missing or not a " + json::kindName(kind));
    return *v;
  }
  int64_t integer(const json::Value &obj, const char *key) const {
    int64_t x;
    if (!field(obj, key, json::Value::Number).asInt(x))
      corrupt(std::string("meta.json: field '") + key + "' is not an integer");
    return x;
  }
  double number(const json::Value &obj, const char *key) const {
    return std::strtod(field(obj, key, json::Value::Number).text.c_str(), nullptr);
  }
  std::string string(const json::Value &obj, const char *key) const {
    return field(obj, key, json::Value::String).text;
  }
  uint64_t hex(const json::Value &obj, const char *key) const {
    std::string t = string(obj, key);
    char *end = nullptr;
    uint64_t v = std::strtoull(t.c_str(), &end, 16);
    if (t.size() != 16 || *end) corrupt(std::string("meta.json: field '") + key + "' is not 16 hex digits");
    return v;
  }
  uint64_t decimal(const json::Value &obj, const char *key) const {
    std::string t = string(obj, key);
    char *end = nullptr;
    errno = 0;
    uint64_t v = std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || *end || errno || t[0] == '-') corrupt(std::string("meta.json: field '") + key + "' is not a number");
    return v;
  }
};

/* What differs between the checkpoint's plan record and this session's plan, or ""
   when nothing does. */
std::string planDifference(const MetaReader &r, const json::Value &rec, const Session &s) {
  const plan::Plan &plan = s.plan();
  const std::vector<ParamState> &params = s.params();
  const json::Value &ps = r.field(rec, "params", json::Value::Array);
  for (size_t i = 0; i < std::max(ps.items.size(), params.size()); ++i) {
    std::string theirs = "(none)", ours = "(none)";
    if (i < ps.items.size()) {
      const json::Value &e = ps.items[i];
      if (e.kind != json::Value::Array || e.items.size() != 2 || e.items[0].kind != json::Value::String ||
          e.items[1].kind != json::Value::String)
        r.corrupt("meta.json: plan parameter " + std::to_string(i) + " is not [name, type]");
      theirs = "'" + e.items[0].text + "' " + e.items[1].text;
    }
    if (i < params.size()) ours = "'" + params[i].name + "' " + paramType(s, i);
    if (theirs != ours)
      return "parameter " + std::to_string(i) + " is " + theirs + " in the checkpoint and " + ours +
             " in the plan (the checkpoint has " + std::to_string(ps.items.size()) + " parameters, the plan " +
             std::to_string(params.size()) + ")";
  }
  const json::Value &cfg = r.field(rec, "config", json::Value::Object);
  for (const auto &[k, v] : cfg.members) {
    auto it = plan.config().find(k);
    std::string ours = it == plan.config().end() ? "absent" : num(it->second);
    if (v.kind != json::Value::Number) r.corrupt("meta.json: config '" + k + "' is not a number");
    if (ours != num(std::strtod(v.text.c_str(), nullptr)))
      return "config '" + k + "' is " + v.text + " in the checkpoint and " + ours + " in the plan";
  }
  for (const auto &[k, v] : plan.config())
    if (!cfg.find(k)) return "config '" + k + "' is absent in the checkpoint and " + num(v) + " in the plan";
  for (const char *key : {"model", "objective"}) {
    std::string theirs = r.string(rec, key), ours = key[0] == 'm' ? plan.model() : plan.objective();
    if (theirs != ours) return std::string(key) + " is '" + theirs + "' in the checkpoint and '" + ours + "' in the plan";
  }
  const json::Value &tr = r.field(rec, "train", json::Value::Object);
  const plan::TrainConfig &tc = plan.train();
  const std::pair<const char *, double> nums[] = {
      {"lr", tc.optimizer().lr()}, {"beta1", tc.optimizer().beta1()}, {"beta2", tc.optimizer().beta2()},
      {"eps", tc.optimizer().eps()}, {"weight_decay", tc.optimizer().weight_decay()},
      {"clip_grad_norm", tc.clip_grad_norm()}, {"min_lr", tc.schedule().min_lr()},
      {"warmup_steps", (double)tc.schedule().warmup_steps()}, {"decay_steps", (double)tc.schedule().decay_steps()}};
  for (const auto &[key, ours] : nums)
    if (num(r.number(tr, key)) != num(ours))
      return std::string("train '") + key + "' is " + num(r.number(tr, key)) + " in the checkpoint and " +
             num(ours) + " in the plan";
  if (r.string(tr, "schedule") != tc.schedule().kind())
    return "train schedule is '" + r.string(tr, "schedule") + "' in the checkpoint and '" + tc.schedule().kind() +
           "' in the plan";
  uint64_t theirs = r.hex(rec, "fnv1a64"), ours = fnv1a64(serializePlan(plan));
  // A plan of the same model for another data-parallel mesh (or none) resumes it.
  if (theirs != ours && rec.find("mesh_free_fnv1a64") && r.hex(rec, "mesh_free_fnv1a64") == meshFreeHash(plan))
    return "";
  // A plan of the same model for another tensor-parallel mesh (or none) resumes it.
  const bool tensorAxis = plan.train().mesh().tensor() > 1 || rec.find("mesh_tensor") ||
                          plan.train().mesh().zero() >= 2 || rec.find("mesh_zero");
  if (theirs != ours && tensorAxis && rec.find("tensor_free_fnv1a64") &&
      r.hex(rec, "tensor_free_fnv1a64") == tensorFreeHash(plan))
    return "";
  if (theirs != ours)
    return "the plan checksum is " + hex64(theirs) + " in the checkpoint and " + hex64(ours) +
           " for this plan: same parameters, config and train settings, but compiled differently "
           "(another lmc, --fusion, --target or kernels); a resumed run would not reproduce";
  return "";
}

}  // namespace

std::string checkpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", (long long)step);
  return buf;
}

uint64_t dataFingerprint(const TokenSource &shard) {
  Fnv1a64 h;
  uint64_t n = shard.size();
  h.update(&n, 8);
  const uint64_t samples = std::min<uint64_t>(n, 4096);
  for (uint64_t i = 0; i < samples; ++i) {
    uint32_t t = (uint32_t)shard.token(samples == n ? i : (uint64_t)((unsigned __int128)i * n / samples));
    h.update(&t, 4);
  }
  return h.h;
}

namespace {

/* The state says whose it is: a state file of another step, run or plan put under
   this meta.json (checksums recomputed) is refused on resume, not trained on. */
std::map<std::string, std::string> stateMetadata(const Session &s, const CheckpointMeta &m) {
  return {{"format", kFormat},
          {"step", std::to_string(m.step)},
          {"updates", std::to_string(m.adamwUpdates)},
          {"seed", std::to_string(m.seed)},
          {"plan_fnv1a64", hex64(fnv1a64(serializePlan(s.plan())))},
          {"mesh_free_fnv1a64", hex64(meshFreeHash(s.plan()))},
          {"tensor_free_fnv1a64", hex64(tensorFreeHash(s.plan()))}};
}

std::string fileJson(const std::string &name, uint64_t bytes, uint64_t fnv) {
  return "\"" + name + "\": {\"bytes\": " + std::to_string(bytes) + ", \"fnv1a64\": \"" + hex64(fnv) + "\"}";
}

/* DIR/step-N.tmp, created empty (a stale one removed first). */
std::string beginCheckpoint(const std::string &dir, int64_t step) {
  if (!isDirectory(dir) && ::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create checkpoint directory '%s': %s", dir.c_str(), std::strerror(errno));
  const std::string tmp = dir + "/" + checkpointName(step) + ".tmp";
  if (isDirectory(tmp)) removeCheckpointDir(tmp, nullptr);
  if (::mkdir(tmp.c_str(), 0777) != 0)
    fail("cannot create checkpoint directory '%s': %s", tmp.c_str(), std::strerror(errno));
  return tmp;
}

/* The commit point: meta.json written last into DIR/step-N.tmp, which is then renamed
   to DIR/step-N. Returns that path. */
std::string commitCheckpoint(const std::string &dir, int64_t step, const std::string &meta) {
  const std::string final = dir + "/" + checkpointName(step), tmp = final + ".tmp", old = final + ".old";
  writeFileAtomic(tmp + "/" + kMetaFile, "checkpoint metadata",
                  [&](std::ostream &f) { f.write(meta.data(), (std::streamsize)meta.size()); });
  fsyncPath(tmp, "checkpoint directory");
  // A checkpoint of this step may exist (a corrupted one a resume skipped, or this
  // step's own from a run resumed earlier). The two are swapped in one atomic
  // rename, so a kill at any instant leaves a complete step-N: the new one, or the
  // old one with the new one in step-N.tmp (removed by the next run as stale).
  if (isDirectory(final)) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(), RENAME_EXCHANGE) == 0) {
      fsyncPath(dir, "checkpoint directory");
      removeCheckpointDir(tmp, nullptr);  // now the old one
      return final;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
      fail("cannot replace checkpoint '%s': %s", final.c_str(), std::strerror(errno));
    // A file system without the exchange: move the old one aside first. A kill
    // between the two renames leaves only step-N.old, which the next run puts back
    // (removeStaleCheckpointTemps) rather than losing both.
    if (isDirectory(old)) removeCheckpointDir(old, nullptr);
    if (std::rename(final.c_str(), old.c_str()) != 0)
      fail("cannot replace checkpoint '%s': %s", final.c_str(), std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), final.c_str()) != 0)
    fail("cannot rename checkpoint '%s' to '%s': %s", tmp.c_str(), final.c_str(), std::strerror(errno));
  fsyncPath(dir, "checkpoint directory");
  if (isDirectory(old)) removeCheckpointDir(old, nullptr);
  return final;
}

}  // namespace

std::string writeCheckpoint(const std::string &dir, Session &s, const CheckpointMeta &m) {
  const std::string tmp = beginCheckpoint(dir, m.step);
  // The logical tensors: a tensor-parallel rank's slices gathered as they are written
  // (every other rank of the tensor group joins: RunOutputs::checkpoint).
  LogicalState logical(s, true);
  uint64_t fnv = 0;
  logical.write(tmp + "/" + kStateFile, stateMetadata(s, m), &fnv);
  struct stat st;
  if (::stat((tmp + "/" + kStateFile).c_str(), &st) != 0)
    fail("checkpoint '%s': state file vanished: %s", tmp.c_str(), std::strerror(errno));
  return commitCheckpoint(dir, m.step, metaJson(s, m, fileJson(kStateFile, (uint64_t)st.st_size, fnv)));
}

std::string writeShardedCheckpoint(const std::string &dir, Session &s, const CheckpointMeta &m) {
  comm::Communicator &world = comm::world();
  const int rank = world.rank(), ranks = world.size();
  const int tensor = s.plan().train().mesh().tensor() > 1 ? (int)s.plan().train().mesh().tensor() : 1;
  const std::string tmp = dir + "/" + checkpointName(m.step) + ".tmp";
  // Rank 0 makes the directory before any rank writes into it.
  if (rank == 0) beginCheckpoint(dir, m.step);
  double created = 1;
  if (ranks > 1) world.allReduce(&created, &created, 1, DType::F64, comm::Reduction::Sum, "the checkpoint's start");
  const std::vector<CheckpointTensor> tensors = checkpointTensors(s);
  std::map<std::string, std::string> metadata = stateMetadata(s, m);
  metadata["shard"] = std::to_string(rank) + " of " + std::to_string(ranks);
  uint64_t bytes = 0, fnv = 0;
  writeShardFile(tmp + "/" + shardFileName(rank, ranks), s, tensors, shardPieces(tensors, rank, ranks / tensor, tensor),
                 metadata, bytes, fnv);
  // sharded-checkpoint.test: a rank that dies with its shard written, before the commit.
  if (const char *v = std::getenv("LMRT_TEST_DIE_AFTER_SHARD"); v && std::to_string(m.step) == v) ::raise(SIGKILL);
  // Every shard durably written (each rank fsyncs its own before it gets here), its
  // size and checksum to rank 0, which then commits.
  // (Gathered as f64 elements, which the collectives copy as bytes.)
  const uint64_t mine[2] = {bytes, fnv};
  std::vector<uint64_t> all((size_t)ranks * 2);
  world.allGather(mine, all.data(), 2, DType::F64, "the checkpoint shards' checksums");
  if (rank != 0) return "";
  std::string files;
  for (int r = 0; r < ranks; ++r)
    files += std::string(r ? ",\n    " : "\n    ") +
             fileJson(shardFileName(r, ranks), all[(size_t)r * 2], all[(size_t)r * 2 + 1]);
  return commitCheckpoint(dir, m.step, metaJson(s, m, files + "\n  ", shardedTensorsJson(tensors, ranks / tensor, tensor)));
}

namespace {

/* The logical tensors of checkpoint `path` (meta.json `root`, its checksum verified):
   state.safetensors, or a sharded checkpoint's shards put together. */
SafetensorsFile readCheckpointState(const std::string &path, const json::Value &root, int64_t version,
                                    const MetaReader &r) {
  if (version >= kShardedCheckpointVersion) {
    if (r.string(root, "layout") != "sharded") r.corrupt("meta.json: layout is not \"sharded\"");
    return assembleShards(path, root, [&](const std::string &msg) { r.corrupt(msg); });
  }
  const json::Value &files = r.field(root, "files", json::Value::Object);
  const json::Value &state = r.field(files, kStateFile, json::Value::Object);
  int64_t bytes = r.integer(state, "bytes");
  uint64_t fnv = r.hex(state, "fnv1a64");
  std::string statePath = path + "/" + kStateFile;
  std::string stateBytes;
  try {
    stateBytes = readWholeFile(statePath, "checkpoint state");
  } catch (const Error &e) {
    r.corrupt(std::string("incomplete: ") + e.what());
  }
  if ((int64_t)stateBytes.size() != bytes)
    r.corrupt(std::string(kStateFile) + " has " + std::to_string(stateBytes.size()) + " bytes, meta.json says " +
              std::to_string(bytes) + " (truncated?)");
  uint64_t actual = fnv1a64(stateBytes);
  if (actual != fnv)
    r.corrupt(std::string(kStateFile) + " checksum mismatch (stored " + hex64(fnv) + ", computed " + hex64(actual) + ")");
  try {
    return decodeSafetensors(std::move(stateBytes), statePath);
  } catch (const Error &e) {
    r.corrupt(e.what());
  }
}

/* meta.json of checkpoint `path`, parsed, its format, version and checksum checked. */
json::Value readMetaJson(const std::string &path, const MetaReader &r, int64_t &version) {
  auto refuse = [&](const std::string &msg) -> CheckpointError {
    return CheckpointError("checkpoint '" + path + "' " + msg, false);
  };
  std::string text;
  try {
    text = readWholeFile(path + "/" + kMetaFile, "checkpoint metadata");
  } catch (const Error &e) {
    r.corrupt(std::string("incomplete: ") + e.what());
  }
  json::Value root;
  try {
    root = json::parse(text);
  } catch (const Error &e) {
    r.corrupt(std::string("meta.json: ") + e.what());
  }
  if (root.kind != json::Value::Object) r.corrupt("meta.json is not a JSON object");
  const json::Value *format = root.find("format");
  if (!format || format->kind != json::Value::String || format->text != kFormat)
    throw refuse("is not an LMC checkpoint (meta.json has no \"format\": \"lmc-checkpoint\")");
  version = r.integer(root, "version");
  if (version < 1 || version > kShardedCheckpointVersion)
    throw refuse("has checkpoint format version " + std::to_string(version) + "; this lmrt reads versions 1 to " +
                 std::to_string(kShardedCheckpointVersion));
  size_t at = text.rfind(kMetaChecksumKey);
  if (at == std::string::npos) r.corrupt("meta.json has no meta_fnv1a64");
  uint64_t storedMeta = r.hex(root, "meta_fnv1a64"), actualMeta = fnv1a64(std::string_view(text).substr(0, at));
  if (storedMeta != actualMeta)
    r.corrupt("meta.json checksum mismatch (stored " + hex64(storedMeta) + ", computed " + hex64(actualMeta) + ")");
  return root;
}

}  // namespace

size_t consolidateCheckpoint(const std::string &path, const std::string &out, bool paramsOnly) {
  MetaReader r{path};
  int64_t version = 0;
  const json::Value root = readMetaJson(path, r, version);
  const SafetensorsFile state = readCheckpointState(path, root, version, r);
  std::set<std::string> params;  // the plan's parameters, as meta.json records them
  for (const json::Value &p : r.field(r.field(root, "plan", json::Value::Object), "params", json::Value::Array).items)
    if (p.kind == json::Value::Array && !p.items.empty() && p.items[0].kind == json::Value::String)
      params.insert(p.items[0].text);
  std::vector<NamedTensor> tensors;
  for (const std::string &name : state.order) {
    if (paramsOnly && !params.count(name)) continue;
    const SafetensorsTensor &t = state.tensors.at(name);
    tensors.emplace_back(name, TensorRef{const_cast<char *>(t.bytes.data()), t.type});  // only read
  }
  std::map<std::string, std::string> metadata = state.metadata;
  metadata.erase("shard");
  writeSafetensors(out, tensors, paramsOnly ? std::map<std::string, std::string>{} : metadata);
  return tensors.size();
}

Checkpoint readCheckpoint(const std::string &path, const Session &s) {
  MetaReader r{path};
  auto refuse = [&](const std::string &msg) -> CheckpointError {
    return CheckpointError("checkpoint '" + path + "' " + msg, false);
  };
  int64_t version = 0;
  const json::Value root = readMetaJson(path, r, version);

  std::string diff = planDifference(r, r.field(root, "plan", json::Value::Object), s);
  if (!diff.empty()) throw refuse("belongs to another plan: " + diff);

  Checkpoint c;
  c.path = path;
  CheckpointMeta &m = c.meta;
  m.step = r.integer(root, "step");
  m.totalSteps = r.integer(root, "total_steps");
  m.accumulate = r.integer(root, "accumulate");
  if (m.step < 1 || m.totalSteps < 1 || m.accumulate < 1) r.corrupt("meta.json: step, total_steps or accumulate < 1");
  const json::Value &sc = r.field(root, "schedule", json::Value::Object);
  m.schedule.kind = r.string(sc, "kind");
  m.schedule.lr = r.number(sc, "lr");
  m.schedule.minLr = r.number(sc, "min_lr");
  m.schedule.warmupSteps = r.integer(sc, "warmup_steps");
  m.schedule.decaySteps = r.integer(sc, "decay_steps");
  m.schedule.cooldownFraction = r.number(sc, "cooldown_fraction");
  m.adamwUpdates = r.integer(r.field(root, "optimizer", json::Value::Object), "updates");
  m.nanSkips = r.integer(r.field(root, "optimizer", json::Value::Object), "skipped_steps");
  if (s.plan().train().has_loss_scale()) {
    const json::Value &ls = r.field(root, "loss_scaler", json::Value::Object);
    LossScalerState st;
    st.scale = r.number(ls, "scale");
    st.hysteresisLeft = r.integer(ls, "hysteresis_left");
    st.cleanSteps = r.integer(ls, "clean_steps");
    st.overflows = r.integer(ls, "overflows");
    if (!(st.scale > 0) || st.hysteresisLeft < 1 || st.cleanSteps < 0 || st.overflows < 0)
      r.corrupt("meta.json: loss_scaler needs scale > 0, hysteresis_left >= 1, clean_steps and overflows >= 0");
    m.lossScaler = st;
  }
  m.seed = r.decimal(r.field(root, "rng", json::Value::Object), "seed");
  const json::Value &data = r.field(root, "data", json::Value::Object);
  m.trainTokens = (uint64_t)r.integer(data, "train_tokens");
  m.valTokens = (uint64_t)r.integer(data, "val_tokens");
  m.trainFingerprint = r.hex(data, "train_fingerprint");
  m.valFingerprint = r.hex(data, "val_fingerprint");
  const json::Value &metrics = r.field(root, "metrics", json::Value::Object);
  m.metricsPath = r.string(metrics, "path");
  m.metricsBytes = r.integer(metrics, "bytes");

  if (version >= kShardedCheckpointVersion) {
    if (r.string(root, "layout") != "sharded") r.corrupt("meta.json: layout is not \"sharded\"");
    c.shards = std::make_shared<const ShardReader>(path, root, [&](const std::string &msg) { r.corrupt(msg); });
  } else {
    c.state = readCheckpointState(path, root, version, r);
  }
  // The checkpoint's tensors, whole or sharded.
  auto stateType = [&](const std::string &name) -> const TensorType * {
    if (c.shards) return c.shards->type(name);
    auto it = c.state.tensors.find(name);
    return it == c.state.tensors.end() ? nullptr : &it->second.type;
  };
  const std::map<std::string, std::string> &stateMetadata = c.shards ? c.shards->metadata() : c.state.metadata;
  const size_t stateCount = c.shards ? c.shards->size() : c.state.tensors.size();
  const std::string stateName = version >= kShardedCheckpointVersion ? "its shards" : kStateFile;
  // Every parameter and its optimizer state (runtime/exec/optimizer.h's slots).
  const OptimizerConfig optimizer = optimizerConfig(s.plan());
  size_t expected = 0;
  for (size_t i = 0; i < s.params().size(); ++i) {
    const ParamState &p = s.params()[i];
    const TensorType logical = s.logicalType(i);  // a split parameter's state is split alike (tensor_parallel.h)
    std::vector<std::pair<std::string, TensorType>> want = {{p.name, logical}};
    for (const StateSlot &slot : stateSlots(optimizer, p.type.shape))
      want.push_back({slot.prefix + "." + p.name,
                      TensorType{p.type.dtype, slot.shape == p.type.shape ? logical.shape : slot.shape}});
    for (const auto &[name, type] : want) {
      const TensorType *have = stateType(name);
      if (!have) r.corrupt(stateName + " has no tensor '" + name + "'");
      if (have->str() != type.str())
        r.corrupt(stateName + ": tensor '" + name + "' is " + have->str() + ", expected " + type.str());
    }
    expected += want.size();
  }
  if (version >= 2) {
    const std::pair<const char *, std::string> want[] = {{"step", std::to_string(m.step)},
                                                         {"updates", std::to_string(m.adamwUpdates)},
                                                         {"seed", std::to_string(m.seed)},
                                                         {"plan_fnv1a64", hex64(fnv1a64(serializePlan(s.plan())))}};
    for (const auto &[key, value] : want) {
      auto it = stateMetadata.find(key);
      if (it == stateMetadata.end())
        r.corrupt(stateName + " does not record its " + key);
      // Another data-parallel mesh of the same model (meshFreeHash): meta.json's plan
      // record was checked the same way.
      auto meshFree = stateMetadata.find("mesh_free_fnv1a64");
      if (std::string(key) == "plan_fnv1a64" && it->second != value && meshFree != stateMetadata.end() &&
          meshFree->second == hex64(meshFreeHash(s.plan())))
        continue;
      // Another tensor-parallel mesh: meta.json's plan record was checked (planDifference).
      auto tensorFree = stateMetadata.find("tensor_free_fnv1a64");
      if (std::string(key) == "plan_fnv1a64" && it->second != value && tensorFree != stateMetadata.end() &&
          tensorFree->second == hex64(tensorFreeHash(s.plan())))
        continue;
      if (it->second != value)
        r.corrupt(stateName + " is of " + key + " " + it->second + ", meta.json's is " + value +
                  " (the files are of different checkpoints)");
    }
  }
  if (stateCount != expected)
    r.corrupt(stateName + " has " + std::to_string(stateCount) + " tensors, expected " +
              std::to_string(expected));
  return c;
}

std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string &n : directoryEntries(dir)) {
    int64_t step = stepOfName(n);
    if (step >= 0 && isDirectory(dir + "/" + n)) out.emplace_back(step, dir + "/" + n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Checkpoint findResumeCheckpoint(const std::string &path, const Session &s, FILE *log) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw CheckpointError("--resume '" + path + "': " + std::strerror(errno), false);
  if (!S_ISDIR(st.st_mode))
    throw CheckpointError("--resume '" + path + "' is not a directory (expected a checkpoint directory, or "
                          "the --checkpoint-dir that holds them)", false);
  if (::access((path + "/" + kMetaFile).c_str(), F_OK) == 0) return readCheckpoint(path, s);
  std::vector<std::pair<int64_t, std::string>> all = listCheckpoints(path);
  std::string skipped;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      return readCheckpoint(it->second, s);
    } catch (const CheckpointError &e) {
      if (!e.corrupt) throw;
      std::fprintf(log, "skipping %s\n", e.what());
      skipped += std::string("\n  ") + e.what();
    }
  }
  if (all.empty())
    throw CheckpointError("--resume '" + path + "' holds no checkpoint (no step-NNNNNNNN directory)", false);
  throw CheckpointError("--resume '" + path + "': no valid checkpoint among " + std::to_string(all.size()) + ":" +
                        skipped, false);
}

/* `local` = the checkpoint's tensor `name`, or where `param` (>= 0) is a split parameter,
   this rank's slice of it (Session::sliceParam: a tensor of that parameter's shape). */
static void restoreTensor(const Checkpoint &c, const std::string &name, const TensorRef &local, const Session &s,
                          int param) {
  const plan::ParamSharding *sharding = param >= 0 ? s.sharding((size_t)param) : nullptr;
  if (c.shards) {
    const plan::ParamSharding *block = sharding ? s.blockSharding((size_t)param) : nullptr;
    if (!block) return c.shards->read(name, local, sharding, s.tensorRank());
    // ZeRO stage 3 on a data x tensor mesh: the tensor-parallel block, then its data slice.
    TensorType blockType = toTensorType(s.plan().params(param).type());
    blockType.dtype = local.type.dtype;
    HostBytes bytes((size_t)blockType.bytes());
    c.shards->read(name, TensorRef{bytes.data(), blockType}, block, s.blockRank());
    return sliceShard(*sharding, TensorRef{bytes.data(), blockType}, local, s.tensorRank());
  }
  const SafetensorsTensor &t = c.state.tensors.at(name);
  if (!sharding) {
    std::memcpy(local.data, t.bytes.data(), t.bytes.size());
    return;
  }
  s.sliceParam((size_t)param, TensorRef{const_cast<char *>(t.bytes.data()), t.type}, local);
}

static void restoreWhole(const Checkpoint &c, Session &s, const std::vector<int> &owner);

void restoreCheckpoint(const Checkpoint &c, Session &s) {
  // The state tensors in checkpoint order: each parameter's slots (optimizer.h) in plan
  // order, each with the split parameter it is cut like (-1: none).
  const OptimizerConfig optimizer = optimizerConfig(s.plan());
  std::vector<int> owner;
  for (size_t i = 0; i < s.params().size(); ++i)
    for (const StateSlot &slot : stateSlots(optimizer, s.params()[i].type.shape))
      owner.push_back(slot.shape == s.params()[i].type.shape && s.sharding(i) ? (int)i : -1);
  // A ZeRO rank's optimizer state slices, read from a sharded checkpoint as they are.
  auto *held = dynamic_cast<HeldOptimizerState *>(&s.backend());
  std::vector<HeldTensor> slices;
  if (c.shards && held) slices = held->beginHeldRestore(c.meta.adamwUpdates);
  if (!slices.empty()) {
    for (size_t k = 0; k < slices.size(); ++k) {
      const HeldTensor &h = slices[k];
      if (k < owner.size() && owner[k] >= 0) fail("internal error: a split parameter's state held as a flat slice");
      c.shards->readRange(h.name, h.begin, h.end, const_cast<void *>(h.data));
    }
  } else {
    restoreWhole(c, s, owner);
  }
  for (size_t i = 0; i < s.params().size(); ++i)
    restoreTensor(c, s.params()[i].name, s.params()[i].valueRef(), s, (int)i);
  s.pushParams();
}

void loadWeightsOrCheckpoint(Session &s, const std::string &path) {
  if (!isDirectory(path)) return (void)loadWeights(s, path);
  if (::access((path + "/" + kMetaFile).c_str(), F_OK) != 0)
    fail("--weights '%s' is a directory without %s: give a weights file, or one checkpoint directory (%s/step-N)",
         path.c_str(), kMetaFile, path.c_str());
  const Checkpoint c = readCheckpoint(path, s);
  for (size_t i = 0; i < s.params().size(); ++i)
    restoreTensor(c, s.params()[i].name, s.params()[i].valueRef(), s, (int)i);
  s.pushParams();
}

/* The optimizer state through Backend::beginRestore: every tensor the backend holds
   whole (or, under ZeRO from a whole checkpoint, the whole tensors it then scatters). */
static void restoreWhole(const Checkpoint &c, Session &s, const std::vector<int> &owner) {
  const std::vector<NamedTensor> state = s.backend().beginRestore(c.meta.adamwUpdates);
  for (size_t k = 0; k < state.size(); ++k)
    restoreTensor(c, state[k].first, state[k].second, s, k < owner.size() ? owner[k] : -1);
  s.backend().finishRestore();
}

void pruneCheckpoints(const std::string &dir, int64_t keep, FILE *log) {
  if (keep <= 0) return;
  std::vector<std::pair<int64_t, std::string>> all = listCheckpoints(dir);
  for (size_t i = 0; i + (size_t)keep < all.size(); ++i) removeCheckpointDir(all[i].second, log);
}

void removeStaleCheckpointTemps(const std::string &dir, FILE *log) {
  for (const std::string &n : directoryEntries(dir)) {
    for (const char *suffix : {".tmp", ".old"}) {
      size_t k = std::strlen(suffix);
      if (n.size() <= k || n.compare(n.size() - k, k, suffix) != 0) continue;
      const std::string name = n.substr(0, n.size() - k), path = dir + "/" + n;
      if (stepOfName(name) < 0 || !isDirectory(path)) continue;
      // step-N.old without step-N: a replace killed between its two renames; the
      // old checkpoint is the one that was complete.
      if (std::strcmp(suffix, ".old") == 0 && !isDirectory(dir + "/" + name) &&
          std::rename(path.c_str(), (dir + "/" + name).c_str()) == 0) {
        fsyncPath(dir, "checkpoint directory");
        if (log) std::fprintf(log, "restored '%s/%s' from '%s', left by an interrupted checkpoint write\n",
                              dir.c_str(), name.c_str(), n.c_str());
        continue;
      }
      if (removeCheckpointDir(path, log) && log)
        std::fprintf(log, "removed '%s/%s', left by an interrupted checkpoint write\n", dir.c_str(), n.c_str());
    }
  }
}

void removeAllCheckpoints(const std::string &dir, FILE *log) {
  for (const auto &[step, path] : listCheckpoints(dir))
    if (removeCheckpointDir(path, log) && log) std::fprintf(log, "removed '%s' (--overwrite)\n", path.c_str());
}

}  // namespace lmrt
