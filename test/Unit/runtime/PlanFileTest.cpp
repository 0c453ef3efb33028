/* Tests the plan file framing: round trip, and that each kind of damage
   (truncation, bit flip, bad magic, wrong version, trailing bytes, bad payload)
   is reported with its own message. */
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <google/protobuf/util/message_differencer.h>

#include "test/Unit/ProcessTempDir.h"
#include "base/hash.h"
#include "contract/plan_file.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

std::string tmpPath(const std::string &name) {
  return lmrt_test::processTempDir() + "lmrt_planfile_" + name;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), (std::streamsize)bytes.size());
}

std::string readError(const std::string &bytes, const std::string &name) {
  std::string path = tmpPath(name);
  writeBytes(path, bytes);
  try {
    readPlanFile(path);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PlanFile, RoundTrip) {
  plan::Plan p = test::tinyPlan();
  std::string path = tmpPath("roundtrip.plan");
  writePlanFile(path, p);
  plan::Plan q = readPlanFile(path);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(p, q));
  EXPECT_EQ(serializePlan(p), serializePlan(q));
  // Deterministic bytes: writing the read plan again gives the identical file.
  EXPECT_EQ(encodePlan(p), encodePlan(q));
  EXPECT_EQ(q.programs_size(), 3);
  EXPECT_EQ(q.params(1).name(), "w");
}

TEST(PlanFile, LayoutIsAsDocumented) {
  plan::Plan p = test::tinyPlan();
  std::string bytes = encodePlan(p);
  std::string payload = serializePlan(p);
  ASSERT_EQ(bytes.size(), 8 + 4 + 8 + payload.size() + 8);
  EXPECT_EQ(bytes.substr(0, 8), std::string("LMCPLAN\0", 8));
  EXPECT_EQ((unsigned char)bytes[8], kPlanFormatVersion);
  EXPECT_EQ((unsigned char)bytes[12], payload.size() & 0xff);
  EXPECT_EQ(bytes.substr(20, payload.size()), payload);
  uint64_t sum = 0;
  for (int i = 0; i < 8; ++i) sum |= uint64_t((unsigned char)bytes[20 + payload.size() + i]) << (8 * i);
  EXPECT_EQ(sum, fnv1a64(payload.data(), payload.size()));
}

TEST(PlanFile, MissingFile) {
  try {
    readPlanFile(tmpPath("does_not_exist.plan"));
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot open plan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(PlanFile, EmptyFile) {
  EXPECT_NE(readError("", "empty.plan").find("file is empty"), std::string::npos);
}

TEST(PlanFile, BadMagic) {
  std::string bytes = encodePlan(test::tinyPlan());
  bytes[0] = 'X';
  std::string msg = readError(bytes, "magic.plan");
  EXPECT_NE(msg.find("is not an LMC plan"), std::string::npos) << msg;
  EXPECT_NE(readError("hello world, this is text", "text.plan").find("is not an LMC plan"),
            std::string::npos);
}

TEST(PlanFile, WrongVersion) {
  std::string bytes = encodePlan(test::tinyPlan());
  bytes[8] = 7;
  std::string msg = readError(bytes, "version.plan");
  EXPECT_NE(msg.find("unsupported plan format version 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads versions 2 to " + std::to_string(kPlanFormatVersion)), std::string::npos) << msg;
}

TEST(PlanFile, Truncated) {
  std::string bytes = encodePlan(test::tinyPlan());
  size_t payload = bytes.size() - 28;
  std::string msg = readError(bytes.substr(0, bytes.size() - 100), "trunc.plan");
  EXPECT_NE(msg.find("truncated: header says " + std::to_string(payload) + " payload bytes"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("file has " + std::to_string(payload + 8 - 100)), std::string::npos) << msg;
  EXPECT_NE(readError(bytes.substr(0, 14), "header.plan").find("truncated"), std::string::npos);
  EXPECT_NE(readError(bytes.substr(0, 5), "magic5.plan").find("truncated"), std::string::npos);
}

TEST(PlanFile, TrailingBytes) {
  std::string msg = readError(encodePlan(test::tinyPlan()) + "xyz", "trailing.plan");
  EXPECT_NE(msg.find("3 trailing bytes"), std::string::npos) << msg;
}

TEST(PlanFile, BitFlipIsCorruption) {
  std::string bytes = encodePlan(test::tinyPlan());
  bytes[20 + 37] ^= 0x10;  // inside the payload
  std::string msg = readError(bytes, "flip.plan");
  EXPECT_NE(msg.find("corrupted"), std::string::npos) << msg;
  // A flip in the checksum itself is caught the same way.
  bytes = encodePlan(test::tinyPlan());
  bytes[bytes.size() - 1] ^= 1;
  EXPECT_NE(readError(bytes, "flip2.plan").find("corrupted"), std::string::npos);
}

TEST(PlanFile, BadPayloadWithGoodChecksum) {
  std::string payload = "\xff\xff\xff\xff";
  std::string bytes(kPlanMagic, 8);
  for (int i = 0; i < 4; ++i) bytes.push_back(char(kPlanFormatVersion >> (8 * i)));
  for (int i = 0; i < 8; ++i) bytes.push_back(char(i == 0 ? payload.size() : 0));
  bytes += payload;
  uint64_t sum = fnv1a64(payload.data(), payload.size());
  for (int i = 0; i < 8; ++i) bytes.push_back(char(sum >> (8 * i)));
  std::string msg = readError(bytes, "payload.plan");
  EXPECT_NE(msg.find("not a valid lmrt.plan.Plan protobuf"), std::string::npos) << msg;
}

TEST(PlanFile, WriteToMissingDirectoryFails) {
  std::string err;
  EXPECT_FALSE(writePlanFile("/nonexistent-dir/x.plan", test::tinyPlan(), err));
  EXPECT_NE(err.find("cannot write plan"), std::string::npos) << err;
}

}  // namespace
}  // namespace lmrt
