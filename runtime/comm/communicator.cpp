/* Implements: communicator.h: the single-process communicator, the launcher's
   environment, the process's communicator and the rank-order reduction. */
#include "runtime/comm/communicator.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lmrt::comm {

uint64_t Communicator::submit(std::function<void()> work) {
  if (!error_) try {
      work();
    } catch (...) {
      error_ = std::current_exception();
    }
  return ++submitted_;
}

void Communicator::wait(uint64_t) {
  if (error_) std::rethrow_exception(error_);
}

namespace {

class SingleProcess final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void allReduce(const void *in, void *out, int64_t count, DType dtype, Reduction, const std::string &what) override {
    copy(in, out, count, dtype, what);
  }
  void reduceScatter(const void *in, void *out, int64_t count, DType dtype, Reduction,
                     const std::string &what) override {
    copy(in, out, count, dtype, what);
  }
  void allGather(const void *in, void *out, int64_t count, DType dtype, const std::string &what) override {
    copy(in, out, count, dtype, what);
  }
  void broadcast(void *, int64_t, int root, const std::string &what) override {
    if (root != 0) fail("%s: broadcast from rank %d in a single process", what.c_str(), root);
  }
  void checkSame(uint64_t, const std::string &) override {}
  void abort(int) override {}
  std::unique_ptr<Communicator> split(int, int, const std::string &) override {
    return std::make_unique<SingleProcess>();
  }

private:
  static void copy(const void *in, void *out, int64_t count, DType dtype, const std::string &what) {
    size_t bytes = (size_t)count * collectiveElementBytes(dtype, what);
    if (in != out) std::memmove(out, in, bytes);
  }
};

/* The integer in environment variable `name`, or -1 when it is not set. */
int envInt(const char *name) {
  const char *v = std::getenv(name);
  if (!v) return -1;
  char *end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || end == v || *end || x < 0 || x > (1 << 24))
    fail("environment variable %s='%s' is not a rank or a process count", name, v);
  return (int)x;
}

std::unique_ptr<Communicator> &slot() {
  static std::unique_ptr<Communicator> c = makeSingleProcess();
  return c;
}

/* setMesh's groups (null: the world, as before any mesh is set). */
struct MeshGroups {
  std::unique_ptr<Communicator> data, tensor;
};
MeshGroups &groups() {
  static MeshGroups g;
  return g;
}

template <typename T> void reduceT(const T *parts, int n, T *out, int64_t count, Reduction r) {
  for (int64_t i = 0; i < count; ++i) {
    T acc = parts[i];
    for (int q = 1; q < n; ++q) acc += parts[(int64_t)q * count + i];
    out[i] = r == Reduction::Mean ? acc / T(n) : acc;
  }
}

}  // namespace

std::unique_ptr<Communicator> makeSingleProcess() { return std::make_unique<SingleProcess>(); }

