/* Tests the signal handling of `lmrt run`: SIGTERM/SIGINT only raise a flag (the
   process lives on to checkpoint), and a SIGBUS from reading a memory-mapped file
   truncated underneath becomes an Error naming the file, not a crash. */
#include <gtest/gtest.h>

#include <csignal>
#include <dirent.h>
#include <pthread.h>
#include <thread>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "TempDir.h"
#include "base/tensor.h"
#include "runtime/train/signals.h"

using namespace lmrt;
using namespace lmrt_test;

namespace {
/* Threads of the process now. OpenBLAS starts its worker threads before main (lmrt
   re-executes itself with the signals blocked for them; a test binary cannot), so the
   tests that send a signal to the process run with OPENBLAS_NUM_THREADS=1 (ctest
   sets it): then the only threads are this one and the signal thread. */
int threadCount() {
  int n = 0;
  if (DIR *d = ::opendir("/proc/self/task")) {
    while (struct dirent *e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

/* The signal thread records a signal asynchronously: wait for it (5 s at most). */
int pendingAfter(const StopSignals &s, int sig) {
  ::kill(::getpid(), sig);  // process-directed, as `kill` and Slurm send it
  for (int i = 0; i < 500 && s.pending() == 0; ++i) ::usleep(10000);
  return s.pending();
}
}  // namespace

TEST(Signals, TermAndIntSetTheFlagAndTheProcessLives) {
  {
    StopSignals s;
    if (threadCount() > 2) GTEST_SKIP() << "threads started before main (OpenBLAS) would take the signal: run with "
                                           "OPENBLAS_NUM_THREADS=1, as ctest does";
    EXPECT_EQ(s.pending(), 0);
    EXPECT_EQ(pendingAfter(s, SIGTERM), SIGTERM);
    EXPECT_EQ(pendingAfter(s, SIGINT), SIGTERM);  // a second one changes nothing: the first is kept
  }
  StopSignals again;  // a new run starts with no signal pending
  EXPECT_EQ(again.pending(), 0);
  EXPECT_EQ(pendingAfter(again, SIGINT), SIGINT);
}

/* No thread but the signal thread ever takes SIGTERM or SIGINT: every other thread,
   the one that made the StopSignals and those it starts after, has them blocked
   (a handler entered inside a oneDNN JIT kernel corrupted the heap, signals.h). */
TEST(Signals, OnlyTheSignalThreadTakesThem) {
  StopSignals s;
  sigset_t mask;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &mask), 0);
  EXPECT_TRUE(sigismember(&mask, SIGTERM));
  EXPECT_TRUE(sigismember(&mask, SIGINT));
  bool blockedThere = false;
  std::thread([&] {
    sigset_t m;
    pthread_sigmask(SIG_BLOCK, nullptr, &m);
    blockedThere = sigismember(&m, SIGTERM) && sigismember(&m, SIGINT);
  }).join();
  EXPECT_TRUE(blockedThere);
  struct sigaction sa;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &sa), 0);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);  // no handler at all
}

TEST(Signals, BusErrorInAGuardedReadBecomesAnError) {
  TempDir d;
  std::string path = d.file("mapped");
  writeFile(path, std::string(1 << 16, 'x'));
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void *m = ::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);  // every mapped page is now past the end
  volatile const char *bytes = static_cast<const char *>(m);
  try {
    guardBusErrors("data 'mapped'", [&] { (void)bytes[40000]; });
    FAIL() << "reading a truncated mapping did not raise SIGBUS";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("data 'mapped' changed under the run"), std::string::npos) << e.what();
  }
  // The guard is gone afterwards, and can be armed again.
  EXPECT_THROW(guardBusErrors("again", [&] { (void)bytes[100]; }), Error);
  EXPECT_NO_THROW(guardBusErrors("fine", [] {}));
  ::munmap(m, 1 << 16);
}
