/* Tests the collectives of runtime/comm: the launcher's environment, the
   single-process communicator, and (run by ctest under `mpirun -np 2`, and also
   plain) Open MPI's all-reduce, reduce-scatter, all-gather, broadcast and checkSame
   against the rank-order sums of the contract (communicator.h), bit for bit. */
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/work_fibers.h"
#include "runtime/cpu/kernels/registry.h"

namespace lmrt::comm {
namespace {

/* Values whose float sums depend on the order of addition. */
float valueOf(int rank, int64_t i) { return std::ldexp(1.0f + 0.001f * float(i % 97), (int)(i % 29) - 14) * (rank + 1) + 0.1f * rank; }

std::vector<float> partOf(int rank, int64_t n) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = valueOf(rank, i);
  return v;
}

/* The sum over `ranks` ranks in rank order, as the contract states it. */
std::vector<float> rankOrderSum(int ranks, int64_t n, bool mean) {
  std::vector<float> all;
  for (int q = 0; q < ranks; ++q) {
    std::vector<float> p = partOf(q, n);
    all.insert(all.end(), p.begin(), p.end());
  }
  std::vector<float> out((size_t)n);
  reduceInRankOrder(all.data(), ranks, out.data(), n, DType::F32, mean ? Reduction::Mean : Reduction::Sum);
  return out;
}

TEST(ReduceInRankOrder, SumsLeftToRightThenDivides) {
  const float parts[] = {1e8f, 1.0f, -1e8f, /* second element */ 1.0f, 2.0f, 4.0f};
  // Transposed layout: part q holds elements [q * 2, q * 2 + 2).
  const float byRank[] = {parts[0], parts[3], parts[1], parts[4], parts[2], parts[5]};
  float out[2];
  reduceInRankOrder(byRank, 3, out, 2, DType::F32, Reduction::Sum);
  EXPECT_EQ(out[0], (1e8f + 1.0f) + -1e8f);  // 0 in f32: the order is kept, not reassociated
  EXPECT_EQ(out[1], 7.0f);
  reduceInRankOrder(byRank, 3, out, 2, DType::F32, Reduction::Mean);
  EXPECT_EQ(out[1], 7.0f / 3.0f);
}

TEST(LaunchEnv, ReadsMpirunSrunAndRefusesNonsense) {
  // Under mpirun the variables are the real ones: only check they are consistent.
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    LaunchEnv e = launchEnv();
    EXPECT_EQ(e.launcher, "mpirun");
    EXPECT_EQ(e.size, std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")));
    if (std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {  // braces: EXPECT_EQ expands to an if/else
      EXPECT_EQ(e.localRank, std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
    }
    return;
  }
  for (const char *v : {"PMI_RANK", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}) unsetenv(v);
  EXPECT_EQ(launchEnv().size, 1);
  EXPECT_EQ(launchEnv().launcher, "");
  // A batch script: the job's task count, no step of several tasks: one process.
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT_EQ(launchEnv().size, 1);
  EXPECT_EQ(launchEnv().launcher, "");
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  LaunchEnv e = launchEnv();
  EXPECT_EQ(e.launcher, "srun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.localRank, 0);  // not said
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(launchEnv().localRank, 1);
  unsetenv("SLURM_LOCALID");
  setenv("SLURM_PROCID", "4", 1);
  try {
    launchEnv();
    FAIL() << "rank 4 of 4 accepted";
  } catch (const Error &err) {
    EXPECT_NE(std::string(err.what()).find("SLURM_PROCID=4"), std::string::npos) << err.what();
  }
  setenv("SLURM_PROCID", "x", 1);
  EXPECT_THROW(launchEnv(), Error);
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_STEP_NUM_TASKS");
}

TEST(SingleProcess, CollectivesAreCopies) {
  std::unique_ptr<Communicator> c = makeSingleProcess();
  std::vector<float> x = partOf(0, 10), y(10);
  c->allReduce(x.data(), y.data(), 10, DType::F32, Reduction::Mean, "test");
  EXPECT_EQ(0, std::memcmp(x.data(), y.data(), 40));
  c->allGather(x.data(), y.data(), 10, DType::F32, "test");
  EXPECT_EQ(0, std::memcmp(x.data(), y.data(), 40));
  EXPECT_THROW(c->allReduce(x.data(), y.data(), 10, DType::I32, Reduction::Sum, "test"), Error);
}

/* The MPI communicator: of the launcher's processes under mpirun, else of one process
   (MPI started as a singleton). One per test binary: MPI starts once. */
Communicator &mpi() {
  static bool started = [] {
    LaunchEnv env = launchEnv();
    if (env.size == 1) env.launcher = "singleton";
    setWorld(makeMpiCommunicator(env));  // the kernels' communicator too
    return true;
  }();
  (void)started;
  return world();
}

TEST(Mpi, AllReduceIsTheRankOrderSumOnEveryRank) {
  Communicator &c = mpi();
  for (int64_t n : {1, 7, 1000, 4097}) {  // uneven chunks, chunks of 0 elements when n < ranks
    for (bool mean : {false, true}) {
      std::vector<float> x = partOf(c.rank(), n), y((size_t)n);
      c.allReduce(x.data(), y.data(), n, DType::F32, mean ? Reduction::Mean : Reduction::Sum, "test");
      std::vector<float> want = rankOrderSum(c.size(), n, mean);
      EXPECT_EQ(0, std::memcmp(y.data(), want.data(), (size_t)n * 4)) << "n " << n << " mean " << mean;
      c.allReduce(x.data(), x.data(), n, DType::F32, mean ? Reduction::Mean : Reduction::Sum, "in place");
      EXPECT_EQ(0, std::memcmp(x.data(), want.data(), (size_t)n * 4)) << "in place, n " << n;
    }
  }
  std::vector<double> d = {double(c.rank()) + 0.5, 1e300};
  c.allReduce(d.data(), d.data(), 2, DType::F64, Reduction::Sum, "f64");
  double want0 = 0;
  for (int q = 0; q < c.size(); ++q) want0 += q + 0.5;
  EXPECT_EQ(d[0], want0);
}

TEST(Mpi, ReduceScatterKeepsThisRanksSliceOfTheSum) {
  Communicator &c = mpi();
  const int64_t per = 5, n = per * c.size();
  std::vector<float> x = partOf(c.rank(), n), y((size_t)per);
  c.reduceScatter(x.data(), y.data(), per, DType::F32, Reduction::Sum, "test");
  std::vector<float> want = rankOrderSum(c.size(), n, false);
  EXPECT_EQ(0, std::memcmp(y.data(), want.data() + c.rank() * per, (size_t)per * 4));
}

TEST(Mpi, AllGatherConcatenatesInRankOrder) {
  Communicator &c = mpi();
  const int64_t per = 3;
  std::vector<float> x = partOf(c.rank(), per), y((size_t)(per * c.size()));
  c.allGather(x.data(), y.data(), per, DType::F32, "test");
  for (int q = 0; q < c.size(); ++q) {
    std::vector<float> p = partOf(q, per);
    EXPECT_EQ(0, std::memcmp(y.data() + q * per, p.data(), (size_t)per * 4)) << "rank " << q;
  }
}

TEST(Mpi, BroadcastAndCheckSame) {
  Communicator &c = mpi();
  char text[8] = "rank";
  if (c.rank() == 0) std::strcpy(text, "root");
  c.broadcast(text, sizeof text, 0, "test");
  EXPECT_STREQ(text, "root");
  c.checkSame(42, "a number every rank has");
  if (c.size() == 1) return;
  try {
    c.checkSame((uint64_t)c.rank(), "--seed");
    FAIL() << "different values accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("--seed differs between ranks: rank 1"), std::string::npos) << e.what();
  }
}

/* A gather moves bf16 and f16 (ZeRO-3's parameter slices under --precision bf16) as they
   are, NaN and infinity bit patterns too, through the communicator and the kernel (whose
   check takes them), along the leading dimension and an inner one; the sums refuse them,
   the kernels' checks and the rank-order sum. */
TEST(Mpi, AllGatherMovesBf16AndF16Bits) {
  Communicator &c = mpi();
  const int64_t per = 7, n = c.size();
  auto bitsOf = [](int q, int64_t i) { return (uint16_t)(0x7f80 + 0x1357 * q + 0x0f1 * i); };  // from +inf on
  std::vector<uint16_t> x((size_t)per), y((size_t)(per * n), 0);
  for (int64_t i = 0; i < per; ++i) x[(size_t)i] = bitsOf(c.rank(), i);
  for (DType t : {DType::BF16, DType::F16}) {
    std::fill(y.begin(), y.end(), 0);
    c.allGather(x.data(), y.data(), per, t, "test");
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < per; ++i) EXPECT_EQ(y[(size_t)(q * per + i)], bitsOf(q, i)) << dtypeName(t);
    // The kernel, along the leading dimension (no copy) and checked.
    std::fill(y.begin(), y.end(), 0);
    kernels::Attrs attrs;
    attrs.set("mesh_axis", int64_t(0));
    attrs.set("group_size", n);
    attrs.set("dim", int64_t(0));
    TensorRef in{x.data(), TensorType{t, {per}}}, out{y.data(), TensorType{t, {per * n}}};
    const kernels::KernelDef *gather = kernels::findKernel("all_gather");
    EXPECT_EQ(gather->check({in.type}, {out.type}, attrs), "");
    gather->run(kernels::KernelCall{{in}, {out}, attrs});
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < per; ++i) EXPECT_EQ(y[(size_t)(q * per + i)], bitsOf(q, i)) << dtypeName(t);
    // Along an inner dimension (sequence parallelism's gathered activations): [2, 3] of
    // rank q into [2, 3 n], rank q's columns at [3 q, 3 q + 3) of each row.
    std::vector<uint16_t> rows(6), cols((size_t)(6 * n), 0);
    for (int64_t i = 0; i < 6; ++i) rows[(size_t)i] = bitsOf(c.rank(), i);
    kernels::Attrs inner = attrs;
    inner.set("dim", int64_t(1));
    TensorRef rowsIn{rows.data(), TensorType{t, {2, 3}}}, colsOut{cols.data(), TensorType{t, {2, 3 * n}}};
    EXPECT_EQ(gather->check({rowsIn.type}, {colsOut.type}, inner), "");
    gather->run(kernels::KernelCall{{rowsIn}, {colsOut}, inner});
    for (int q = 0; q < n; ++q)
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 3; ++b)
          EXPECT_EQ(cols[(size_t)(a * 3 * n + q * 3 + b)], bitsOf(q, a * 3 + b)) << dtypeName(t);
    EXPECT_NE(kernels::findKernel("all_reduce")->check({in.type}, {in.type}, attrs).find("must be f32 or f64"),
              std::string::npos);
    EXPECT_NE(kernels::findKernel("reduce_scatter")->check({out.type}, {in.type}, attrs).find("must be f32 or f64"),
              std::string::npos);
  }
  std::vector<uint16_t> parts(4), sum(2);
  EXPECT_THROW(reduceInRankOrder(parts.data(), 2, sum.data(), 2, DType::BF16, Reduction::Sum), Error);
}

/* The CPU kernels of lm.all_gather and lm.reduce_scatter along an inner dimension (each
   rank's part is not contiguous there), and lm.all_reduce's mean, across the ranks. */
TEST(Mpi, CollectiveKernelsAlongAnInnerDimension) {
  Communicator &c = mpi();
  const int64_t n = c.size();
  // x of rank q: [2, 3, 4] with x[a][b][k] = 100 q + 10 a + b + k / 8.
  auto xOf = [](int q) {
    std::vector<float> x(24);
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 4; ++k) x[(size_t)(a * 12 + b * 4 + k)] = 100.0f * q + 10.0f * a + b + k / 8.0f;
    return x;
  };
  std::vector<float> x = xOf(c.rank());
  TensorRef in{x.data(), TensorType{DType::F32, {2, 3, 4}}};
  // all_gather along dim 1: [2, 3 n, 4], rank q's rows at [3 q, 3 q + 3).
  std::vector<float> g((size_t)(24 * n));
  TensorRef gathered{g.data(), TensorType{DType::F32, {2, 3 * n, 4}}};
  kernels::Attrs gatherAttrs;
  gatherAttrs.set("mesh_axis", int64_t(0));
  gatherAttrs.set("group_size", n);
  gatherAttrs.set("dim", int64_t(1));
  kernels::findKernel("all_gather")->run(kernels::KernelCall{{in}, {gathered}, gatherAttrs});
  for (int q = 0; q < n; ++q) {
    std::vector<float> xq = xOf(q);
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 4; ++k)
          EXPECT_EQ(g[(size_t)((a * 3 * n + q * 3 + b) * 4 + k)], xq[(size_t)(a * 12 + b * 4 + k)]);
  }
  // reduce_scatter of the gathered tensor along dim 1: the sum over ranks of it (n copies),
  // rank r keeping rows [3 r, 3 r + 3): n times rank r's x.
  std::vector<float> s(24);
  TensorRef scattered{s.data(), TensorType{DType::F32, {2, 3, 4}}};
  kernels::findKernel("reduce_scatter")->run(kernels::KernelCall{{gathered}, {scattered}, gatherAttrs});
  for (size_t i = 0; i < 24; ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want += x[i];
    EXPECT_EQ(s[i], want) << i;
  }
  // all_reduce with mean: the mean of the ranks' x, in rank order.
  std::vector<float> m(24);
  kernels::Attrs meanAttrs;
  meanAttrs.set("mesh_axis", int64_t(0));
  meanAttrs.set("group_size", n);
  meanAttrs.set("mean", true);
  kernels::findKernel("all_reduce")->run(kernels::KernelCall{{in}, {TensorRef{m.data(), in.type}}, meanAttrs});
  for (size_t i = 0; i < 24; ++i) {
    float sum = xOf(0)[i];
    for (int q = 1; q < n; ++q) sum += xOf(q)[i];
    EXPECT_EQ(m[i], sum / float(n)) << i;
  }
  // A group that is not the run's processes is refused, naming the launch.
  kernels::Attrs wrong = meanAttrs;
  wrong.set("group_size", n + 1);
  try {
    kernels::findKernel("all_reduce")->run(kernels::KernelCall{{in}, {TensorRef{m.data(), in.type}}, wrong});
    FAIL() << "a group of " << n + 1 << " ranks accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -np " + std::to_string(n + 1)), std::string::npos) << e.what();
  }
}

