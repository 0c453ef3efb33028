/* Implements: a kernel lab benchmark of the attention kernels (not in the default
   build): attention_stats and attention_grad_stats (the pair a GPT training step
   runs), optionally attention and attention_grad, on one causal self-attention
   shape, with real statistics (the grad reads the forward's y and lse).
   Build: cmake -DLMRT_KERNEL_LAB=ON, ninja bench_attention.
   Usage: bench_attention B T C H [reps [causal]]   e.g. bench_tiny's layer: 8 128 256 4.
   Prints per kernel the median and fastest time of one call, in the calling thread's
   CPU time with OMP_NUM_THREADS=1 (stable on a loaded machine) or wall time otherwise,
   and an FNV hash of the outputs' bytes, so that an A/B of two builds also shows
   whether the bits changed. BENCH_ONLY=grad times only kernels whose name contains it. */
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <omp.h>

#include "runtime/cpu/kernels/registry.h"

using namespace lmrt;
using namespace lmrt::kernels;

namespace {

struct Owned {
  TensorType type;
  std::vector<float> data;
  explicit Owned(TensorType t, unsigned seed) : type(std::move(t)), data(type.numel()) {
    std::mt19937 g(seed);
    std::normal_distribution<float> n(0, 1);
    for (auto &x : data) x = n(g);
  }
  TensorRef ref() { return {data.data(), type}; }
};

double nowMs(bool thread) {
  if (!thread) return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

uint64_t fnv(const std::vector<Owned *> &outs) {
  uint64_t h = 1469598103934665603ull;
  for (Owned *o : outs) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(o->data.data());
    for (size_t i = 0; i < o->data.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

void bench(const char *op, std::vector<Owned *> ins, std::vector<Owned *> outs, Attrs &a, int reps) {
  if (const char *only = std::getenv("BENCH_ONLY"); only && !std::strstr(op, only)) return;
  const KernelDef *k = findKernel(op);
  std::vector<TensorType> it, ot;
  for (Owned *o : ins) it.push_back(o->type);
  for (Owned *o : outs) ot.push_back(o->type);
  if (std::string err = k->check(it, ot, a); !err.empty()) {
    std::printf("%s\n", err.c_str());
    std::exit(1);
  }
  KernelCall call{{}, {}, a};
  for (Owned *o : ins) call.in.push_back(o->ref());
  for (Owned *o : outs) call.out.push_back(o->ref());
  const bool thread = omp_get_max_threads() == 1;
  k->run(call);  // warm up
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    double t0 = nowMs(thread);
    k->run(call);
    ms.push_back(nowMs(thread) - t0);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-22s median %8.3f ms  min %8.3f ms  (%s)  hash %016llx\n", op, ms[ms.size() / 2], ms[0],
              thread ? "thread CPU" : "wall", (unsigned long long)fnv(outs));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_attention B T C H [reps [causal]]\n");
    return 2;
  }
  const int64_t B = atoll(argv[1]), T = atoll(argv[2]), C = atoll(argv[3]), H = atoll(argv[4]);
  const int reps = argc > 5 ? atoi(argv[5]) : 20;
  const bool causal = argc > 6 ? atoi(argv[6]) != 0 : true;
  const DType F = DType::F32;
  TensorType x{F, {B, T, C}}, lse{F, {B, H, T}};
  Attrs a;
  a.set("num_heads", H);
  a.set("causal", causal);
  addOpDefaults("attention_stats", a);
  Owned q(x, 1), k(x, 2), v(x, 3), dy(x, 4), y(x, 5), l(lse, 6), dq(x, 7), dk(x, 8), dv(x, 9);
  bench("attention_stats", {&q, &k, &v}, {&y, &l}, a, reps);
  bench("attention_grad_stats", {&q, &k, &v, &y, &l, &dy}, {&dq, &dk, &dv}, a, reps);
  if (std::getenv("BENCH_PLAIN")) {
    bench("attention", {&q, &k, &v}, {&y}, a, reps);
    bench("attention_grad", {&q, &k, &v, &dy}, {&dq, &dk, &dv}, a, reps);
  }
  return 0;
}
