/* Tests example shards (round trip of every field kind, each kind of damage
   caught naming the file) and the example transforms' epoch order: every
   epoch visits each record once, epochs differ, and the order is a pure
   function of (seed, sample), so batches do not depend on what came before. */
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "TempDir.h"
#include "base/tensor.h"
#include "runtime/data/example_batches.h"
#include "runtime/data/examples.h"
#include "runtime/data/jsonl_builder.h"

using namespace lmrt;
using lmrt_test::readFile;
using lmrt_test::TempDir;
using lmrt_test::writeFile;

namespace {

ExampleColumns sample() {
  ExampleColumns c({{"a", FieldKind::Text}, {"y", FieldKind::Label}, {"b", FieldKind::Text},
                    {"t", FieldKind::Target}, {"s", FieldKind::Span}});
  // record 0: a = "hi", b = "x"; record 1: a = "", b = "yz!"
  c.tokens = {'h', 'i', 'x', 'y', 'z', '!'};
  c.offsets = {0, 2, 3, 3, 6};
  c.records = 2;
  c.ints[1] = {4, 0};
  c.floats[3] = {0.25, -3.5};
  c.ints[4] = {0, 0, 2, 2};  // in b: "x"[0, 0], "yz!"[2, 2]
  return c;
}

std::string errorOf(const std::string &path) {
  try {
    ExampleShard s(path);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ExampleShard, RoundTripsEveryFieldKind) {
  TempDir d;
  std::string p = d.file("train.examples");
  writeExampleShard(p, sample());
  ExampleShard s(p);
  ASSERT_EQ(s.records(), 2u);
  EXPECT_EQ(s.tokenCount(), 6u);
  EXPECT_EQ(s.field("b"), 2);
  EXPECT_EQ(s.field("none"), -1);
  EXPECT_EQ(s.fieldsOf(FieldKind::Text), (std::vector<int>{0, 2}));
  std::vector<int32_t> ids;
  s.text(0, 0, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{'h', 'i'}));
  s.text(1, 0, ids);
  EXPECT_TRUE(ids.empty());
  s.text(1, 2, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{'y', 'z', '!'}));
  EXPECT_EQ(s.label(0, 1), 4);
  EXPECT_EQ(s.target(1, 3), -3.5);
  int64_t a, b;
  s.span(1, 4, a, b);
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(s.tokenSource()->size(), 6u);
  EXPECT_EQ(s.tokenSource()->token(5), '!');
}

TEST(ExampleShard, RefusesDamage) {
  TempDir d;
  std::string p = d.file("train.examples");
  writeExampleShard(p, sample());
  const std::string good = readFile(p);
  std::string bad = good;
  bad[0] = 'X';
  writeFile(p, bad);
  EXPECT_NE(errorOf(p).find("is not an example shard (bad magic"), std::string::npos) << errorOf(p);
  bad = good;
  bad[good.size() / 2] ^= 1;
  writeFile(p, bad);
  EXPECT_NE(errorOf(p).find("checksum mismatch"), std::string::npos) << errorOf(p);
  writeFile(p, good.substr(0, good.size() - 16));
  EXPECT_NE(errorOf(p).find(p), std::string::npos);
  writeFile(p, good.substr(0, 20));
  EXPECT_NE(errorOf(p).find("is truncated"), std::string::npos) << errorOf(p);
  writeFile(p, good + std::string(8, '\0'));
  EXPECT_NE(errorOf(p).find(p), std::string::npos);
}

TEST(ExampleShard, WriterRefusesInconsistentColumns) {
  TempDir d;
  ExampleColumns c = sample();
  c.ints[1].pop_back();
  EXPECT_THROW(writeExampleShard(d.file("x.examples"), c), Error);
  c = sample();
  c.offsets.back() = 5;
  EXPECT_THROW(writeExampleShard(d.file("x.examples"), c), Error);
}