/* A bucket of all_reduce steps (docs/distributed.md, "Buckets and overlap"): one collective
   over the tensors end to end gives every tensor the bits of its own all-reduce, in place
   too, and overlapped (submit, progress between steps, wait) the same. */
TEST(Mpi, AllReduceBucketIsEachTensorsAllReduce) {
  Communicator &c = mpi();
  const int64_t sizes[] = {7, 1, 1000, 33};  // uneven over the ranks, alone and laid end to end
  kernels::Attrs attrs;
  attrs.set("mesh_axis", int64_t(0));
  attrs.set("group_size", int64_t(c.size()));
  attrs.set("mean", true);
  std::vector<std::vector<float>> x, own, bucketOut, inPlace;
  for (int64_t n : sizes) {
    std::vector<float> v = partOf(c.rank(), n);
    for (float &e : v) e *= float(n);  // tensors differ
    x.push_back(v);
    own.emplace_back((size_t)n);
    bucketOut.emplace_back((size_t)n);
    inPlace.push_back(v);
  }
  std::vector<kernels::KernelCall> calls, inPlaceCalls;
  for (size_t k = 0; k < x.size(); ++k) {
    TensorType t{DType::F32, {sizes[k]}};
    kernels::findKernel("all_reduce")->run(kernels::KernelCall{{TensorRef{x[k].data(), t}}, {TensorRef{own[k].data(), t}}, attrs});
    calls.push_back(kernels::KernelCall{{TensorRef{x[k].data(), t}}, {TensorRef{bucketOut[k].data(), t}}, attrs});
    inPlaceCalls.push_back(kernels::KernelCall{{TensorRef{inPlace[k].data(), t}}, {TensorRef{inPlace[k].data(), t}}, attrs});
  }
  kernels::runAllReduceBucket(calls);
  uint64_t ticket = c.submit([&] { kernels::runAllReduceBucket(inPlaceCalls); });
  for (int step = 0; step < 3; ++step) c.progress();
  c.wait(ticket);
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(0, std::memcmp(own[k].data(), bucketOut[k].data(), (size_t)sizes[k] * 4)) << "tensor " << k;
    EXPECT_EQ(0, std::memcmp(own[k].data(), inPlace[k].data(), (size_t)sizes[k] * 4)) << "in place, tensor " << k;
  }
}

