/* Tests the pieces of `lmrt run`'s observability that need no plan: CRC32C
   against RFC 3720's test vectors (TFRecord framing depends on it), the event
   file's framing read back by hand, and the ETA formatting. TensorBoard's own
   reader is run on real files by test/E2E/tensorboard.test. */
#include <gtest/gtest.h>

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>

#include "TempDir.h"
#include "runtime/train/eta.h"
#include "runtime/train/metrics.h"
#include "runtime/train/tensorboard.h"

using namespace lmrt;
using lmrt_test::TempDir;

TEST(Crc32c, MatchesRfc3720Vectors) {
  unsigned char zeros[32] = {0}, ones[32], inc[32];
  std::memset(ones, 0xff, 32);
  for (int i = 0; i < 32; ++i) inc[i] = (unsigned char)i;
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones, 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(inc, 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  uint32_t c = crc32c("123456789", 9);
  EXPECT_EQ(maskedCrc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TensorBoard, RecordsAreFramedWithTheirCrcs) {
  TempDir d;
  std::string path;
  {
    TensorBoardWriter w(d.file("tb/nested"));
    path = w.path();
    StepMetrics m;
    m.step = 3;
    m.loss = 2.5;
    w.write(m, 0);
  }
  EXPECT_NE(path.find("/tb/nested/events.out.tfevents."), std::string::npos) << path;
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size());
    uint64_t len;
    uint32_t lenCrc, dataCrc;
    std::memcpy(&len, &bytes[at], 8);
    std::memcpy(&lenCrc, &bytes[at + 8], 4);
    EXPECT_EQ(lenCrc, maskedCrc32c(&bytes[at], 8));
    ASSERT_LE(at + 12 + len + 4, bytes.size());
    std::memcpy(&dataCrc, &bytes[at + 12 + len], 4);
    EXPECT_EQ(dataCrc, maskedCrc32c(&bytes[at + 12], len));
    at += 12 + len + 4;
    ++records;
  }
  EXPECT_EQ(records, 2);  // the file version, then step 3
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(bytes.find("train/loss"), std::string::npos);
}

TEST(Eta, FormatsDurations) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(59.9), "59s");
  EXPECT_EQ(formatDuration(185), "3m05s");
  EXPECT_EQ(formatDuration(3720), "1h02m");
  EXPECT_EQ(formatDuration(2 * 86400 + 3 * 3600 + 59), "2d03h");
  EXPECT_EQ(formatDuration(-1), "?");
  EXPECT_EQ(progressTail(2'000'000'000, 0.5, 10, 10, 30), " | 4.0 GFLOP/s | ETA 20s");
  EXPECT_EQ(progressTail(0, 0.5, 10, 30, 30), "");
}
