/* Implements: what `lmrt run` does as one rank of a data-parallel run
   (docs/distributed.md). The plan's train_step is one rank's program (lmc
   compile --mesh data=D: batch / D rows, gradients and loss averaged over the
   ranks by lm.all_reduce); here the loop joins the ranks:
   - the plan's mesh must match the processes the launcher started, and every
     rank must run the same plan with the same seed, steps and micro-batches;
   - rank r reads rows (j * D + r) * rows of micro-batch j of every global batch,
     so the global batch and the sample order are those of one process reading
     D micro-batches a step (accumulate = D), which DP reproduces bit for bit;
   - rank 0 alone writes the log, metrics, TensorBoard events and weights, and
     commits checkpoints (each rank writes its shard of one: checkpoint.h); the
     others are quiet unless they fail;
   - a stop signal seen by any rank stops every rank after the same step. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace lmrt {

class Session;
struct TrainOptions;

struct RankInfo {
  int rank = 0, ranks = 1;              // this process's data-parallel rank (its data group's index), of `ranks`
  int tensorRank = 0, tensorRanks = 1;  // its rank in its tensor group (tensor parallelism), of `tensorRanks`
  int worldRank = 0;                    // among all processes: rank * tensorRanks + tensorRank
  bool writer() const { return worldRank == 0; }
};

/* Checks the plan's mesh (data x tensor) against the launcher's processes and the
   run's settings across the ranks, and forms the mesh's groups (comm::setMesh: the
   tensor ranks of one data rank adjacent, as Megatron-LM); throws naming what differs
   and how to launch the plan. Every rank of a tensor group reads its data rank's rows,
   so the rows are the data-parallel run's. */
RankInfo joinRanks(const Session &session, const TrainOptions &options);

/* `lmrt eval`, `sample` and `forward` on the plan's mesh (docs/distributed.md,
   "Evaluating and sampling on the ranks"). A tensor-parallel or ZeRO stage 3 plan's
   programs hold one rank's slices of the weights and collectives over the other
   ranks, so they run on the mesh's D x T processes (mpirun -np D*T); a plan without
   them runs in one process, or on its data ranks. Here: the processes are checked
   against the mesh (one process given a sliced plan is told the mpirun form and the
   one-process way: the same model compiled without the mesh), every rank must run
   the same plan with the same `settings` (the command's options that decide which
   programs run how often), the mesh's groups are formed and the session takes the
   rank's slices (setTensorRank), so that loadWeights cuts them from the whole
   tensors. Every rank then runs the same programs; rank 0 (writer()) prints. */
RankInfo joinCommandRanks(Session &session, const std::string &planPath, const char *command,
                          const std::string &settings);

/* Where a quiet rank's log goes: nowhere. */
FILE *quietLog();

/* Whether any rank saw a stop signal (every rank gets the same answer). */
bool anyRank(const RankInfo &ranks, bool flag);

/* Called by every process before a micro-batch's train_step with its data error ("" when
   its rows were read): when any rank's data failed, every rank throws DataFailure
   (train_step.h), so all of them take the same checkpoint (a collective under ZeRO)
   and stop before the same step, instead of the others waiting in train_step's
   collectives until the timeout. Collective: one all-reduce of `ranks` flags. */
void agreeOnData(const RankInfo &ranks, const std::string &error);

/* Rank 0's `text` on every rank (one rank's checkpoint path for the message of
   another). Collective over the world. */
std::string fromWriter(const RankInfo &ranks, const std::string &text);

/* After a DataFailure's checkpoint: the rank whose data failed reports its error and
   ends the run (lmrt's MPI_Abort); the others wait for that here, after a barrier
   that keeps rank 0's checkpoint from being cut short. Never returns. */
[[noreturn]] void stopOnDataFailure(const RankInfo &ranks, const std::string &message, bool mine);

}  // namespace lmrt