TEST(ExampleBatcher, EachEpochVisitsEveryRecordOnceInItsOwnOrder) {
  TempDir d;
  // 37 records of one text and a label.
  std::string jsonl;
  for (int i = 0; i < 37; ++i) jsonl += "{\"text\": \"r" + std::to_string(i) + "\", \"label\": " + std::to_string(i % 3) + "}\n";
  writeFile(d.file("in.jsonl"), jsonl);
  JsonlBuildOptions o;
  o.inputs = {d.file("in.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"text", "label:label"};
  o.valFraction = 0;
  buildJsonlDataset(o);
  ExampleBatcher a(o.outDir, ExampleTask::Classify, 4, 8, 3, 7), b(o.outDir, ExampleTask::Classify, 4, 8, 3, 7);
  ExampleBatcher other(o.outDir, ExampleTask::Classify, 4, 8, 3, 8);
  std::vector<uint64_t> e0, e1;
  for (uint64_t g = 0; g < 37; ++g) e0.push_back(a.trainRecord(g));
  for (uint64_t g = 37; g < 74; ++g) e1.push_back(a.trainRecord(g));
  std::vector<uint64_t> sorted0 = e0, sorted1 = e1;
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  for (uint64_t i = 0; i < 37; ++i) {
    EXPECT_EQ(sorted0[i], i);
    EXPECT_EQ(sorted1[i], i);
  }
  EXPECT_NE(e0, e1);
  // Queried out of order (a resumed run starts mid-epoch), the order is the same.
  for (uint64_t g = 73;; --g) {
    EXPECT_EQ(b.trainRecord(g), g < 37 ? e0[g] : e1[g - 37]) << g;
    if (g == 0) break;
  }
  bool differs = false;
  for (uint64_t g = 0; g < 37; ++g) differs |= other.trainRecord(g) != e0[g];
  EXPECT_TRUE(differs) << "another seed gives another order";
  // Micro-batches: rows firstRow.. of a step of 8 rows are that step's samples.
  a.setStepRows(8);
  ExampleBatch x;
  a.trainBatch(3, x, 4);
  std::vector<int32_t> want;
  for (uint64_t g = 28; g < 32; ++g) want.push_back((int32_t)(e0[g] % 3));
  EXPECT_EQ(x.ints["labels"], want);
}

TEST(ExampleBatcher, ValidationBatchesCoverEachRecordOnceThenIgnoreIndex) {
  TempDir d;
  writeFile(d.file("t.jsonl"), "{\"s\": \"abc\", \"y\": 1}\n");
  writeFile(d.file("v.jsonl"), "{\"s\": \"a\", \"y\": 0}\n{\"s\": \"bb\", \"y\": 1}\n{\"s\": \"c\", \"y\": 1}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("v.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"s", "y:label"};
  buildJsonlDataset(o);
  ExampleBatcher a(o.outDir, ExampleTask::Classify, 2, 6, 2, 1);
  EXPECT_EQ(a.valBatches(), 2u);
  ExampleBatch x;
  a.valBatch(1, x);
  EXPECT_EQ(x.ints["labels"], (std::vector<int32_t>{1, -100}));
  // Row 0: [CLS] c [SEP] [PAD]...; `last` is its [SEP] at position 2.
  EXPECT_EQ(std::vector<int32_t>(x.ints["ids"].begin(), x.ints["ids"].begin() + 6), (std::vector<int32_t>{257, 'c', 258, 256, 256, 256}));
  EXPECT_EQ(x.ints["last"][0], 2);
  EXPECT_EQ(x.ints["last"][1], 6 + 2);
  EXPECT_EQ(std::vector<float>(x.floats["attention_mask"].begin(), x.floats["attention_mask"].begin() + 6),
            (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

TEST(ExampleShard, TagsMustMatchTheirTextAndHoldLabelsOrIgnore) {
  TempDir d;
  std::string p = d.file("t.examples");
  ExampleColumns c({{"w", FieldKind::Text}, {"tags", FieldKind::Tags}});
  c.records = 1;
  c.tokens = {'a', ' ', 'b', 3, (uint32_t)-100, 1};
  c.offsets = {0, 3, 6};
  writeExampleShard(p, c);
  ExampleShard s(p);
  EXPECT_EQ(s.alignedText(1), 0);
  std::vector<int32_t> tags;
  s.text(0, 1, tags);
  EXPECT_EQ(tags, (std::vector<int32_t>{3, -100, 1}));
  c.tokens = {'a', ' ', 'b', 3, 1};
  c.offsets = {0, 3, 5};
  writeExampleShard(p, c);
  EXPECT_NE(errorOf(p).find("tags 'tags' has 2 labels for the 3 tokens of 'w'"), std::string::npos) << errorOf(p);
  c.tokens = {'a', 3, (uint32_t)-7};
  c.offsets = {0, 1, 3};
  writeExampleShard(p, c);
  EXPECT_NE(errorOf(p).find(p), std::string::npos);
  ExampleColumns lone({{"tags", FieldKind::Tags}, {"w", FieldKind::Text}});
  lone.records = 1;
  lone.tokens = {1, 'a'};
  lone.offsets = {0, 1, 2};
  writeExampleShard(p, lone);
  EXPECT_NE(errorOf(p).find("tags field 'tags' follows no text field"), std::string::npos) << errorOf(p);
}

namespace {

/* Builds a span dataset (question, context, answers:span) of `train` and
   `val` JSON Lines; returns its directory. */
std::string spanData(TempDir &d, const std::string &train, const std::string &val) {
  writeFile(d.file("t.jsonl"), train);
  writeFile(d.file("v.jsonl"), val);
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("v.jsonl")};
  o.outDir = d.file("qa");
  o.fields = {"question", "context", "answers:span"};
  buildJsonlDataset(o);
  return o.outDir;
}

std::vector<int32_t> row(const std::vector<int32_t> &v, int64_t r, int64_t seq) {
  return std::vector<int32_t>(v.begin() + r * seq, v.begin() + (r + 1) * seq);
}

}  // namespace

TEST(SpanTransform, RowsHoldQuestionThenContextAndTheAnswersPositions) {
  TempDir d;
  // Record 0: SQuAD's answers object; character 3 of "é xyz" is 'y' (é is two
  // bytes, one character, as Python counts). Record 1: [start, end) offsets.
  const std::string dir = spanData(
      d,
      "{\"question\": \"q?\", \"context\": \"\xc3\xa9 xyz\", \"answers\": {\"text\": [\"yz\"], \"answer_start\": [3]}}\n"
      "{\"question\": \"ab\", \"context\": \"hello\", \"answers\": [1, 3]}\n",
      "{\"question\": \"k\", \"context\": \"mn\", \"answers\": [1, 2]}\n");
  ExampleShard train(dir + "/train.examples");
  int64_t s, e;
  train.span(0, 2, s, e);
  EXPECT_EQ(s, 4);  // bytes: c3 a9 ' ' 'x' 'y' 'z'
  EXPECT_EQ(e, 5);
  const int64_t seq = 12;
  ExampleBatcher b(dir, ExampleTask::Span, 2, seq, 0, 1);
  // Training row of record 0 (the order is a shuffle: find it by its question).
  ExampleBatch x;
  b.trainBatch(0, x);
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<int32_t> ids = row(x.ints["ids"], r, seq), seg = row(x.ints["segments"], r, seq);
    if (ids[1] == 'q') {
      EXPECT_EQ(ids, (std::vector<int32_t>{257, 'q', '?', 258, 0xc3, 0xa9, ' ', 'x', 'y', 'z', 258, 256}));
      EXPECT_EQ(seg, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0}));
      EXPECT_EQ(x.ints["start_positions"][r], 4 + 4);  // context starts at 4
      EXPECT_EQ(x.ints["end_positions"][r], 4 + 5);
      EXPECT_EQ(ids[x.ints["start_positions"][r]], 'y');
      EXPECT_EQ(ids[x.ints["end_positions"][r]], 'z');
    } else {
      EXPECT_EQ(ids, (std::vector<int32_t>{257, 'a', 'b', 258, 'h', 'e', 'l', 'l', 'o', 258, 256, 256}));
      EXPECT_EQ(x.ints["start_positions"][r], 4 + 1);  // "el"
      EXPECT_EQ(x.ints["end_positions"][r], 4 + 2);
      EXPECT_EQ(std::vector<float>(x.floats["attention_mask"].begin() + r * seq,
                                   x.floats["attention_mask"].begin() + (r + 1) * seq),
                (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
    }
  }
  // Validation: record 0, then a padding row with positions -100.
  b.valBatch(0, x);
  EXPECT_EQ(x.ints["start_positions"], (std::vector<int32_t>{4, -100}));
  EXPECT_EQ(x.ints["end_positions"], (std::vector<int32_t>{4, -100}));
  EXPECT_EQ(row(x.ints["ids"], 0, seq)[4], 'n');
}

TEST(SpanTransform, TruncatesTheQuestionThenTheContextAndPointsCutAnswersAtCls) {
  TempDir d;
  const std::string dir = spanData(d,
                                   "{\"question\": \"qqqqqq\", \"context\": \"abcdefgh\", \"answers\": [6, 8]}\n"
                                   "{\"question\": \"qqqqqq\", \"context\": \"abcdefgh\", \"answers\": [0, 2]}\n",
                                   "{\"question\": \"qqqqqq\", \"context\": \"abcdefgh\", \"answers\": [3, 5]}\n");
  const int64_t seq = 10;
  ExampleBatcher b(dir, ExampleTask::Span, 1, seq, 0, 1);
  b.setMaxQuestion(2);
  int64_t contextStart, kept;
  b.spanRow(b.valShard(), 0, contextStart, kept);
  EXPECT_EQ(contextStart, 4);  // [CLS] q q [SEP]
  EXPECT_EQ(kept, 5);          // seq - 2 - 3
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints["ids"], (std::vector<int32_t>{257, 'q', 'q', 258, 'a', 'b', 'c', 'd', 'e', 258}));
  EXPECT_EQ(x.ints["start_positions"][0], 4 + 3);  // "de", inside the kept "abcde"
  EXPECT_EQ(x.ints["end_positions"][0], 4 + 4);
  // "gh" is cut off: both positions are [CLS]'s; "ab" is kept.
  for (uint64_t step = 0; step < 2; ++step) {
    b.trainBatch(step, x);
    const bool cut = b.trainRecord(step) == 0;
    EXPECT_EQ(x.ints["start_positions"][0], cut ? 0 : 4);
    EXPECT_EQ(x.ints["end_positions"][0], cut ? 0 : 5);
  }
  // Without a max_question, a long question still leaves the context a token.
  ExampleBatcher tight(dir, ExampleTask::Span, 1, 7, 0, 1);
  tight.setMaxQuestion(100);
  tight.spanRow(tight.valShard(), 0, contextStart, kept);
  EXPECT_EQ(contextStart, 2 + 3);
  EXPECT_EQ(kept, 1);
}

TEST(SpanTransform, BuildErrorsNameTheLine) {
  TempDir d;
  auto error = [&](const std::string &line) -> std::string {
    try {
      spanData(d, line + "\n", line + "\n");
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": [2, 4]}")
                .find("t.jsonl:1: span 'answers' is [2, 4); expected 0 <= start < end <= 3 (the characters of 'context')"),
            std::string::npos);
  EXPECT_NE(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": [2, 2]}").find("is [2, 2)"), std::string::npos);
  EXPECT_NE(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": {\"text\": [\"bc\"], \"answer_start\": [0]}}")
                .find("the answer \"bc\" is not at character 0 of 'context' (which has \"ab\" there)"),
            std::string::npos);
  // SQuAD v2: no answer at all builds ([-1, -1]); half of one is refused.
  EXPECT_EQ(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": {\"text\": [], \"answer_start\": []}}"), "");
  EXPECT_NE(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": {\"text\": [\"a\"], \"answer_start\": []}}")
                .find("span 'answers' has 1 answer texts and 0 answer starts"),
            std::string::npos);
  EXPECT_NE(error("{\"question\": \"q\", \"context\": \"abc\", \"answers\": \"b\"}")
                .find("field 'answers' is string, expected [start, end] (character offsets)"),
            std::string::npos);
  EXPECT_THROW(parseFieldList({"answers:span", "context"}), Error);
}

