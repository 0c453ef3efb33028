/* Tests the one reader of the files a user names (base/file_io.h): a FIFO and a
   device are refused at once (never waited on, never read forever), a /proc file
   whose stat size is 0 is read to its end, a file over the bound is refused
   naming the path and the bound, and a file exactly at the bound is read. */
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include "base/file_io.h"
#include "base/tensor.h"
#include "test/Unit/train/TempDir.h"

namespace lmrt {
namespace {

using lmrt_test::TempDir;
using lmrt_test::writeFile;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(FileIo, RefusesAFifoWithoutWaiting) {
  TempDir d;
  std::string fifo = d.file("f.lm");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  std::string bytes, error;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(readRegularFile(fifo, "source", 1 << 20, bytes, error));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_HAS(error, "cannot open source '" + fifo + "': not a regular file (a FIFO would be waited on forever)");
  EXPECT_FALSE(checkRegularFile(fifo, "pass plugin", 1 << 20, error));
  EXPECT_HAS(error, "cannot open pass plugin");
}

TEST(FileIo, RefusesDevicesAndDirectories) {
  std::string bytes, error;
  EXPECT_FALSE(readRegularFile("/dev/zero", "source", 1 << 20, bytes, error));
  EXPECT_HAS(error, "'/dev/zero': not a regular file (a device or socket is never read)");
  TempDir d;
  EXPECT_FALSE(readRegularFile(d.path, "source", 1 << 20, bytes, error));
  EXPECT_HAS(error, "it is a directory");
  EXPECT_FALSE(readRegularFile(d.file("missing"), "source", 1 << 20, bytes, error));
  EXPECT_HAS(error, "No such file or directory");
}

TEST(FileIo, ReadsAProcFileToItsEnd) {
  // stat says 0 bytes; the file holds the process's status.
  struct stat st;
  ASSERT_EQ(::stat("/proc/self/status", &st), 0);
  ASSERT_EQ(st.st_size, 0);
  std::string bytes, error;
  ASSERT_TRUE(readRegularFile("/proc/self/status", "source", 1 << 20, bytes, error)) << error;
  EXPECT_HAS(bytes, "Name:");
  EXPECT_HAS(bytes, "Pid:");
}

TEST(FileIo, BoundsTheSize) {
  TempDir d;
  writeFile(d.file("at"), std::string(4096, 'a'));
  writeFile(d.file("over"), std::string(4097, 'a'));
  std::string bytes, error;
  ASSERT_TRUE(readRegularFile(d.file("at"), "source", 4096, bytes, error)) << error;
  EXPECT_EQ(bytes.size(), 4096u);
  EXPECT_FALSE(readRegularFile(d.file("over"), "source", 4096, bytes, error));
  EXPECT_HAS(error, "cannot read source '" + d.file("over") + "': 4097 bytes, over the bound of 4 KiB");
  // A file whose size stat does not tell is bounded while it is read.
  EXPECT_FALSE(readRegularFile("/proc/self/maps", "source", 16, bytes, error));
  EXPECT_HAS(error, "cannot read source '/proc/self/maps': more than the bound of 16 bytes");
  EXPECT_THROW(readWholeFile(d.file("over"), "source", 4096), Error);
  EXPECT_EQ(readWholeFile(d.file("over"), "source").size(), 4097u);
}

}  // namespace
}  // namespace lmrt
