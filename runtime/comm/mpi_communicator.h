/* Implements: the Communicator of processes started by mpirun or srun, on Open MPI
   (Debian's openmpi-bin and libopenmpi-dev). The one file that includes mpi.h is
   its .cpp: nothing else of lmrt sees MPI. */
#pragma once
#include <memory>

#include "runtime/comm/communicator.h"

namespace lmrt::comm {

/* Initialises MPI (MPI_THREAD_FUNNELED: every MPI call is the main thread's, the
   overlapped collectives' too, on its fibers: work_fibers.h) and
   checks that MPI's rank and size are the launcher's `env`; MPI is finalised when the returned
   communicator is destroyed. Collective errors come back as lmrt errors naming this rank, the
   collective and its use. */
std::unique_ptr<Communicator> makeMpiCommunicator(const LaunchEnv &env);

}  // namespace lmrt::comm