namespace {

/* Builds an (input, target) dataset of `train` and `val` JSON Lines. */
std::string seq2seqData(TempDir &d, const std::string &train, const std::string &val) {
  writeFile(d.file("s.jsonl"), train);
  writeFile(d.file("sv.jsonl"), val);
  JsonlBuildOptions o;
  o.inputs = {d.file("s.jsonl")};
  o.valInputs = {d.file("sv.jsonl")};
  o.outDir = d.file("s2s");
  o.fields = {"input", "target"};
  buildJsonlDataset(o);
  return o.outDir;
}

}  // namespace

/* HF's T5 fine-tuning rows: input EOS pad..., labels target EOS -100...,
   decoder ids the labels shifted right after the start id 0 (pad 0 where the
   labels are -100); both sides cut to their row less the EOS. */
TEST(Seq2SeqTransform, RowsAreInputEosAndShiftedTargets) {
  TempDir d;
  const std::string dir = seq2seqData(d, "{\"input\": \"abc\", \"target\": \"xy\"}\n",
                                      "{\"input\": \"abcdefg\", \"target\": \"uvwxyz\"}\n");
  const int64_t seq = 6, tseq = 5;
  ExampleBatcher b(dir, ExampleTask::Seq2Seq, 2, seq, 0, 1);
  b.setTargetSeq(tseq);
  ExampleBatch x;
  b.trainBatch(0, x);  // one record: both rows are it
  EXPECT_EQ(row(x.ints["ids"], 0, seq), (std::vector<int32_t>{'a', 'b', 'c', 1, 0, 0}));
  EXPECT_EQ(std::vector<float>(x.floats["attention_mask"].begin(), x.floats["attention_mask"].begin() + seq),
            (std::vector<float>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(row(x.ints["labels"], 0, tseq), (std::vector<int32_t>{'x', 'y', 1, -100, -100}));
  EXPECT_EQ(row(x.ints["decoder_ids"], 0, tseq), (std::vector<int32_t>{0, 'x', 'y', 1, 0}));
  EXPECT_EQ(x.ints["labels"].size(), (size_t)(2 * tseq));
  // Validation: cut to seq - 1 and tseq - 1 tokens, then EOS; the row past
  // the last record repeats record 0 with every label -100.
  b.valBatch(0, x);
  EXPECT_EQ(row(x.ints["ids"], 0, seq), (std::vector<int32_t>{'a', 'b', 'c', 'd', 'e', 1}));
  EXPECT_EQ(row(x.ints["labels"], 0, tseq), (std::vector<int32_t>{'u', 'v', 'w', 'x', 1}));
  EXPECT_EQ(row(x.ints["decoder_ids"], 0, tseq), (std::vector<int32_t>{0, 'u', 'v', 'w', 'x'}));
  EXPECT_EQ(row(x.ints["labels"], 1, tseq), (std::vector<int32_t>(tseq, -100)));
  EXPECT_EQ(row(x.ints["decoder_ids"], 1, tseq), (std::vector<int32_t>{0, 'u', 'v', 'w', 'x'}));
}

TEST(Seq2SeqTransform, RefusesT5sPadAndEosBytesAndOneText) {
  TempDir d;
  const std::string dir = seq2seqData(d, "{\"input\": \"a\\u0001b\", \"target\": \"xy\"}\n",
                                      "{\"input\": \"a\", \"target\": \"x\"}\n");
  try {
    ExampleBatcher b(dir, ExampleTask::Seq2Seq, 1, 8, 0, 1);
    FAIL() << "byte 1 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("record 0: 'input' holds byte 1, which is T5's EOS id"), std::string::npos)
        << e.what();
  }
  writeFile(d.file("one.jsonl"), "{\"text\": \"abc\"}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("one.jsonl")};
  o.outDir = d.file("one");
  o.fields = {"text"};
  o.valFraction = 0;
  buildJsonlDataset(o);
  try {
    ExampleBatcher b(o.outDir, ExampleTask::Seq2Seq, 1, 8, 0, 1);
    FAIL() << "one text field accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("seq2seq reads input, target"), std::string::npos) << e.what();
  }
}

TEST(SpanTransform, DocStrideSplitsALongContextIntoOverlappingWindows) {
  TempDir d;
  // Context "abcdefghijkl" (12 tokens); rows of 10 with question "qq": room 5.
  // doc_stride 2 (the overlap): step 3, windows [0, 5) [3, 8) [6, 11) [9, 12),
  // as HF's tokenizer(..., stride = 2, return_overflowing_tokens = True).
  const std::string dir = spanData(d, "{\"question\": \"qq\", \"context\": \"abcdefghijkl\", \"answers\": [6, 8]}\n",
                                   "{\"question\": \"qq\", \"context\": \"abcdefghijkl\", \"answers\": [6, 8]}\n"
                                   "{\"question\": \"qq\", \"context\": \"xyz\", \"answers\": [0, 1]}\n");
  const int64_t seq = 10;
  ExampleBatcher b(dir, ExampleTask::Span, 5, seq, 0, 1);
  b.setMaxQuestion(2);
  b.setDocStride(2);
  EXPECT_EQ(b.spanWindows(b.valShard(), 0), 4);
  EXPECT_EQ(b.spanWindows(b.valShard(), 1), 1);
  ASSERT_EQ(b.valUnits(), 5u);
  EXPECT_EQ(b.trainUnits(), 4u);
  EXPECT_EQ(b.valBatches(), 1u);
  ExampleBatch x;
  b.valBatch(0, x);
  const std::vector<std::string> windows = {"abcde", "defgh", "ghijk", "jkl"};
  for (int64_t w = 0; w < 4; ++w) {
    std::vector<int32_t> want = {257, 'q', 'q', 258};
    for (char c : windows[(size_t)w]) want.push_back(c);
    want.push_back(258);
    while ((int64_t)want.size() < seq) want.push_back(256);
    EXPECT_EQ(row(x.ints["ids"], w, seq), want) << w;
  }
  // "gh" (tokens 6, 7) is wholly in windows 1 ([3, 8): row positions 4 + 3, 4 + 4)
  // and 2 ([6, 11): 4 + 0, 4 + 1); windows 0 and 3 point at [CLS].
  EXPECT_EQ(x.ints["start_positions"], (std::vector<int32_t>{0, 7, 4, 0, 4}));
  EXPECT_EQ(x.ints["end_positions"], (std::vector<int32_t>{0, 8, 5, 0, 4}));
  // A training epoch passes over the 4 windows of its one record.
  std::vector<uint64_t> seen;
  for (uint64_t g = 0; g < 4; ++g) seen.push_back(b.trainRecord(g));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3}));
  // A stride that leaves no new context is refused, naming the record.
  ExampleBatcher wide(dir, ExampleTask::Span, 1, seq, 0, 1);
  wide.setMaxQuestion(2);
  try {
    wide.setDocStride(5);
    ADD_FAILURE() << "doc_stride 5 >= room 5 was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("record 0: doc_stride 5 leaves its windows no new context"),
              std::string::npos)
        << e.what();
  }
}
