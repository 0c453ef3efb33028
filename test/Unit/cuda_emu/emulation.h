/* Implements: a CPU emulation of the CUDA execution model, enough to run kernels
   that synchronise only with __syncthreads / __syncthreads_or, __shfl_xor_sync and
   the 16-bit attention's mma16816 (the attention
   kernels, runtime/cuda/attention_kernels.cuh; the kernels lmc generates, in
   test/Codegen/kernels-cuda-emulated.test) as they are, without a GPU: the
   blocks of a grid run one after another, the threads of a block as fibers
   (ucontext) of one OS thread, each running until its next barrier before the
   next one runs; dynamic shared memory is one buffer per block, filled
   with 0xff bytes (NaN as floats) so a read of a value no thread wrote shows up in
   the results. It checks indexing, masking and tiling logic, not timing.
   Between two barriers the threads run in thread order, and in the reverse order
   between the next two, so a read of another thread's write that no barrier
   orders (a missing __syncthreads) sees the write in one direction and not in
   the other; a race is not otherwise detected. A barrier that some threads of a block skip (UB on a GPU) stops the
   test with a message instead of hanging.

   Fibers, not std::threads: a block's 128 threads as OS threads meeting at a
   mutex barrier spent most of the test in the kernel (futex wake-ups of 127
   threads at every warp exchange); a fiber switch is a few hundred cycles. */
#pragma once
#define LMRT_CUDA_EMULATION 1

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ucontext.h>

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
// A static local is one object for all the threads, as a __shared__ array is for a block's
// (blocks run one after another).
#define __shared__ static

namespace lmrt_emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// One OS thread runs every emulated thread: the scheduler sets threadIdx (and
// exchangeParity) to the running fiber's before it switches to it.
inline Dim3 threadIdx, blockIdx;
inline Dim3 blockDim, gridDim;
inline std::vector<unsigned char> sharedBytes;
inline std::vector<int> orSlots;

/* The warp exchanges (__shfl_xor_sync, mma16816): each thread publishes a record
   of up to 8 words in one of two buffers, meets the block at a barrier and reads
   its warp's records. The buffers alternate, so one barrier an exchange suffices:
   a thread writes a buffer again only after the next exchange's barrier, which
   every thread reaches after it read that buffer. Every thread of the block must
   make the same exchanges (a block barrier stands for a warp's). */
using ExchangeRecord = std::array<uint32_t, 8>;
inline std::vector<ExchangeRecord> exchangeSlots[2];
inline unsigned exchangeParity = 0;

inline unsigned flatThread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

/* One emulated thread: its context, stack and the per-thread state the scheduler
   swaps in and out. */
struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  Dim3 index;
  unsigned parity = 0;
  bool done = false;
};
constexpr size_t kFiberStackBytes = 256 << 10;  // attention's per-thread tiles are a few KiB

inline ucontext_t schedulerContext;
inline Fiber *runningFiber = nullptr;
inline void (*fiberBody)() = nullptr;  // runs the kernel once in the calling fiber

inline void fiberEntry() {
  fiberBody();
  runningFiber->done = true;
  // returning switches to uc_link, the scheduler
}

/* Switches from the running fiber back to the scheduler: the fiber waits at a barrier. */
inline void yieldToScheduler() { swapcontext(&runningFiber->context, &schedulerContext); }

[[noreturn]] inline void divergentBarrier(unsigned block, unsigned waiting, unsigned n) {
  std::fprintf(stderr,
               "cuda emulation: block %u: %u of %u threads wait at a barrier the others returned without "
               "reaching (a __syncthreads inside a branch the threads do not all take)\n",
               block, waiting, n);
  std::abort();
}

/* Runs kernel(args...) over grid x block threads, the blocks in order: one fiber per
   thread of a block, each block in rounds that run every fiber up to its next
   barrier (alternately in thread order and in reverse), the shared memory refilled
   between blocks. */
