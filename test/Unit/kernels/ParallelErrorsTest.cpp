/* Tests that an error raised inside an OpenMP parallel region reaches the caller as
   the lmrt error it was (the first one raised), instead of ending the process, and
   that a region without errors rethrows nothing. */
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <string>

#include "base/tensor.h"
#include "runtime/cpu/kernels/parallel_errors.h"

namespace lmrt::kernels::test {
namespace {

TEST(ParallelErrors, TheFirstErrorLeavesTheRegion) {
  ParallelErrors errors;
  std::atomic<int> ran{0};
#pragma omp parallel for num_threads(2)
  for (int i = 0; i < 64; ++i) errors.run([&] {
    ++ran;
    if (i == 37) fail("item %d failed", i);
  });
  EXPECT_EQ(ran.load(), 64);  // the other items still ran: no thread left the loop early
  try {
    errors.rethrow();
    FAIL() << "no error came out of the region";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "item 37 failed");
  }
}

TEST(ParallelErrors, NoErrorNoThrow) {
  ParallelErrors errors;
  int sum = 0;
#pragma omp parallel for num_threads(2) reduction(+ : sum)
  for (int i = 0; i < 8; ++i) errors.run([&] { sum += i; });
  EXPECT_NO_THROW(errors.rethrow());
  EXPECT_EQ(sum, 28);
}

}  // namespace
}  // namespace lmrt::kernels::test
