/* Tests the signal handling of `lmrt run`: SIGTERM/SIGINT only raise a flag (the
   process lives on to checkpoint), and a SIGBUS from reading a memory-mapped file
   truncated underneath becomes an Error naming the file, not a crash. */
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "TempDir.h"
#include "base/tensor.h"
#include "runtime/train/signals.h"

using namespace lmrt;
using namespace lmrt_test;

TEST(Signals, TermAndIntSetTheFlagAndTheProcessLives) {
  {
    StopSignals s;
    EXPECT_EQ(s.pending(), 0);
    std::raise(SIGTERM);
    EXPECT_EQ(s.pending(), SIGTERM);
  }
  StopSignals again;  // a new run starts with no signal pending
  EXPECT_EQ(again.pending(), 0);
  std::raise(SIGINT);
  EXPECT_EQ(again.pending(), SIGINT);
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
