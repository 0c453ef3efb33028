/* Implements: training checkpoints, the state `lmrt run --resume` continues from.

   A checkpoint is a directory DIR/step-00000040 holding two files:
     state.safetensors  every parameter under its plan name, and the AdamW moments
                        as "adamw.m.<name>" and "adamw.v.<name>", in the plan's dtypes;
                        its __metadata__ names the step, the update count, the seed
                        and the plan's checksum, which must agree with meta.json
     meta.json          the format and version, the plan's identity (checksum, config,
                        parameters), the step, the resolved schedule, the AdamW update
                        count, the seed of every counter-based RNG stream, the data
                        cursor and fingerprint, the metrics file length, and the
                        FNV-1a-64 of state.safetensors; it ends with its own checksum
   A sharded checkpoint (several processes, writeShardedCheckpoint) holds, in place of
   state.safetensors, each rank's shard-RRRRR-of-WWWWW.safetensors, and meta.json
   (version 3) lists every tensor's pieces (checkpoint_shards.h).
   It is written as DIR/step-00000040.tmp (each file fsynced), renamed into place, and
   DIR fsynced, so a crash at any instant leaves the previous checkpoint intact and
   at worst a .tmp directory that the next run removes. Readers check everything
   (docs/runtime.md, "Checkpoints"): a corrupted checkpoint is reported and skipped,
   one of another plan or format version is refused naming what differs. */
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "runtime/weights/safetensors.h"
#include "base/tensor.h"
#include "runtime/train/loss_scaler.h"
#include "runtime/train/schedule.h"

namespace lmrt {

class Session;
class TokenSource;

/* Version 2: state.safetensors also records its step, update count, seed and plan
   (its __metadata__), which a resume checks against meta.json. Version 1 is still
   read, without that check. */
constexpr int64_t kCheckpointFormatVersion = 2;
/* Version 3: a sharded checkpoint (writeShardedCheckpoint). */
constexpr int64_t kShardedCheckpointVersion = 3;

/* What identifies a training position besides the parameters and moments. */
struct CheckpointMeta {
  int64_t step = 0;        // optimizer updates done; the next step trains on batch `step`
  int64_t totalSteps = 0;  // the run's --steps
  uint64_t seed = 1;       // keys parameter init and every data stream (counter-based RNG)
  int64_t accumulate = 1;  // micro-batches per update, over all data-parallel ranks
  LrSchedule schedule;     // resolved (decay_steps filled in)
  int64_t adamwUpdates = 0;
  uint64_t trainTokens = 0, valTokens = 0;            // data identity
  uint64_t trainFingerprint = 0, valFingerprint = 0;
  std::string metricsPath;   // "" when the run wrote no metrics file
  int64_t metricsBytes = -1; // its length after the line of `step` (-1: not a regular file)
  int64_t nanSkips = 0;      // steps skipped so far for non-finite values (--on-nan skip)
  std::optional<LossScalerState> lossScaler;  // fp16 plans: the dynamic loss scaler's state
};

/* A checkpoint that cannot be used. `corrupt`: damaged or incomplete (a resume skips
   it and tries an older one); otherwise it is intact but not for this run (another
   plan, another format version), and a resume stops. */
struct CheckpointError : Error {
  CheckpointError(const std::string &msg, bool corrupt) : Error(msg), corrupt(corrupt) {}
  bool corrupt;
};

class ShardReader;

struct Checkpoint {
  std::string path;
  CheckpointMeta meta;
  SafetensorsFile state;                 // a whole checkpoint's tensors
  std::shared_ptr<const ShardReader> shards;  // a sharded one's, read slice by slice on restore
};

/* "step-00000040" */
std::string checkpointName(int64_t step);

/* A fingerprint of a shard's contents (its size and 4096 evenly spaced tokens):
   cheap at every start, and enough to tell another data set. */
uint64_t dataFingerprint(const TokenSource &shard);

/* Writes DIR/step-<step> (see above) and returns its path. An existing checkpoint of
   the same step (from a run that was resumed earlier) is replaced. */
std::string writeCheckpoint(const std::string &dir, Session &session, const CheckpointMeta &meta);

/* The sharded checkpoint of a distributed run (docs/runtime.md §8): every process
   calls it (a collective over the world). Rank 0 makes DIR/step-<step>.tmp, each rank
   writes its own pieces of the logical tensors to shard-RRRRR-of-WWWWW.safetensors
   there (checkpoint_shards.h: no gather), fsynced; once every rank has, rank 0 writes
   meta.json (version 3: the mesh, every tensor's dtype, shape and pieces, every
   shard's size and checksum) and renames the directory into place: the commit point,
   so a rank killed mid-write leaves the previous checkpoint the newest complete one.
   Returns the checkpoint's path on rank 0, "" on the others. */
std::string writeShardedCheckpoint(const std::string &dir, Session &session, const CheckpointMeta &meta);

/* `lmrt checkpoint consolidate`: the logical tensors of checkpoint `path` (whole or
   sharded; verified, no plan needed) into one safetensors file `out`, the file a
   whole checkpoint's state.safetensors would be; with `paramsOnly` only the
   parameters (a weights file for --init, export, sample). Returns how many tensors. */
size_t consolidateCheckpoint(const std::string &path, const std::string &out, bool paramsOnly);

/* Reads and verifies one checkpoint directory against the session's plan. Throws
   CheckpointError. */
Checkpoint readCheckpoint(const std::string &path, const Session &session);

/* `path` is a checkpoint directory, or a directory of them: then the newest one
   that verifies, skipping (and reporting on `log`) corrupted ones. Throws
   CheckpointError if there is none, or if one is of another plan or version. */
Checkpoint findResumeCheckpoint(const std::string &path, const Session &session, FILE *log);

/* Copies the parameters and the optimizer state into the session and its backend;
   from a sharded checkpoint, each rank reads only the parts of the shard files that
   hold what it keeps (ShardReader::read). */
void restoreCheckpoint(const Checkpoint &ckpt, Session &session);

/* `lmrt eval`, `sample` and `forward --weights PATH`: a weights file (loadWeights), or a
   checkpoint directory (step-N, whole or sharded, verified against the plan as a resume
   is): its parameters, each rank reading only its slices; the optimizer state is not
   read. */
void loadWeightsOrCheckpoint(Session &session, const std::string &path);

/* The checkpoints in `dir` (names step-NNNNNNNN, complete or not), oldest first. */
std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &dir);

/* Removes all but the newest `keep` checkpoints (keep 0: none removed). */
void pruneCheckpoints(const std::string &dir, int64_t keep, FILE *log);

/* Removes DIR/step-*.tmp directories left by a killed write. */
void removeStaleCheckpointTemps(const std::string &dir, FILE *log);

/* Removes every checkpoint in `dir` (`--overwrite` of an earlier run's). */
void removeAllCheckpoints(const std::string &dir, FILE *log);

}  // namespace lmrt