/* The overlap (docs/distributed.md, "Buckets and overlap"): a submitted all-reduce only
   starts (MPI's non-blocking calls) and gives the thread back, so rank 0 goes on while
   the other ranks are late; between its steps progress() moves it on, the wait ends it
   with the rank-order sum; two in a row run in order; a blocking collective of the
   thread's own finishes them first. */
TEST(Mpi, OverlappedAllReduceGivesTheThreadBackUntilTheWait) {
  Communicator &c = mpi();
  const int64_t n = 1000;
  std::vector<float> x = partOf(c.rank(), n), y = partOf(c.rank(), n), z = partOf(c.rank(), n);
  const std::vector<float> want = rankOrderSum(c.size(), n, false);
  if (c.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));  // late
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t a = c.submit([&] { c.allReduce(x.data(), x.data(), n, DType::F32, Reduction::Sum, "first"); });
  uint64_t b = c.submit([&] { c.allReduce(y.data(), y.data(), n, DType::F32, Reduction::Sum, "second"); });
  const double returned = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (c.rank() == 0 && c.size() > 1) {
    EXPECT_LT(returned, 0.25) << "submit waited for the late rank";
  }
  for (int step = 0; step < 5; ++step) c.progress();
  c.wait(a);
  EXPECT_EQ(0, std::memcmp(x.data(), want.data(), (size_t)n * 4));
  c.allReduce(z.data(), z.data(), n, DType::F32, Reduction::Sum, "the thread's own, after the second");
  EXPECT_EQ(0, std::memcmp(y.data(), want.data(), (size_t)n * 4)) << "not finished before the blocking one";
  EXPECT_EQ(0, std::memcmp(z.data(), want.data(), (size_t)n * 4));
  c.wait(b);
}

