/* Implements: the setup of `lmrt run`, everything decided before the first step:
   where the run starts (step 1, or after a checkpoint), how long it runs, with which
   seed, micro-batches and schedule, where its outputs go (every flag combination and
   path checked, docs/runtime.md §9), and the data it must keep seeing (a shard
   rewritten under the run is noticed before the next step). */
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "base/dir_lock.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/distributed.h"
#include "runtime/train/schedule.h"
#include "runtime/train/train_loop.h"

namespace lmrt {

class Session;
class DataFeed;
class TokenSource;

struct RunSetup {
  int64_t steps = 0, firstStep = 1, stopAt = 0, accumulate = 1;
  int rank = 0, ranks = 1;  // data-parallel rank and rank count (distributed.h)
  int64_t lastStep = 0;  // the last step this invocation trains (stopAt or steps)
  uint64_t seed = 1;
  bool evalOn = false;
  LrSchedule schedule;
  std::string checkpointDir;
  // A rank other than 0 (which writes none) under ZeRO or tensor parallelism: it joins
  // the gather of its slices at every checkpoint rank 0 writes (joinsWeights: and of
  // the final weights).
  bool joinsCheckpoints = false, joinsWeights = false;
  // Sharded checkpoints (--checkpoint-format): every rank writes its shard into
  // shardDir (rank 0's checkpointDir; every process's, the others' checkpointDir being
  // cleared), so every rank takes part in each checkpoint.
  bool sharded = false;
  std::string shardDir;
  std::string outPath;               // the final weights
  bool clearOldCheckpoints = false;  // --overwrite: remove an earlier run's at this run's first checkpoint
  std::unique_ptr<Checkpoint> resume;
  std::unique_ptr<DirectoryLock> lock;  // held on checkpointDir for the life of the run
};

/* Checks the options and every path, finds the checkpoint a resume continues from;
   throws naming the flag at fault. */
RunSetup planRun(Session &session, const TrainOptions &options, FILE *log);
/* The same for one rank of a distributed run: only rank 0 checks and
   takes the output paths (the others write nothing: no checkpoint directory, no
   weights file). */
RunSetup planRun(Session &session, const TrainOptions &options, FILE *log, const RankInfo &ranks);

/* The checkpoint metadata of this run before its first step: seed, steps, schedule,
   the data's identity; on a resume, also checks that the data is the checkpoint's. */
CheckpointMeta startMeta(const RunSetup &run, const DataFeed &data, const std::string &dataDir);

/* The identity of a split's files (device, inode, size, mtime), taken at the start,
   so a shard rewritten under the run is noticed before a step reads it. */
class DataWatch {
public:
  DataWatch(const TokenSource &train, const TokenSource &val);
  /* The first file that changed since the start, or "". */
  std::string changedFile() const;

private:
  struct Stamp {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    struct timespec mtime {};
    static Stamp of(const std::string &path);
    bool operator==(const Stamp &o) const;
  };
  std::vector<Stamp> stamps_;
};

}  // namespace lmrt
