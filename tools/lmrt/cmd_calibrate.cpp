/* Implements: `lmrt calibrate`: measures this machine's rates for the step-time
   cost model (contract/cost_model.h) once and stores them, for `lmc explain`:
   - the GEMM rate of lmrt's own matmul kernel (oneDNN, split over the OpenMP
     threads as in training) on square matrices of several sizes, averaged over
     a linear layer's three GEMMs (forward, and the two transposed ones of its
     gradients): small GEMMs run well below the peak, and the zoo's tiny
     presets are made of them;
   - the rate, in bytes a second, of lmrt's layer_norm kernel at several
     sizes: the model's stand-in for every memory-bound kernel (a plain
     streaming add runs 5x faster than the norms, reductions and generated
     elementwise kernels of a train step), and tensors that fit the caches
     run faster than DRAM;
   - the cost of calling a kernel at all: waking the threads after the
     executor's own work between two kernels, and the call of a tiny one.
   Each figure is the median of repeated timed calls after an untimed one, in
   the best of several sweeps over the sizes (a shared machine's neighbours).
   The CPU backend only: a GPU's rates are not measured yet. */
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "base/file_io.h"
#include "contract/attrs.h"
#include "contract/cost_model.h"
#include "runtime/cpu/kernels/registry.h"
#include "runtime/train/threads.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

/* The median seconds of one call of `call`, over at least `minReps` calls and
   `budget` seconds, after one untimed call (first touches, JIT). */
