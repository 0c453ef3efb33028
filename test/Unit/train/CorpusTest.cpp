/* Tests that text becomes documents as documented: fortune splitting, paragraph
   splitting, format detection, binary detection, input collection, and a
   deterministic train/validation split. */
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "TempDir.h"
#include "runtime/data/batches.h"
#include "runtime/data/shard.h"
#include "runtime/data/corpus.h"
#include "runtime/data/dataset_builder.h"
#include "base/tensor.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;
using lmrt_test::writeFile;

TEST(Corpus, SplitsFortunesOnPercentLines) {
  std::string text = "First one.\n%\nSecond\n  -- someone\n%\n%\n   \n%\n100% sure\n%\n";
  auto docs = splitFortunes(text);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0], "First one.\n");
  EXPECT_EQ(docs[1], "Second\n  -- someone\n");
  EXPECT_EQ(docs[2], "100% sure\n");  // '%' inside a line is text
  EXPECT_EQ(detectFormat(text), TextFormat::Fortune);
  // No trailing separator, and CRLF separators.
  docs = splitFortunes("a\r\n%\r\nb");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1], "b");
}

TEST(Corpus, SplitsTextIntoParagraphsThatConcatenateBack) {
  std::string text = "\nPara one\nline two\n\n\nPara two\n \nPara three\n\n";
  auto docs = splitParagraphs(text);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0], "\nPara one\nline two\n\n\n");
  EXPECT_EQ(docs[1], "Para two\n \n");
  EXPECT_EQ(docs[2], "Para three\n\n");
  std::string joined;
  for (auto &d : docs) joined += d;
  EXPECT_EQ(joined, text);
  EXPECT_EQ(detectFormat(text), TextFormat::Text);
  EXPECT_TRUE(splitParagraphs("\n \n").empty());
  EXPECT_EQ(splitDocuments("a\n%\nb\n", TextFormat::Text).size(), 1u);  // forced plain text
}

TEST(Corpus, ParsesFormatNames) {
  EXPECT_EQ(parseTextFormat("fortune"), TextFormat::Fortune);
  EXPECT_THROW(parseTextFormat("csv"), Error);
}

TEST(Corpus, DetectsBinaryData) {
  EXPECT_EQ(firstBinaryByte("plain ascii\n"), std::string::npos);
  EXPECT_EQ(firstBinaryByte("caf\xc3\xa9 \xe2\x82\xac"), std::string::npos);
  EXPECT_EQ(firstBinaryByte(std::string("ab\0c", 4)), 2u);
  EXPECT_EQ(firstBinaryByte("ab\xff"), 2u);
  EXPECT_EQ(firstBinaryByte("x\xc3"), 1u);       // truncated sequence
  EXPECT_EQ(firstBinaryByte("x\xe2\x28\xa1"), 1u);  // bad continuation
}

TEST(Corpus, CollectsDirectoryInputsSortedAndDeduplicated) {
  TempDir d;
  std::string dir = d.file("fortunes");
  ASSERT_EQ(mkdir(dir.c_str(), 0777), 0);
  writeFile(dir + "/zeta", "z\n%\n");
  writeFile(dir + "/alpha", "a\n%\n");
  writeFile(dir + "/alpha.dat", "index");
  writeFile(dir + "/blob", std::string("\x00\x01\x02", 3));
  ASSERT_EQ(symlink("alpha", (dir + "/alpha.u8").c_str()), 0);
  ASSERT_EQ(symlink("missing", (dir + "/dangling").c_str()), 0);
  std::vector<std::string> skipped;
  auto files = collectInputFiles({dir}, &skipped);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir + "/alpha");
  EXPECT_EQ(files[1], dir + "/zeta");
  EXPECT_EQ(skipped.size(), 4u);  // .dat, .u8 duplicate, binary, dangling
  EXPECT_THROW(collectInputFiles({d.file("none")}, nullptr), Error);
}

TEST(Corpus, SplitIsDeterministicAndFollowsTheFraction) {
  int val = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    bool v = isValidationDocument(1, i, 0.1);
    EXPECT_EQ(v, isValidationDocument(1, i, 0.1));
    val += v;
  }
  EXPECT_NEAR(val / 20000.0, 0.1, 0.01);
  int differ = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    differ += isValidationDocument(1, i, 0.5) != isValidationDocument(2, i, 0.5);
  EXPECT_GT(differ, 300);  // another seed gives another split
  for (uint64_t i = 0; i < 100; ++i) EXPECT_FALSE(isValidationDocument(1, i, 0.0));
}

TEST(Corpus, BuildsShardsAndMetaDeterministically) {
  TempDir d;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "fortune number " + std::to_string(i) + "\n%\n";
  writeFile(d.file("f"), text);
  DatasetBuildOptions o;
  o.inputs = {d.file("f")};
  o.outDir = d.file("out");
  o.valFraction = 0.2;
  DatasetBuildStats s = buildDataset(o);
  EXPECT_EQ(s.trainDocs + s.valDocs, 200u);
  EXPECT_GT(s.valDocs, 10u);
  EXPECT_LT(s.valDocs, 80u);
  Shard train(d.file("out/train.bin")), val(d.file("out/val.bin"));
  EXPECT_EQ(train.size() + val.size(), text.size() - 200 * 2);  // minus the "%\n" lines
  EXPECT_EQ(train.documentCount(), s.trainDocs);
  std::string meta = readFile(d.file("out/meta.json"));
  EXPECT_NE(meta.find("\"tokenizer\": \"bytes\""), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"vocab\": 256"), std::string::npos) << meta;
  std::string first = readFile(d.file("out/train.bin"));
  buildDataset(o);
  EXPECT_EQ(readFile(d.file("out/train.bin")), first);
  o.seed = 7;
  buildDataset(o);
  EXPECT_NE(readFile(d.file("out/train.bin")), first);
}

TEST(Corpus, BuildRejectsBadOptions) {
  TempDir d;
  writeFile(d.file("f"), "x\n");
  DatasetBuildOptions o;
  o.inputs = {d.file("f")};
  o.outDir = d.file("out");
  o.valFraction = 1.0;
  EXPECT_THROW(buildDataset(o), Error);
  o.valFraction = 0.0;
  writeFile(d.file("empty"), "\n\n");
  o.inputs = {d.file("empty")};
  EXPECT_THROW(buildDataset(o), Error);
  writeFile(d.file("bin"), std::string("a\0b", 3));
  o.inputs = {d.file("bin")};
  try {
    buildDataset(o);
    FAIL() << "binary input accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("bin' is not UTF-8 text"), std::string::npos) << e.what();
  }
}
