/* Implements: collectives on CUDA device memory over NCCL (from the CUDA toolkit),
   bootstrapped over the host Communicator: rank 0 makes the NCCL unique id and
   broadcasts it (over MPI under mpirun or srun), then every rank joins with
   ncclCommInitRank. Built into the CUDA backend only; nothing includes nccl.h but
   its .cpp. The calls are enqueued on the caller's stream and return without
   waiting, like every CUDA kernel of lmrt.

   Reduction order: NCCL chooses its algorithm (ring, tree) from the topology, so a
   sum is the same bits run after run on the same machines and NCCL version, but
   not the rank-order sum of the host communicator (docs/distributed.md). */
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/comm/communicator.h"

namespace lmrt::comm {

class DeviceCommunicator {
public:
  virtual ~DeviceCommunicator() = default;
  /* As Communicator's, on device buffers, enqueued on `stream` (a cudaStream_t). */
  virtual void allReduce(const void *in, void *out, int64_t count, DType dtype, Reduction r, void *stream,
                         const std::string &what) = 0;
  virtual void reduceScatter(const void *in, void *out, int64_t count, DType dtype, Reduction r, void *stream,
                             const std::string &what) = 0;
  virtual void allGather(const void *in, void *out, int64_t count, DType dtype, void *stream,
                         const std::string &what) = 0;
  /* "NCCL 2.28.9, rank 0 of 1", for the log. */
  virtual std::string describe() const = 0;
};

/* Joins every rank of `host` in one NCCL communicator on the current CUDA device. */
std::unique_ptr<DeviceCommunicator> makeNcclCommunicator(Communicator &host);

}  // namespace lmrt::comm
