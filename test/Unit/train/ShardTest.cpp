/* Tests that token shards round-trip and that every kind of damage is caught
   with a message naming the file. */
#include <gtest/gtest.h>

#include "TempDir.h"
#include "runtime/data/shard.h"
#include "base/tensor.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;
using lmrt_test::writeFile;

namespace {

std::string errorOf(const std::string &path) {
  try {
    Shard s(path);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

void writeSample(const std::string &path) {
  writeShard(path, {72, 105, 10, 0, 255, 7, 9}, {0, 3, 5}, 2);
}

}  // namespace

TEST(Shard, RoundTripsTokensAndDocuments) {
  TempDir d;
  std::string p = d.file("a.bin");
  writeSample(p);
  Shard s(p);
  EXPECT_EQ(s.size(), 7u);
  EXPECT_EQ(s.documentCount(), 3u);
  EXPECT_EQ(s.tokenBytes(), 2u);
  std::vector<uint32_t> want = {72, 105, 10, 0, 255, 7, 9};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(s.token(i), want[i]) << i;
  EXPECT_EQ(s.documentStart(0), 0u);
  EXPECT_EQ(s.documentStart(1), 3u);
  EXPECT_EQ(s.documentStart(2), 5u);
  int32_t out[3];
  s.copyTokens(4, 3, out);
  EXPECT_EQ(out[0], 255);
  EXPECT_EQ(out[2], 9);
  EXPECT_THROW(s.copyTokens(5, 3, out), Error);
  // Exact size: header + tokens + index + checksum.
  EXPECT_EQ(readFile(p).size(), kShardHeaderBytes + 7 * 2 + 3 * 8 + 8);
}

TEST(Shard, FourByteTokensAndEmptyShard) {
  TempDir d;
  writeShard(d.file("w.bin"), {70000, 1}, {0}, 4);
  Shard w(d.file("w.bin"));
  EXPECT_EQ(w.token(0), 70000u);
  writeShard(d.file("e.bin"), {}, {}, 2);
  Shard e(d.file("e.bin"));
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.documentCount(), 0u);
}

TEST(Shard, WriterRejectsBadInput) {
  TempDir d;
  EXPECT_THROW(writeShard(d.file("x.bin"), {70000}, {0}, 2), Error);  // does not fit
  EXPECT_THROW(writeShard(d.file("x.bin"), {1, 2}, {1}, 2), Error);   // first doc not at 0
  EXPECT_THROW(writeShard(d.file("x.bin"), {1, 2}, {0, 3}, 2), Error); // past the end
  EXPECT_THROW(writeShard(d.file("x.bin"), {1}, {0}, 3), Error);      // bad width
}

TEST(Shard, TruncatedFileIsReported) {
  TempDir d;
  std::string p = d.file("train.bin");
  writeSample(p);
  std::string bytes = readFile(p);
  writeFile(p, bytes.substr(0, bytes.size() - 5));
  std::string e = errorOf(p);
  EXPECT_NE(e.find(p + " is truncated"), std::string::npos) << e;
  writeFile(p, bytes.substr(0, 10));
  e = errorOf(p);
  EXPECT_NE(e.find("is truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("header"), std::string::npos) << e;
}

TEST(Shard, CorruptedByteIsReported) {
  TempDir d;
  std::string p = d.file("train.bin");
  writeSample(p);
  std::string bytes = readFile(p);
  bytes[kShardHeaderBytes + 3] ^= 0x10;  // a token byte
  writeFile(p, bytes);
  std::string e = errorOf(p);
  EXPECT_NE(e.find(p), std::string::npos) << e;
  EXPECT_NE(e.find("checksum mismatch (corrupted)"), std::string::npos) << e;
}

TEST(Shard, BadMagicVersionAndTrailingBytes) {
  TempDir d;
  std::string p = d.file("train.bin");
  writeSample(p);
  std::string good = readFile(p);

  std::string bad = good;
  bad[0] = 'X';
  writeFile(p, bad);
  EXPECT_NE(errorOf(p).find("not a token shard"), std::string::npos) << errorOf(p);

  bad = good;
  bad[8] = 9;  // version
  writeFile(p, bad);
  EXPECT_NE(errorOf(p).find("version 9"), std::string::npos) << errorOf(p);

  writeFile(p, good + "xx");
  EXPECT_NE(errorOf(p).find("trailing bytes"), std::string::npos) << errorOf(p);

  std::string e = errorOf(d.file("nope.bin"));
  EXPECT_NE(e.find("nope.bin"), std::string::npos) << e;
}

TEST(Shard, ChecksumIsFnv1a64OfPrecedingBytes) {
  Fnv1a64 h;
  h.update("a", 1);
  EXPECT_EQ(h.h, 0xaf63dc4c8601ec8cull);  // published FNV-1a-64 test vector for "a"
  Fnv1a64 split, whole;
  whole.update("hello world", 11);
  split.update("hello", 5);
  split.update(" world", 6);
  EXPECT_EQ(split.h, whole.h);
}
