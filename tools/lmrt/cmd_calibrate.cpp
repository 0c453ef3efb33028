/* Implements: `lmrt calibrate`: measures this machine's rates for the step-time
   cost model (contract/cost_model.h) once and stores them, for `lmc explain`:
   - the GEMM rate of lmrt's own matmul kernel (oneDNN, split over the OpenMP
     threads as in training) on square matrices of several sizes, averaged over
     a linear layer's three GEMMs (forward, and the two transposed ones of its
     gradients): small GEMMs run well below the peak, and the zoo's tiny
     presets are made of them;
   - the memory bandwidth of lmrt's add kernel (reads two arrays, writes one)
     at several sizes: arrays that fit the caches stream faster than DRAM;
   - the cost of calling a kernel at all (an add of 16 values).
   Each figure is the median of repeated timed calls after an untimed one (the
   same statistic as the measured step time it is compared with). The CPU
   backend only: a GPU's rates are not measured yet. */
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

void calibrate(const std::string &out, int threads, double seconds) {
  if (threads > 0) setThreadCount(threads);
  MachineRates r;
  r.threads = omp_get_max_threads();
  r.device = "cpu";
  const kernels::KernelDef *matmul = kernels::findKernel("matmul"), *add = kernels::findKernel("add");
  if (!matmul || !add) fail("calibrate: the CPU backend has no matmul or add kernel");
  // GEMMs from 1e5 to 2e9 FLOPs a call: the zoo's tiny presets sit at the low
  // end, GPT-2 small's projections and its output layer at the high end.
  for (int64_t n : {32, 64, 128, 256, 512, 1024}) {
    double flops = 2.0 * double(n) * double(n) * double(n);
    r.gemm.push_back({flops, flops / gemmSeconds(*matmul, n, seconds) * 1e-9});
  }
  // Bandwidth from 48 KiB to 192 MiB of traffic a call (3 arrays of 4-byte values).
  for (int64_t n : {4096, 65536, 1 << 20, 1 << 24}) {
    double bytes = 3.0 * 4.0 * double(n);
    r.memory.push_back({bytes, bytes / addSeconds(*add, n, seconds) * 1e-9});
  }
  r.kernelOverheadUs = addSeconds(*add, 16, seconds / 4) * 1e6;
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
  static double seconds = 0.3;
  cmd->add_option("--out", out, "The machine file to write ('-': print only; default: " + defaultMachineFile() + ")");
  cmd->add_option("--threads", threads, "Threads to measure with (default: as lmrt run, every core)");
  cmd->add_option("--seconds", seconds, "Time spent per measured size")->check(CLI::Range(0.01, 60.0));
  cmd->callback([] { calibrate(out.empty() ? defaultMachineFile() : out, threads, seconds); });
}

RegisterCommand reg("calibrate", add);

}  // namespace
}  // namespace lmrt
