/* Implements: mpi_communicator.h. Every collective is a fixed sequence of MPI calls
   on MPI_BYTE data, so MPI only moves bytes and never adds: the sums are
   reduceInRankOrder's (communicator.h), each element's on one rank.
     allReduce     = MPI_Alltoallv (rank q receives every rank's chunk q), the sum of
                     chunk q in rank order on rank q, MPI_Allgatherv of the sums
                     (the traffic of a ring all-reduce, 2 (n-1)/n of the buffer);
     reduceScatter = MPI_Alltoall, then the sum in rank order;
     allGather     = MPI_Allgather.
   Each is MPI's non-blocking call (MPI_Ialltoallv, ...) completed by complete(): on the
   fiber of an overlapped collective (work_fibers.h) it is tested between the executor's
   steps, elsewhere it is waited for at once. */
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/work_fibers.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace lmrt::comm {
namespace {

/* The seconds a collective may wait for the other ranks: $LMRT_COLLECTIVE_TIMEOUT, by
   default 600 (rank 0 alone evaluates and writes checkpoints while the others wait in
   the next step's all-reduce); 0 turns the watchdog off. */
double collectiveTimeout() {
  const char *v = std::getenv("LMRT_COLLECTIVE_TIMEOUT");
  if (!v) return 600;
  char *end = nullptr;
  double t = std::strtod(v, &end);
  if (end == v || *end || !(t >= 0))
    fail("LMRT_COLLECTIVE_TIMEOUT='%s' is not a number of seconds (0: no timeout)", v);
  return t;
}

/* Ends this rank when a collective waits longer than the timeout: a rank that hangs
   (stopped, deadlocked, its host unreachable) would otherwise keep every other rank
   waiting forever. The message names this rank, the collective and the MPI call; the
   exit makes mpirun (or srun) end the other ranks. A rank that dies is noticed by the
   launcher itself, which ends the others at once. */
class Watchdog {
public:
  Watchdog(int rank, int size, double seconds) : rank_(rank), size_(size), seconds_(seconds) {
    if (seconds_ > 0 && size_ > 1) thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  /* Marks one collective call, from construction to destruction. */
  class Scope {
  public:
    Scope(Watchdog &w, const char *call, const std::string &what) : w_(w) {
      std::lock_guard<std::mutex> lock(w_.m_);
      w_.call_ = call;
      w_.what_ = what;
      w_.since_ = std::chrono::steady_clock::now();
      w_.busy_ = true;
    }
    ~Scope() {
      std::lock_guard<std::mutex> lock(w_.m_);
      w_.busy_ = false;
    }

  private:
    Watchdog &w_;
  };

private:
  void watch() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (!busy_) continue;
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
      if (waited < seconds_) continue;
      std::fflush(stdout);
      std::fprintf(stderr,
                   "lmrt: error: rank %d of %d: %s in %s waited more than %g s for the other ranks (one of "
                   "them died, hangs or is far behind); ending the run (LMRT_COLLECTIVE_TIMEOUT sets the limit)\n",
                   rank_, size_, call_, what_.c_str(), seconds_);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }

  const int rank_, size_;
  const double seconds_;
  std::mutex m_;
  std::condition_variable cv_;
  bool busy_ = false, stop_ = false;
  const char *call_ = "";
  std::string what_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

class MpiCommunicator final : public Communicator {
public:
  explicit MpiCommunicator(const LaunchEnv &env) : launcher_(env.launcher) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        fail("MPI_Init_thread failed (launched by %s as rank %d of %d)", env.launcher.c_str(), env.rank, env.size);
      owns_ = true;
    }
    // Every MPI call is the main thread's (the overlapped collectives run on its fibers,
    // fibers_), while lmrt's other threads (the watchdog, OpenMP's) run too:
    // MPI_THREAD_FUNNELED.
    int level = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_FUNNELED)
      fail("rank %d of %d: the MPI library gives thread level MPI_THREAD_SINGLE, and lmrt needs "
           "MPI_THREAD_FUNNELED (its process runs other threads beside the one calling MPI); use an MPI built "
           "with thread support (Debian's Open MPI has it)", env.rank, env.size);
    // Errors come back as return codes, so each becomes an lmrt error naming the collective.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (rank_ != env.rank || size_ != env.size)
      fail("MPI says rank %d of %d, the %s environment rank %d of %d (is lmrt linked against the MPI that "
           "launched it?)", rank_, size_, env.launcher.c_str(), env.rank, env.size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    library_.assign(version, (size_t)len);
    if (size_t comma = library_.find(','); comma != std::string::npos) library_.resize(comma);
    worldRank_ = rank_, worldSize_ = size_;
    watchdog_ = std::make_shared<Watchdog>(rank_, size_, collectiveTimeout());
    fibers_ = std::make_shared<WorkFibers>();
  }
  /* A group split off `parent` (split()): the parent's watchdog and library; errors name
     the world rank and the group. MPI_Finalize frees its MPI_Comm with the world's. */
  MpiCommunicator(const MpiCommunicator &parent, MPI_Comm comm, const std::string &name)
      : comm_(comm), worldRank_(parent.worldRank_), worldSize_(parent.worldSize_), launcher_(parent.launcher_),
        library_(parent.library_), group_(name), watchdog_(parent.watchdog_), fibers_(parent.fibers_) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (!owns_) return;
    try {
      fibers_->waitAll();  // no collective runs past MPI_Finalize
    } catch (...) {
    }
    watchdog_.reset();
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return library_ + ", rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" + launcher_ + ")" +
           (group_.empty() ? "" : " in the " + group_);
  }

  std::unique_ptr<Communicator> split(int color, int key, const std::string &name) override {
    MPI_Comm comm = MPI_COMM_NULL;
    drain();
    call("MPI_Comm_split", "forming the " + name, [&] { return MPI_Comm_split(comm_, color, key, &comm); });
    return std::make_unique<MpiCommunicator>(*this, comm, name);
  }

  void allReduce(const void *in, void *out, int64_t count, DType dtype, Reduction r,
                 const std::string &what) override {
    const size_t eb = collectiveElementBytes(dtype, what);
    // Chunk q: elements [first[q], first[q] + len[q]), the larger chunks first.
    std::vector<int64_t> first(size_ + 1, 0);
    for (int q = 0; q < size_; ++q) first[q + 1] = first[q] + count / size_ + (q < count % size_ ? 1 : 0);
    const int64_t mine = first[rank_ + 1] - first[rank_];
    std::vector<int> sendCounts(size_), sendDispls(size_), recvCounts(size_), recvDispls(size_);
    for (int q = 0; q < size_; ++q) {
      sendCounts[q] = bytesAsInt((first[q + 1] - first[q]) * (int64_t)eb, what);
      sendDispls[q] = bytesAsInt(first[q] * (int64_t)eb, what);
      recvCounts[q] = bytesAsInt(mine * (int64_t)eb, what);
      recvDispls[q] = bytesAsInt((int64_t)q * mine * (int64_t)eb, what);
    }
    parts_.resize((size_t)(size_ * mine) * eb);
    exchange("MPI_Ialltoallv", what, [&](MPI_Request *req) {
      return MPI_Ialltoallv(in, sendCounts.data(), sendDispls.data(), MPI_BYTE, parts_.data(), recvCounts.data(),
                            recvDispls.data(), MPI_BYTE, comm_, req);
    });
    sum_.resize((size_t)mine * eb);
    reduceInRankOrder(parts_.data(), size_, sum_.data(), mine, dtype, r);
    // Every rank's sums, chunk q from rank q (the counts and offsets of the send side).
    exchange("MPI_Iallgatherv", what, [&](MPI_Request *req) {
      return MPI_Iallgatherv(sum_.data(), recvCounts[0], MPI_BYTE, out, sendCounts.data(), sendDispls.data(),
                             MPI_BYTE, comm_, req);
    });
  }

  void reduceScatter(const void *in, void *out, int64_t count, DType dtype, Reduction r,
                     const std::string &what) override {
    const int bytes = bytesAsInt(count * (int64_t)collectiveElementBytes(dtype, what), what);
    parts_.resize((size_t)size_ * (size_t)bytes);
    exchange("MPI_Ialltoall", what, [&](MPI_Request *req) {
      return MPI_Ialltoall(in, bytes, MPI_BYTE, parts_.data(), bytes, MPI_BYTE, comm_, req);
    });
    reduceInRankOrder(parts_.data(), size_, out, count, dtype, r);
  }

  void allGather(const void *in, void *out, int64_t count, DType dtype, const std::string &what) override {
    const int bytes = bytesAsInt(count * (int64_t)collectiveElementBytes(dtype, what), what);
    const char *src = static_cast<const char *>(in), *dst = static_cast<const char *>(out);
    if (src < dst + (int64_t)size_ * bytes && dst < src + bytes) {  // in lies inside out: send a copy
      sum_.assign(src, src + bytes);
      src = sum_.data();
    }
    exchange("MPI_Iallgather", what,
             [&](MPI_Request *req) { return MPI_Iallgather(src, bytes, MPI_BYTE, out, bytes, MPI_BYTE, comm_, req); });
  }

  void broadcast(void *data, int64_t bytes, int root, const std::string &what) override {
    const int n = bytesAsInt(bytes, what);
    exchange("MPI_Ibcast", what, [&](MPI_Request *req) { return MPI_Ibcast(data, n, MPI_BYTE, root, comm_, req); });
  }

  void checkSame(uint64_t value, const std::string &what) override {
    std::vector<uint64_t> all((size_t)size_);
    exchange("MPI_Iallgather", what, [&](MPI_Request *req) {
      return MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_, req);
    });
    for (int q = 1; q < size_; ++q)
      if (all[(size_t)q] != all[0])
        fail("%s differs between ranks: rank %d has %llx, rank 0 %llx (every rank must run the same plan "
             "with the same settings)", what.c_str(), q, (unsigned long long)all[(size_t)q],
             (unsigned long long)all[0]);
  }

  void abort(int status) override { MPI_Abort(MPI_COMM_WORLD, status); }

  /* One queue of fibers for the world and its groups: their collectives stay in one
     order, and the scratch below is used by one collective at a time. */
  uint64_t submit(std::function<void()> work) override { return fibers_->submit(std::move(work)); }
  void progress() override { fibers_->progress(); }
  void wait(uint64_t ticket) override { fibers_->wait(ticket); }