template <typename... P, typename... A>
void launch(void (*kernel)(P...), Dim3 grid, Dim3 block, size_t sharedMemBytes, A... args) {
  gridDim = grid, blockDim = block;
  const unsigned n = block.x * block.y * block.z, blocks = grid.x * grid.y * grid.z;
  orSlots.assign(n, 0);
  for (auto &slots : exchangeSlots) slots = std::vector<ExchangeRecord>(n);
  static std::vector<Fiber> fibers;  // stacks kept from launch to launch
  if (fibers.size() < n) fibers.resize(n);
  static void (*runKernel)(P...);
  static std::tuple<A...> kernelArgs;  // statics: fiberBody is a plain function
  runKernel = kernel, kernelArgs = std::tuple<A...>(args...);
  fiberBody = [] { std::apply(runKernel, kernelArgs); };
  for (unsigned i = 0; i < blocks; ++i) {
    sharedBytes.assign(sharedMemBytes + 16, 0xff);
    blockIdx = {i % grid.x, (i / grid.x) % grid.y, i / (grid.x * grid.y)};
    for (unsigned t = 0; t < n; ++t) {
      Fiber &f = fibers[t];
      if (!f.stack) f.stack.reset(new char[kFiberStackBytes]);
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.get();
      f.context.uc_stack.ss_size = kFiberStackBytes;
      f.context.uc_link = &schedulerContext;
      makecontext(&f.context, fiberEntry, 0);
      f.index = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
      f.parity = 0, f.done = false;
    }
    for (bool reverse = false;; reverse = !reverse) {
      unsigned finished = 0;
      for (unsigned k = 0; k < n; ++k) {
        Fiber &f = fibers[reverse ? n - 1 - k : k];
        runningFiber = &f, threadIdx = f.index, exchangeParity = f.parity;
        swapcontext(&schedulerContext, &f.context);
        f.parity = exchangeParity;
        finished += f.done;
      }
      if (finished == n) break;
      if (finished != 0) divergentBarrier(i, n - finished, n);
    }
  }
  runningFiber = nullptr;
}

}  // namespace lmrt_emu

using lmrt_emu::blockDim;
using lmrt_emu::blockIdx;
using lmrt_emu::gridDim;
using lmrt_emu::threadIdx;
using std::log;

/* CUDA's min and max: of floating-point values fminf/fmaxf (fmin/fmax), which return the
   other operand where one is NaN (std::min and std::max return their first operand when
   a comparison with NaN is false), so a kernel that drops a NaN on a GPU drops it here
   too; of integers, the smaller or larger. */
template <typename T> inline T min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
  else return std::min(a, b);
}
template <typename T> inline T max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
  else return std::max(a, b);
}

inline void __syncthreads() { lmrt_emu::yieldToScheduler(); }

/* Nonzero in every thread when `predicate` is nonzero in some thread of the block. */
inline int __syncthreads_or(int predicate) {
  lmrt_emu::orSlots[lmrt_emu::flatThread()] = predicate;
  __syncthreads();
  int any = 0;
  for (int v : lmrt_emu::orSlots) any |= v != 0;
  __syncthreads();  // nobody overwrites a slot before every thread has read them all
  return any;
}

