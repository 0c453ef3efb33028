/* Tests a completion's text under --stop (runtime/train/completion_text.h): cut before
   the first stop string to appear, shown as it grows without ever showing bytes a stop
   string takes back, text a tokenizer rewrites held until it extends what was shown,
   and invalid UTF-8 replaced for JSON. */
#include <gtest/gtest.h>

#include "base/tensor.h"
#include "runtime/train/completion_text.h"

using namespace lmrt;

TEST(CompletionText, CutsBeforeTheFirstStopString) {
  CompletionText c({"\n\n", "END"});
  std::string shown;
  for (std::string t : {"Hel", "Hello", "Hello\n", "Hello\n\nEND more"}) {
    const bool more = c.update(t);
    shown += c.take(false);
    if (!more) break;
  }
  shown += c.take(true);
  EXPECT_TRUE(c.stopped());
  EXPECT_EQ(c.text(), "Hello");
  EXPECT_EQ(shown, "Hello");
}

TEST(CompletionText, NeverShowsWhatAStopStringTakesBack) {
  CompletionText c({"END"});
  EXPECT_TRUE(c.update("x E"));
  EXPECT_EQ(c.take(false), "x");  // " E" could start "END"
  EXPECT_TRUE(c.update("x EN"));
  EXPECT_EQ(c.take(false), " ");
  EXPECT_FALSE(c.update("x END!"));
  EXPECT_EQ(c.take(false), "");
  EXPECT_EQ(c.text(), "x ");
}

TEST(CompletionText, HoldsBackOnlyWhatAStopStringCouldStart) {
  CompletionText c({"STOP"});
  EXPECT_TRUE(c.update("abcdef"));
  EXPECT_EQ(c.take(false), "abc");  // "def" may be the start of "STOP"? 3 bytes wait
  EXPECT_TRUE(c.update("abcdefgh"));
  EXPECT_EQ(c.take(false), "de");
  EXPECT_EQ(c.take(true), "fgh");
  EXPECT_FALSE(c.stopped());
}

TEST(CompletionText, WithoutStopsEverythingShowsAtOnce) {
  CompletionText c({});
  EXPECT_TRUE(c.update("ab"));
  EXPECT_EQ(c.take(false), "ab");
  EXPECT_TRUE(c.update("abX"));  // a rewrite of shown text waits
  EXPECT_EQ(c.take(false), "X");
  EXPECT_TRUE(c.update("aZX"));
  EXPECT_EQ(c.take(false), "");
  EXPECT_EQ(c.take(true), "");
}

TEST(CompletionText, EmptyStopIsAnError) {
  EXPECT_THROW(CompletionText({"a", ""}), Error);
}

TEST(CompletionText, ValidUtf8ReplacesBrokenSequences) {
  EXPECT_EQ(validUtf8("ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(validUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(validUtf8("\xC3"), "\xEF\xBF\xBD");                       // truncated
  EXPECT_EQ(validUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");       // overlong
  EXPECT_EQ(validUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}