/* A bucket of reduce_scatter steps (ZeRO-2's and -3's gradients, flat and padded to a
   multiple of the ranks): one collective gives every slice the bits of its own step's
   reduce-scatter. */
TEST(Mpi, ReduceScatterBucketIsEachTensorsReduceScatter) {
  Communicator &c = mpi();
  const int64_t slices[] = {4, 1, 500, 17};  // each rank's slice of each tensor
  kernels::Attrs attrs;
  attrs.set("mesh_axis", int64_t(0));
  attrs.set("group_size", int64_t(c.size()));
  attrs.set("dim", int64_t(0));
  std::vector<std::vector<float>> x, own, bucketOut;
  for (int64_t n : slices) {
    std::vector<float> v = partOf(c.rank(), n * c.size());
    for (float &e : v) e *= float(n);  // tensors differ
    x.push_back(v);
    own.emplace_back((size_t)n);
    bucketOut.emplace_back((size_t)n, -1.0f);
  }
  std::vector<kernels::KernelCall> calls;
  for (size_t k = 0; k < x.size(); ++k) {
    TensorType in{DType::F32, {slices[k] * c.size()}}, out{DType::F32, {slices[k]}};
    kernels::findKernel("reduce_scatter")->run(kernels::KernelCall{{TensorRef{x[k].data(), in}}, {TensorRef{own[k].data(), out}}, attrs});
    calls.push_back(kernels::KernelCall{{TensorRef{x[k].data(), in}}, {TensorRef{bucketOut[k].data(), out}}, attrs});
  }
  kernels::runReduceScatterBucket(calls);
  for (size_t k = 0; k < x.size(); ++k)
    EXPECT_EQ(0, std::memcmp(own[k].data(), bucketOut[k].data(), (size_t)slices[k] * 4)) << "tensor " << k;
}