private:
  int bytesAsInt(int64_t bytes, const std::string &what) const {
    if (bytes > INT_MAX)
      fail("rank %d: %s moves %lld bytes in one MPI call, more than MPI's int counts hold (%d)", worldRank_, what.c_str(),
           (long long)bytes, INT_MAX);
    return (int)bytes;
  }
  /* Before a collective of the thread's own code: the overlapped ones submitted before it
     finish first, so that every rank starts its collectives in one order. */
  void drain() {
    if (!WorkFibers::current()) fibers_->waitAll();
  }
  /* One MPI collective: `start` posts the non-blocking call `name` (its request in *req),
     then it is completed (complete()). */
  template <typename S> void exchange(const char *name, const std::string &what, S &&start) {
    drain();
    MPI_Request req = MPI_REQUEST_NULL;
    check(start(&req), name, what);
    complete(req, name, what);
  }
  /* Completes `req`. On an overlapped collective's fiber, while the executor computes:
     MPI_Test, and back to the executor until it is done (MPI progresses only inside
     such calls, so the executor's calls between steps move the bytes). Otherwise, or
     once the executor waits for it: MPI_Wait, under the watchdog, which counts only
     this time, when the rank does nothing but wait. */
  void complete(MPI_Request &req, const char *name, const std::string &what) {
    WorkFibers *fiber = WorkFibers::current();
    while (fiber && !fiber->waiting()) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), name, what);
      if (done) return;
      fiber->yield();
    }
    call(name, what, [&] { return MPI_Wait(&req, MPI_STATUS_IGNORE); });
  }
  /* Runs one blocking MPI call under the watchdog and checks its result. */
  template <typename F> void call(const char *name, const std::string &what, F &&mpi) {
    int rc;
    {
      Watchdog::Scope scope(*watchdog_, name, what);
      rc = mpi();
    }
    check(rc, name, what);
  }
  void check(int rc, const char *call, const std::string &what) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail("rank %d of %d: %s in %s%s failed: %.*s", worldRank_, worldSize_, call, what.c_str(),
         group_.empty() ? "" : (" (" + group_ + ")").c_str(), len, text);
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0, size_ = 1, worldRank_ = 0, worldSize_ = 1;
  bool owns_ = false;
  std::string launcher_, library_, group_;  // group_: "" for the world, else "tensor group 1"
  std::vector<char> parts_, sum_;  // scratch kept between calls (a step's collectives reuse it)
  std::shared_ptr<Watchdog> watchdog_;
  std::shared_ptr<WorkFibers> fibers_;
};

}  // namespace

std::unique_ptr<Communicator> makeMpiCommunicator(const LaunchEnv &env) {
  return std::make_unique<MpiCommunicator>(env);
}

}  // namespace lmrt::comm
