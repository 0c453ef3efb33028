/* Implements: the one interface behind which lmrt's collectives live
   (docs/distributed.md). The training loop and the kernels of the collective
   ops (lm.all_reduce, lm.reduce_scatter, lm.all_gather) talk to a Communicator
   only; Open MPI implements it for host memory (mpi_communicator.h, the only
   file that includes mpi.h), NCCL for device memory (nccl_communicator.h,
   bootstrapped over this interface's broadcast), and a process alone is the
   single-rank communicator here.

   Reductions are deterministic by contract: element i of a sum over ranks is
   ((x_0[i] + x_1[i]) + x_2[i]) + ... in rank order, computed on one rank and
   copied to the others, so every rank holds the same bits and no result depends
   on timing or on the MPI library's algorithm choice. A mean divides that sum by
   the rank count, as gradient accumulation divides its sum of micro-batches
   (runtime/cpu/cpu_backend.cpp, accumulateInto): DP over D ranks reproduces the
   1-process run with accumulate = D bit for bit. */
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace lmrt::comm {

enum class Reduction { Sum, Mean };

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /* "single process" or "Open MPI 4.1.4, rank 1 of 2 (mpirun)", for the log. */
  virtual std::string describe() const = 0;

  /* Host buffers of f32 or f64 elements (allGather: bf16 and f16 too, moved as bytes);
     `in` and `out` may be the same buffer.
     `what` names the collective's use in errors ("all_reduce of 'grad:wte'"). */
  /* out = reduction over ranks of in, `count` elements each. */
  virtual void allReduce(const void *in, void *out, int64_t count, DType dtype, Reduction r,
                         const std::string &what) = 0;
  /* out (`count` elements) = reduction over ranks of in[rank * count, (rank + 1) * count). */
  virtual void reduceScatter(const void *in, void *out, int64_t count, DType dtype, Reduction r,
                             const std::string &what) = 0;
  /* out[q * count, (q + 1) * count) = in of rank q, for every rank q. */
  virtual void allGather(const void *in, void *out, int64_t count, DType dtype, const std::string &what) = 0;
  /* `bytes` bytes of `data` on rank `root` copied to every rank's `data`. */
  virtual void broadcast(void *data, int64_t bytes, int root, const std::string &what) = 0;
  /* Every rank's `value`, checked equal: throws on every rank, naming the first rank whose value
     differs from rank 0's (a plan, a seed or a step count that differs between ranks). */
  virtual void checkSame(uint64_t value, const std::string &what) = 0;
  /* After an error on this rank: ends every rank of the run (mpirun's MPI_Abort), so that none
     waits forever in a collective this rank will never join. A single process does nothing. */
  virtual void abort(int status) = 0;
  /* The ranks with the same `color` as a communicator of their own, ranked by `key`
     (MPI_Comm_split; collective over this communicator). `name` ("tensor group") names
     it in the log and in errors. */
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string &name) = 0;

  /* Asynchronous collectives (docs/distributed.md, "Buckets and overlap"): `work`, which
     calls this communicator or groups split from the same world, runs after all work
     submitted before it (on any of them); wait(ticket) returns once it has run and
     rethrows its error. By default, and in a process alone, the work runs at once on
     the calling thread; Open MPI runs it on a fiber of the calling thread
     (work_fibers.h): its MPI calls are non-blocking, and while they are under way the
     caller goes on computing and calls progress() between its steps to test them and
     go on. The caller keeps the buffers the work reads and writes as they are until
     the wait. */
  virtual uint64_t submit(std::function<void()> work);
  /* Advances the submitted work without blocking (nothing to do by default). */
  virtual void progress() {}
  virtual void wait(uint64_t ticket);

private:
  uint64_t submitted_ = 0;
  std::exception_ptr error_;
};

/* A process alone: every collective is a copy (a mean over one rank is the value itself). */
std::unique_ptr<Communicator> makeSingleProcess();

/* Where a launcher says this process is: mpirun (OMPI_COMM_WORLD_RANK/SIZE), a PMI
   launcher (PMI_RANK/SIZE, PMIX_RANK), srun (SLURM_PROCID/SLURM_STEP_NUM_TASKS), and its local
   rank on its machine; size 1 and
   launcher "" when none did. Throws on malformed or contradictory values. */
struct LaunchEnv {
  int rank = 0, size = 1;
  std::string launcher;  // "mpirun", "pmi", "srun" or ""
  /* The rank among this machine's processes of the run (OMPI_COMM_WORLD_LOCAL_RANK,
     MPI_LOCALRANKID, SLURM_LOCALID; 0 when the launcher does not say): which GPU a rank
     takes by default (--device cuda without --cuda-device). */
  int localRank = 0;
};
LaunchEnv launchEnv();

/* The process's communicator: the single-process one until setWorld installs another
   (lmrt does, from launchEnv(), before it loads a plan). Kernels of the collective ops
   reach it here, so it is one object per process (lmrt exports it to its plugins). */
Communicator &world();
void setWorld(std::unique_ptr<Communicator> c);

/* A data x tensor mesh over the world (docs/distributed.md, "Tensor parallelism"):
   Megatron's layout, the tensor ranks adjacent, so world rank w is data rank
   w / tensor and tensor rank w % tensor. setMesh splits the world into its data groups
   (the ranks of one tensor rank) and tensor groups (the ranks of one data rank);
   without it (or with data x tensor = 1 x 1) both groups are the world. Collective
   over the world; the world's size must be data x tensor. */
void setMesh(int64_t data, int64_t tensor);
/* The group of mesh axis 0 (data) or 1 (tensor) this process belongs to. */
Communicator &meshGroup(int64_t meshAxis);

/* The communicator of a collective op's group: its mesh axis's group (meshGroup). Fails,
   naming the op, the mesh axis and the launch command, when that group's size is not
   the op's group size. The CPU and CUDA kernels of the collective ops share it. */
Communicator &collectiveGroup(const char *op, int64_t meshAxis, int64_t groupSize);

/* The sum over a tensor-parallel mesh of one value per tensor (the gradients' sums of squares,
   in parameter order, for the gradient norm): a split tensor's value (each rank of the tensor
   group holds a slice of it) is its slices' values added over the group in rank order, a whole
   one's (every rank holds the same bits) the rank's own, counted once; then the tensors' values
   added in order. One process's sum, to rounding. Collective over meshGroup(1); the CPU and
   CUDA backends share it. */
double sumOverTensorGroup(const std::vector<double> &values, const std::vector<bool> &split);

/* A row-major shape as [outer, n, inner] around dimension `dim`: how a gather or
   scatter along `dim` sees its tensor (rank blocks of n x inner elements, `outer` times). */
void splitAroundDim(const std::vector<int64_t> &shape, int64_t dim, int64_t &outer, int64_t &n, int64_t &inner);

/* Bytes of one element of a collective's tensor (f32, f64, bf16 or f16; anything else
   fails, naming `what`). Only a gather moves bf16 or f16: reduceInRankOrder refuses them. */
size_t collectiveElementBytes(DType dtype, const std::string &what);

/* The sum in rank order the contract above states: out[i] = ((parts[0][i] + parts[1][i]) + ...)
   [/ n], for `n` parts of `count` elements each, laid out one after another in `parts`. The one
   place the arithmetic lives, shared by every implementation. */
void reduceInRankOrder(const void *parts, int n, void *out, int64_t count, DType dtype, Reduction r);

}  // namespace lmrt::comm