template <typename F>
double medianSeconds(F call, double budget, int minReps) {
  call();
  std::vector<double> times;
  double spent = 0;
  while (spent < budget || (int)times.size() < minReps) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(s);
    spent += s;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

TensorRef tensor(std::vector<float> &data, Shape shape) {
  TensorRef t;
  t.data = data.data();
  t.type = TensorType{DType::F32, std::move(shape)};
  return t;
}

/* The three GEMMs of a linear layer's step, as the plan runs them: the forward
   y = x w, then dx = dy w^T (rhs transposed) and dw = x^T dy (lhs transposed),
   all [n, n] x [n, n]; the transposed ones run slower (oneDNN packs them
   another way), and a train step has two of them per forward GEMM. */
double gemmSeconds(const kernels::KernelDef &matmul, int64_t n, double budget) {
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.1f, b[i] = float(i % 5) * 0.2f;
  double total = 0;
  for (int variant = 0; variant < 3; ++variant) {
    kernels::Attrs attrs;
    attrs.set("transpose_lhs", variant == 2);
    attrs.set("transpose_rhs", variant == 1);
    kernels::addOpDefaults("matmul", attrs);
    kernels::KernelCall call{{tensor(a, {n, n}), tensor(b, {n, n})}, {tensor(c, {n, n})}, attrs};
    total += medianSeconds([&] { matmul.run(call); }, budget / 3, 5);
  }
  return total / 3;
}

double addSeconds(const kernels::KernelDef &add, int64_t n, double budget) {
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  kernels::Attrs attrs;
  kernels::addOpDefaults("add", attrs);
  kernels::KernelCall call{{tensor(a, {n}), tensor(b, {n})}, {tensor(c, {n})}, attrs};
  return medianSeconds([&] { add.run(call); }, budget, 20);
}

/* What calling a kernel costs beyond its work, as a train step pays it: a
   kernel big enough to run on every thread (an add of 64 Ki values), timed
   after the threads have idled as long as between two steps' kernels of a
   tiny model (a few microseconds of the executor's own work: they stop
   spinning and must be woken), less the same add timed back to back. */
double overheadSeconds(const kernels::KernelDef &add, double budget) {
  const int64_t n = 65536;
  double hot = addSeconds(add, n, budget / 2);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  kernels::Attrs attrs;
  kernels::addOpDefaults("add", attrs);
  kernels::KernelCall call{{tensor(a, {n}), tensor(b, {n})}, {tensor(c, {n})}, attrs};
  std::vector<double> times;
  for (double spent = 0; spent < budget / 2 || times.size() < 20;) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (std::chrono::steady_clock::now() < until) {
    }
    auto t0 = std::chrono::steady_clock::now();
    add.run(call);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(s);
    spent += s + 200e-6;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  double cold = times[times.size() / 2];
  return std::max(cold - hot, 0.0) + addSeconds(add, 16, budget / 4);
}

/* lmrt's layer_norm kernel on [n / 128, 128]: a typical memory-bound kernel of
   a train step (a reduction per row, then a pass of per-element math), which
   runs well below a plain streaming kernel's bandwidth. Its traffic: x read,
   y written (gamma and beta are small). */
double layerNormSeconds(const kernels::KernelDef &ln, int64_t n, double budget) {
  const int64_t d = 128, rows = n / d;
  std::vector<float> x(n), g(d, 1.0f), b(d, 0.0f), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = float(i % 13) * 0.1f;
  kernels::Attrs attrs;
  kernels::addOpDefaults("layer_norm", attrs);
  kernels::KernelCall call{{tensor(x, {rows, d}), tensor(g, {d}), tensor(b, {d})}, {tensor(y, {rows, d})}, attrs};
  return medianSeconds([&] { ln.run(call); }, budget, 20);
}

void calibrate(const std::string &out, int threads, double seconds, int rounds) {
  if (threads > 0) setThreadCount(threads);
  MachineRates r;
  r.threads = omp_get_max_threads();
  r.device = "cpu";
  const kernels::KernelDef *matmul = kernels::findKernel("matmul"), *add = kernels::findKernel("add"),
                          *ln = kernels::findKernel("layer_norm");
  if (!matmul || !add || !ln) fail("calibrate: the CPU backend has no matmul, add or layer_norm kernel");
  // GEMMs from 6.6e4 to 2.1e9 FLOPs a call (the zoo's tiny presets sit at the
  // low end, GPT-2 small's projections and output layer at the high end), and
  // the memory-bound rate from 32 KiB to 128 MiB of traffic a call (x and y).
  const int64_t gemmSizes[] = {32, 64, 128, 256, 512, 1024}, lnSizes[] = {4096, 65536, 1 << 20, 1 << 24};
  for (int64_t n : gemmSizes) r.gemm.push_back({2.0 * double(n) * double(n) * double(n), 0});
  for (int64_t n : lnSizes) r.memory.push_back({2.0 * 4.0 * double(n), 0});
  // The sweep runs `rounds` times and each size keeps its best round: on a
  // shared machine a neighbour's burst slows one round (two OpenMP threads
  // wait for the slower), and the best round is the machine's own rate.
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < r.gemm.size(); ++i)
      r.gemm[i].rate = std::max(r.gemm[i].rate,
                                r.gemm[i].size / gemmSeconds(*matmul, gemmSizes[i], seconds / rounds) * 1e-9);
    for (size_t i = 0; i < r.memory.size(); ++i)
      r.memory[i].rate = std::max(r.memory[i].rate,
                                  r.memory[i].size / layerNormSeconds(*ln, lnSizes[i], seconds / rounds) * 1e-9);
  }
  // The streaming bandwidth: an add of 16 Mi values (a, b read, c written:
  // 192 MiB, far beyond the caches), its best round.
  const int64_t streamN = 1 << 24;
  for (int round = 0; round < rounds; ++round)
    r.streamGbps = std::max(r.streamGbps, 12.0 * double(streamN) / addSeconds(*add, streamN, seconds / rounds) * 1e-9);
  r.kernelOverheadUs = overheadSeconds(*add, seconds / 2) * 1e6;
  std::string text = machineRatesJson(r);
  std::printf("%s", text.c_str());
  if (out == "-") return;
  std::error_code ec;
  std::filesystem::create_directories(parentDirectory(out), ec);
  writeFileAtomic(out, "machine file", [&](std::ostream &os) { os << text; });
  std::fprintf(stderr, "lmrt: wrote %s (lmc explain reads it)\n", out.c_str());
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand(
      "calibrate", "Measure this machine's GEMM rate, memory bandwidth and kernel overhead for lmc explain's cost model");
  static std::string out;
  static int threads = 0;
  static double seconds = 0.5;
  static int rounds = 5;
  cmd->add_option("--out", out, "The machine file to write ('-': print only; default: " + defaultMachineFile() + ")");
  cmd->add_option("--threads", threads, "Threads to measure with (default: as lmrt run, every core)");
  cmd->add_option("--seconds", seconds, "Time spent per measured size, over all rounds")->check(CLI::Range(0.01, 60.0));
  cmd->add_option("--rounds", rounds, "Sweeps over the sizes; each size keeps its best")->check(CLI::Range(1, 100));
  cmd->callback([] { calibrate(out.empty() ? defaultMachineFile() : out, threads, seconds, rounds); });
}

RegisterCommand reg("calibrate", add);

}  // namespace
}  // namespace lmrt