/* The fibers run their work in order, each to its end before the next starts; an error
   ends the queue (later work is dropped) and every later wait rethrows it. */
TEST(WorkFibers, RunsInOrderAndRethrowsTheFirstError) {
  WorkFibers q;
  std::vector<int> ran;
  uint64_t a = q.submit([&] { ran.push_back(1); });
  uint64_t b = q.submit([&] { ran.push_back(2); });
  q.wait(b);
  q.wait(a);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  q.submit([] { fail("rank 1 of 2: MPI_Ialltoallv in all_reduce of a bucket failed"); });
  uint64_t c = q.submit([&] { ran.push_back(3); });
  try {
    q.wait(c);
    FAIL() << "the error was not rethrown";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("MPI_Ialltoallv in all_reduce of a bucket"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_THROW(q.wait(c), Error);
  q.submit([&] { ran.push_back(4); });  // dropped too
  q.progress();
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_TRUE(q.idle());
}

/* A work that yields (an MPI call under way) gives the thread back: submit starts it,
   each progress() resumes it once, work submitted after it waits for its end, and a
   wait() runs it to its end with waiting() set (MPI would block there). Its locals live
   on its own stack across the yields. */
TEST(WorkFibers, YieldsToTheCallerUntilItIsWaitedFor) {
  WorkFibers q;
  EXPECT_EQ(WorkFibers::current(), nullptr);
  std::vector<std::string> log;
  auto work = [&](const std::string &name, int yields) {
    return [&log, &q, name, yields] {
      std::vector<int> local(100, yields);  // on the fiber's stack and heap across the yields
      EXPECT_EQ(WorkFibers::current(), &q);
      for (int k = 0; k < yields; ++k) {
        log.push_back(name + (q.waiting() ? " waited" : " yields"));
        if (!q.waiting()) q.yield();
      }
      EXPECT_EQ(local[99], yields);
      log.push_back(name + " ends");
    };
  };
  uint64_t a = q.submit(work("a", 3));
  EXPECT_EQ(log, (std::vector<std::string>{"a yields"}));
  uint64_t b = q.submit(work("b", 1));
  EXPECT_EQ(log.size(), 1u);  // b waits for a's end
  q.progress();
  EXPECT_EQ(log, (std::vector<std::string>{"a yields", "a yields"}));
  EXPECT_FALSE(q.idle());
  q.wait(a);
  EXPECT_EQ(log, (std::vector<std::string>{"a yields", "a yields", "a waited", "a ends"}));
  q.progress();  // starts b
  EXPECT_EQ(log.back(), "b yields");
  q.wait(b);
  EXPECT_EQ(log.back(), "b ends");
  EXPECT_TRUE(q.idle());
  EXPECT_EQ(WorkFibers::current(), nullptr);
}

/* A work's error thrown after it yielded reaches the wait, and the queue is destroyed
   cleanly with a work still suspended (the destructor runs it to its end). */
TEST(WorkFibers, ErrorAfterAYieldAndSuspendedWorkAtTheEnd) {
  WorkFibers q;
  uint64_t t = q.submit([&] {
    q.yield();
    fail("MPI_Iallgatherv failed");
  });
  q.progress();
  EXPECT_THROW(q.wait(t), Error);
  bool ended = false;
  {
    WorkFibers r;
    r.submit([&] {
      while (!r.waiting()) r.yield();
      ended = true;
    });
  }
  EXPECT_TRUE(ended);
}

TEST(SingleProcess, SubmitRunsAtOnce) {
  std::unique_ptr<Communicator> c = makeSingleProcess();
  int x = 0;
  c->wait(c->submit([&] { x = 1; }));
  EXPECT_EQ(x, 1);
}

/* lm.axis_index: each rank's place in the group, the order all_gather puts its part
   in (as i32 and as a float); a group that is not the run's processes is refused. */
TEST(Mpi, AxisIndexIsTheRanksPlaceInTheGroup) {
  Communicator &c = mpi();
  kernels::Attrs attrs;
  attrs.set("mesh_axis", int64_t(1));  // a mesh of one axis: the world is every axis's group
  attrs.set("group_size", int64_t(c.size()));
  int32_t i = -1;
  double d = -1;
  kernels::findKernel("axis_index")->run(kernels::KernelCall{{}, {TensorRef{&i, TensorType{DType::I32, {}}}}, attrs});
  kernels::findKernel("axis_index")->run(kernels::KernelCall{{}, {TensorRef{&d, TensorType{DType::F64, {}}}}, attrs});
  EXPECT_EQ(i, c.rank());
  EXPECT_EQ(d, (double)c.rank());
  // Gathered in rank order, the indices count 0 ... n - 1.
  std::vector<float> all((size_t)c.size());
  float mine = (float)i;
  c.allGather(&mine, all.data(), 1, DType::F32, "test");
  for (int q = 0; q < c.size(); ++q) EXPECT_EQ(all[(size_t)q], (float)q);
  attrs.set("group_size", int64_t(c.size() + 1));
  EXPECT_THROW(
      kernels::findKernel("axis_index")->run(kernels::KernelCall{{}, {TensorRef{&i, TensorType{DType::I32, {}}}}, attrs}),
      Error);
}

/* The gradient norm's sum under tensor parallelism (both backends'): a split tensor's
   value is its slices' over the tensor group (here every rank's, rank order), a whole one's
   counts once; the tensors in order. */
TEST(Mpi, SumOverTensorGroupAddsTheSlicesAndCountsWholeTensorsOnce) {
  Communicator &c = mpi();
  setMesh(1, c.size());  // every rank in one tensor group
  const int r = c.rank();
  const std::vector<double> values = {0.5, 1.0 + r, 3.0, 0.25 * (r + 1)};
  const std::vector<bool> split = {false, true, false, true};
  double slices1 = 0, slices3 = 0;
  for (int q = 0; q < c.size(); ++q) slices1 += 1.0 + q, slices3 += 0.25 * (q + 1);
  EXPECT_EQ(sumOverTensorGroup(values, split), ((0.5 + slices1) + 3.0) + slices3);
  EXPECT_EQ(sumOverTensorGroup({2.0}, {false}), 2.0);  // nothing split: no collective
  EXPECT_THROW(sumOverTensorGroup({1.0}, {}), Error);
}

}  // namespace
}  // namespace lmrt::comm
