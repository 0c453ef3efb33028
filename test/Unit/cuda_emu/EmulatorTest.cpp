/* Tests the emulator itself (emulation.h): a barrier orders every thread's writes
   before every read after it, in a block of several warps and over several blocks; a
   read that no barrier orders sees a different thread's state in the two run orders;
   a barrier some threads skip stops the test with a message instead of hanging; min and
   max drop a NaN as CUDA's do. */
#include "emulation.h"

#include <gtest/gtest.h>

namespace {

/* out[b * n + t] = the value thread (t + 1) % n of block b wrote before the barrier. */
__global__ void rotateThroughShared(int *out) {
  __shared__ int slots[256];
  const unsigned t = threadIdx.x, n = blockDim.x;
  slots[t] = (int)(blockIdx.x * 1000 + t);
  __syncthreads();
  out[blockIdx.x * n + t] = slots[(t + 1) % n];
  __syncthreads();  // nobody rewrites slots (next block) before all have read
}

TEST(Emulator, BarrierOrdersWritesBeforeReads) {
  const unsigned n = 160, blocks = 3;
  std::vector<int> out(n * blocks, -1);
  lmrt_emu::launch(rotateThroughShared, {blocks, 1, 1}, {n, 1, 1}, 0, out.data());
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < n; ++t) EXPECT_EQ(out[b * n + t], (int)(b * 1000 + (t + 1) % n)) << b << " " << t;
}

/* The missing barrier: each thread reads its neighbour's slot right after writing its
   own. Twice, the second time in the next barrier interval (the reverse order). */
__global__ void raceOnShared(int *out) {
  __shared__ int slots[64];
  const unsigned t = threadIdx.x, n = blockDim.x;
  slots[t] = 1;
  out[t] = slots[(t + 1) % n];
  __syncthreads();
  slots[t] = 2;
  out[n + t] = slots[(t + 1) % n];
}

TEST(Emulator, UnorderedReadsSeeTheRunOrder) {
  const unsigned n = 64;
  std::vector<int> out(2 * n, -1);
  lmrt_emu::launch(raceOnShared, {1, 1, 1}, {n, 1, 1}, 0, out.data());
  // In thread order thread t runs before t + 1 (its neighbour has not written yet:
  // the slot is still the previous interval's), in reverse order after it.
  int stale = 0, fresh = 0;
  for (unsigned t = 0; t + 1 < n; ++t) stale += out[t] != 1, fresh += out[n + t] == 2;
  EXPECT_EQ(stale, (int)n - 1);
  EXPECT_EQ(fresh, (int)n - 1);
}

/* CUDA's min and max of floats are fminf/fmaxf: a NaN operand gives the other one, in
   either position (std::min/std::max would give the first); of integers, as std's. */
TEST(Emulator, MinAndMaxAreCudas) {
  EXPECT_EQ(max(NAN, -1.5f), -1.5f);
  EXPECT_EQ(max(-1.5f, NAN), -1.5f);
  EXPECT_EQ(min((double)NAN, 2.0), 2.0);
  EXPECT_EQ(min(2.0, (double)NAN), 2.0);
  EXPECT_EQ(min(max(NAN, -0.5f), 0.5f), -0.5f);  // a clamp with them turns NaN into its lower bound
  EXPECT_EQ(max(3, 4), 4);
  EXPECT_EQ(min((int64_t)-3, (int64_t)4), -3);
}

__global__ void barrierInABranch(int *) {
  if (threadIdx.x % 2) return;
  __syncthreads();
}

TEST(EmulatorDeathTest, ABarrierSomeThreadsSkipStopsTheTest) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the BLAS library may have started threads
  std::vector<int> out(1);
  EXPECT_DEATH(lmrt_emu::launch(barrierInABranch, {2, 1, 1}, {64, 1, 1}, 0, out.data()),
               "block 0: 32 of 64 threads wait at a barrier the others returned without reaching");
}

}  // namespace