LaunchEnv launchEnv() {
  struct Source {
    const char *launcher, *rank, *size, *localRank;
  };
  // Open MPI's mpirun first: under `srun --mpi=pmix mpirun`-like nestings it is the innermost.
  // Slurm's step size, not the job's: a batch script has SLURM_NTASKS of the whole job
  // and runs one process (lmrt run there directly is a run of one).
  static const Source sources[] = {
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"pmi", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"}};
  for (const Source &s : sources) {
    int rank = envInt(s.rank), size = envInt(s.size);
    if (rank < 0 && size < 0) continue;
    if (size < 0 && std::string(s.launcher) == "srun") continue;  // a batch script, not a step
    if (rank < 0 || size < 1 || rank >= size)
      fail("the launcher's environment is inconsistent: %s=%s, %s=%s (expected 0 <= rank < size)", s.rank,
           std::getenv(s.rank) ? std::getenv(s.rank) : "(unset)", s.size,
           std::getenv(s.size) ? std::getenv(s.size) : "(unset)");
    const int local = envInt(s.localRank);
    return LaunchEnv{rank, size, s.launcher, local < 0 ? 0 : local};
  }
  return LaunchEnv{};
}

Communicator &world() { return *slot(); }
void setWorld(std::unique_ptr<Communicator> c) {
  // slot() first: statics are destroyed in reverse order of construction, so the groups
  // (split off the world) go before the world that finalises MPI.
  std::unique_ptr<Communicator> &w = slot();
  groups() = MeshGroups{};
  w = std::move(c);
}

void setMesh(int64_t data, int64_t tensor) {
  Communicator &w = world();
  if (data < 1 || tensor < 1 || data * tensor != w.size())
    fail("a mesh of data = %lld x tensor = %lld ranks over %d processes", (long long)data, (long long)tensor,
         w.size());
  MeshGroups &g = groups();
  g = MeshGroups{};
  if (data == 1 && tensor == 1) return;
  // One axis: its group is the world, the other's each rank alone.
  if (tensor == 1) return void(g.tensor = makeSingleProcess());
  if (data == 1) return void(g.data = makeSingleProcess());
  const int r = w.rank(), t = (int)tensor;
  // The tensor group of data rank r / t holds its t adjacent ranks; the data group of
  // tensor rank r % t every t-th rank. Both ordered by world rank, so a group's rank order
  // (the reductions' order) is the world's.
  g.tensor = w.split(r / t, r, "tensor group " + std::to_string(r / t));
  g.data = w.split(r % t, r, "data group " + std::to_string(r % t));
}

Communicator &meshGroup(int64_t meshAxis) {
  MeshGroups &g = groups();
  Communicator *c = meshAxis == 0 ? g.data.get() : meshAxis == 1 ? g.tensor.get() : nullptr;
  if (c) return *c;
  if (meshAxis != 0 && meshAxis != 1)
    fail("mesh axis %lld: a mesh has axes 0 (data) and 1 (tensor)", (long long)meshAxis);
  return world();
}

Communicator &collectiveGroup(const char *op, int64_t meshAxis, int64_t groupSize) {
  static const char *const kAxisNames[] = {"data", "tensor"};
  Communicator &w = meshGroup(meshAxis == 1 ? 1 : 0);
  if (groupSize != w.size())
    fail("%s over the %lld ranks of mesh axis '%s', but this run has %d process%s (launch the plan with "
         "`mpirun -np %lld lmrt run ...`)", op, (long long)groupSize,
         meshAxis == 0 || meshAxis == 1 ? kAxisNames[meshAxis] : "?", w.size(), w.size() == 1 ? "" : "es",
         (long long)groupSize);
  return w;
}

double sumOverTensorGroup(const std::vector<double> &values, const std::vector<bool> &split) {
  if (values.size() != split.size())
    fail("sumOverTensorGroup: %zu values for %zu tensors", values.size(), split.size());
  Communicator &group = meshGroup(1);
  std::vector<double> mine;
  for (size_t i = 0; i < values.size(); ++i)
    if (split[i]) mine.push_back(values[i]);
  const size_t n = mine.size();
  std::vector<double> all(n * (size_t)group.size());
  if (n) group.allGather(mine.data(), all.data(), (int64_t)n, DType::F64, "the split gradients' norms");
  double s = 0;
  for (size_t i = 0, k = 0; i < values.size(); ++i) {
    if (!split[i]) {
      s += values[i];
      continue;
    }
    double g = 0;
    for (int q = 0; q < group.size(); ++q) g += all[(size_t)q * n + k];
    s += g;
    ++k;
  }
  return s;
}

void splitAroundDim(const std::vector<int64_t> &shape, int64_t dim, int64_t &outer, int64_t &n, int64_t &inner) {
  outer = inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= shape[(size_t)i];
  for (size_t i = (size_t)dim + 1; i < shape.size(); ++i) inner *= shape[i];
  n = shape[(size_t)dim];
}

size_t collectiveElementBytes(DType dtype, const std::string &what) {
  if (dtype == DType::F32) return sizeof(float);
  if (dtype == DType::F64) return sizeof(double);
  if (dtype == DType::BF16 || dtype == DType::F16) return 2;  // moved, never summed (reduceInRankOrder)
  fail("%s: collectives take f32, f64, bf16 or f16 tensors, got %s", what.c_str(), dtypeName(dtype));
}

void reduceInRankOrder(const void *parts, int n, void *out, int64_t count, DType dtype, Reduction r) {
  if (dtype == DType::F32) reduceT((const float *)parts, n, (float *)out, count, r);
  else if (dtype == DType::F64) reduceT((const double *)parts, n, (double *)out, count, r);
  else fail("collectives sum f32 or f64 tensors, got %s (bf16 and f16 are only gathered)", dtypeName(dtype));
}

}  // namespace lmrt::comm