namespace lmrt_emu {
/* Publishes `words` words of the calling thread and returns the exchange's buffer
   once every thread has published its own. */
inline const std::vector<ExchangeRecord> &exchange(const uint32_t *words, int n) {
  std::vector<ExchangeRecord> &slots = exchangeSlots[exchangeParity];
  exchangeParity ^= 1u;
  std::memcpy(slots[flatThread()].data(), words, n * sizeof(uint32_t));
  __syncthreads();
  return slots;
}

/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: the fragments of the warp's 32
   lanes (PTX ISA's layout; runtime/cuda/attention_mma.cuh) gathered by an exchange,
   each lane computing its own four elements of d = a b + c, the products summed in
   order in fp32. */
template <typename H>
inline void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  const std::vector<ExchangeRecord> &slots = exchange(mine, 6);
  const unsigned warp0 = flatThread() / 32 * 32, lane = flatThread() % 32, g = lane / 4, t = lane % 4;
  // toFloat unqualified: found by argument-dependent lookup in H's namespace (lmc) when the kernel's own
  // source has defined it. Including contract/scalar_math.h here would set its include guard before a
  // generated kernel source embeds it, and the emulated kernels would then run the header's functions
  // instead of their own copy (kernels-cuda-emulated.test's mutant would go unnoticed).
  auto half = [](uint32_t w, int k) { return toFloat(H{(uint16_t)(k % 2 ? w >> 16 : w & 0xffffu)}); };
  // A[r][k]: lane 4 (r % 8) + (k % 8) / 2, register (r >= 8) + 2 (k >= 8); B[k][n]: lane 4 n + (k % 8) / 2,
  // register 4 + (k >= 8).
  auto A = [&](int r, int k) { return half(slots[warp0 + 4 * (r % 8) + (k % 8) / 2][(r >= 8) + 2 * (k >= 8)], k); };
  auto B = [&](int k, int n) { return half(slots[warp0 + 4 * n + (k % 8) / 2][4 + (k >= 8)], k); };
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int r = g + 8 * (e / 2), n = 2 * t + e % 2;
    float s = c[e];
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    out[e] = s;
  }
  std::memcpy(d, out, sizeof out);
}
}  // namespace lmrt_emu

/* The value of v in lane (this lane ^ laneMask) of the warp (every lane taking part). */
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int laneMask) {
  static_assert(sizeof(T) <= 8 * sizeof(uint32_t), "__shfl_xor_sync: the emulator exchanges at most 32 bytes");
  uint32_t words[8] = {};
  std::memcpy(words, &v, sizeof v);
  const std::vector<lmrt_emu::ExchangeRecord> &slots = lmrt_emu::exchange(words, 8);
  T r;
  std::memcpy(&r, slots[lmrt_emu::flatThread() ^ (unsigned)laneMask].data(), sizeof r);
  return r;
}

/* A warp's barrier, as a block's: the emulated kernels call __syncwarp in every warp
   alike, and a block barrier orders at least what a warp barrier does. */
inline void __syncwarp(unsigned = 0xffffffffu) { __syncthreads(); }

/* WMMA (mma.h) as whole tiles: every lane of a warp holds the full fragment and
   computes the full product (the same values in each), which is what the warp's
   lanes hold together on a GPU; kernels that only apply the same operation to every
   element of a fragment cannot tell the difference. A store is done by lane 0 alone,
   so the kernel must __syncwarp before other lanes read it, as on a GPU. */
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  float x[rows * cols];  // row-major
};

/* Rounds to TF32's 10-bit mantissa, to nearest with ties away from zero (cvt.rna.tf32.f32). */
inline float __float_to_tf32(float f) {
  if (!std::isfinite(f)) return f;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename F> void fill_fragment(F &f, float v) {
  for (float &e : f.x) e = v;
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f, const float *p, unsigned ldm) {
  using Fr = fragment<Use, M, N, K, T, Layout>;
  constexpr bool colMajor = std::is_same_v<Layout, col_major>;
  for (int r = 0; r < Fr::rows; ++r)
    for (int c = 0; c < Fr::cols; ++c) f.x[r * Fr::cols + c] = colMajor ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float> &f, const float *p, unsigned ldm, layout_t l) {
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) f.x[r * N + c] = l == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K>
void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f, unsigned ldm, layout_t l) {
  if (lmrt_emu::flatThread() % 32 != 0) return;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) (l == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * N + c];
}

template <int M, int N, int K, typename T, typename LA, typename LB>
void mma_sync(fragment<accumulator, M, N, K, float> &d, const fragment<matrix_a, M, N, K, T, LA> &a,
              const fragment<matrix_b, M, N, K, T, LB> &b, const fragment<accumulator, M, N, K, float> &c) {
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = c.x[i * N + j];
      for (int k = 0; k < K; ++k) s += a.x[i * K + k] * b.x[k * N + j];
      out[i * N + j] = s;
    }
  std::memcpy(d.x, out, sizeof out);
}
}  // namespace nvcuda::wmma

#define LMRT_DYNAMIC_SHARED(T, name) T *name = reinterpret_cast<T *>(::lmrt_emu::sharedBytes.data())
