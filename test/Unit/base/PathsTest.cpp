/* Tests the output rules (base/paths.h) as every tool applies them: an output
   that is an input is refused through a symlink or a hard link and even with
   --overwrite, and so is one whose temporary is an input; an existing file is
   replaced when it is the command's earlier output, and anything else only with
   --overwrite; errors for a file in a directory output name the directory; an
   input with a name the command writes in a directory output is refused; and
   nothing is touched when a check fails. */
#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

#include "base/file_io.h"
#include "base/paths.h"
#include "base/tensor.h"
#include "test/Unit/train/TempDir.h"

namespace lmrt {
namespace {

using lmrt_test::readFile;
using lmrt_test::TempDir;
using lmrt_test::writeFile;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

OutputSpec planOut(const std::string &path) {
  return {"-o", path, false, IfExists::ReplaceEarlier,
          [](const std::string &p) { return fileStartsWith(p, "LMCPLAN"); }, "a plan"};
}

TEST(Paths, AnInputIsNeverAnOutput) {
  TempDir d;
  writeFile(d.file("in.txt"), "text");
  ASSERT_EQ(::symlink("in.txt", d.file("link").c_str()), 0);
  ASSERT_EQ(::link(d.file("in.txt").c_str(), d.file("hard").c_str()), 0);
  std::vector<NamedPath> inputs = {{"--input", d.file("in.txt")}};
  for (const char *out : {"in.txt", "link", "hard", "./in.txt"})
    for (bool overwrite : {false, true}) {
      std::string path = d.path + "/" + out;
      EXPECT_HAS(errorOf([&] { checkOutputs({{"--out", path}}, inputs, overwrite, nullptr); }),
                 "--out '" + path + "' is the same file as --input '" + d.file("in.txt") +
                     "': refusing to overwrite an input");
    }
  EXPECT_EQ(readFile(d.file("in.txt")), "text");
}

TEST(Paths, TheTemporaryOfAnOutputIsNoInput) {
  TempDir d;
  writeFile(d.file("x.plan.tmp"), "an input");
  std::string e = errorOf(
      [&] { checkOutputs({planOut(d.file("x.plan"))}, {{"the source", d.file("x.plan.tmp")}}, true, nullptr); });
  EXPECT_HAS(e, "-o '" + d.file("x.plan") + "' is written through the temporary '" + d.file("x.plan.tmp") +
                    "', which is the source");
  EXPECT_EQ(readFile(d.file("x.plan.tmp")), "an input");  // not removed as stale
}

TEST(Paths, EarlierOutputsAreReplacedAndNothingElse) {
  TempDir d;
  writeFile(d.file("old.plan"), std::string("LMCPLAN\0rest", 12));
  writeFile(d.file("model.lm"), "model m() {}");
  writeFile(d.file("empty"), "");
  EXPECT_EQ(errorOf([&] { checkOutputs({planOut(d.file("old.plan"))}, {}, false, nullptr); }), "");
  EXPECT_EQ(errorOf([&] { checkOutputs({planOut(d.file("empty"))}, {}, false, nullptr); }), "");
  EXPECT_EQ(errorOf([&] { checkOutputs({planOut(d.file("new.plan"))}, {}, false, nullptr); }), "");
  EXPECT_HAS(errorOf([&] { checkOutputs({planOut(d.file("model.lm"))}, {}, false, nullptr); }),
             "-o '" + d.file("model.lm") + "' exists and is not a plan; pass --overwrite to replace it");
  EXPECT_EQ(errorOf([&] { checkOutputs({planOut(d.file("model.lm"))}, {}, true, nullptr); }), "");
  // NeedsOverwrite: any existing file.
  EXPECT_HAS(errorOf([&] { checkOutputs({{"--out", d.file("old.plan")}}, {}, false, nullptr); }),
             "--out '" + d.file("old.plan") + "' exists; pass --overwrite to replace it");
  EXPECT_EQ(readFile(d.file("model.lm")), "model m() {}");
}

TEST(Paths, FilesOfADirectoryOutputNameTheDirectory) {
  TempDir d;
  ASSERT_EQ(::mkdir(d.file("out").c_str(), 0777), 0);
  writeFile(d.file("out/model.safetensors"), "weights");
  std::vector<OutputSpec> outs = {{"--out", d.file("out"), true},
                                  {"--out", d.file("out/model.safetensors"), false, IfExists::NeedsOverwrite}};
  EXPECT_HAS(errorOf([&] { checkOutputs(outs, {}, false, nullptr); }),
             "--out '" + d.file("out") + "' already holds model.safetensors; pass --overwrite to replace it");
  // A directory still to be made: its files are neither probed nor refused.
  std::vector<OutputSpec> fresh = {{"--out", d.file("new"), true},
                                   {"--out", d.file("new/train.bin"), false, IfExists::NeedsOverwrite}};
  EXPECT_EQ(errorOf([&] { checkOutputs(fresh, {}, false, nullptr); }), "");
  EXPECT_NE(::access(d.file("new").c_str(), F_OK), 0);  // checks create nothing
  // A trailing slash names the directory itself (README: `lmrt data build ... --out fortunes/`).
  EXPECT_EQ(errorOf([&] { checkOutputs({{"--out", d.file("new") + "/", true}}, {}, false, nullptr); }), "");
  EXPECT_EQ(parentDirectory("fortunes/"), ".");
  EXPECT_EQ(parentDirectory("a/b//"), "a");
  EXPECT_EQ(parentDirectory("a//b"), "a");
  EXPECT_EQ(parentDirectory("/x/"), "/");
  EXPECT_EQ(parentDirectory("/"), "/");
  EXPECT_EQ(parentDirectory("x"), ".");
  // A directory whose parent is missing, or that is a file.
  EXPECT_HAS(errorOf([&] { checkOutputs({{"--out", d.file("no/such"), true}}, {}, false, nullptr); }),
             "parent directory '" + d.file("no") + "' does not exist");
  EXPECT_HAS(errorOf([&] { checkOutputs({{"--out", d.file("out/model.safetensors"), true}}, {}, false, nullptr); }),
             "exists and is not a directory");
}

TEST(Paths, AnInputNamedLikeADirectorysFilesIsRefused) {
  TempDir d;
  ASSERT_EQ(::mkdir(d.file("dump").c_str(), 0777), 0);
  writeFile(d.file("dump/init.safetensors"), "weights");
  ASSERT_EQ(::symlink("dump/init.safetensors", d.file("w").c_str()), 0);
  OutputSpec dump{"--dump-dir", d.file("dump"), true};
  dump.names = [](const std::string &name) { return name == "init.safetensors"; };
  EXPECT_HAS(errorOf([&] { checkOutputs({dump}, {{"--init", d.file("w")}}, true, nullptr); }),
             "--dump-dir '" + d.file("dump") + "' would write 'init.safetensors', which is --init '" + d.file("w") +
                 "': refusing to overwrite an input");
  EXPECT_EQ(errorOf([&] { checkOutputs({dump}, {{"--init", d.file("other")}}, false, nullptr); }), "");
}

TEST(Paths, AnEmptyPathIsAnError) {
  EXPECT_HAS(errorOf([&] { checkOutputs({{"--out", ""}}, {}, false, nullptr); }), "--out: an empty path");
}

TEST(Paths, AStaleTemporaryIsRemovedAndSaid) {
  TempDir d;
  writeFile(d.file("w.safetensors.tmp"), "partial");
  char buf[256] = {};
  FILE *log = fmemopen(buf, sizeof buf, "w");
  checkOutputs({{"--out", d.file("w.safetensors")}}, {}, false, log);
  std::fclose(log);
  EXPECT_NE(::access(d.file("w.safetensors.tmp").c_str(), F_OK), 0);
  EXPECT_HAS(std::string(buf), "left by an interrupted write");
}

}  // namespace
}  // namespace lmrt
