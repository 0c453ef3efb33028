/* Tests the packed layout of the classify, regression, tokens and sft
   transforms (pack = true, runtime/data/packing.h): greedy rows in order, each
   example as its padded row has it, doc_ids / positions / cls_index /
   last_index / example_labels / example_targets / example_mask, the padding
   as a document of its own, validation in file order with ignored rows past
   the end, and training rows that are a pure function of (seed, row). */
#include <gtest/gtest.h>

#include "TempDir.h"
#include "base/tensor.h"
#include "runtime/data/example_batches.h"
#include "runtime/data/jsonl_builder.h"
#include "runtime/data/packing.h"

using namespace lmrt;
using lmrt_test::TempDir;
using lmrt_test::writeFile;

namespace {

std::vector<int32_t> part(const std::vector<int32_t> &v, size_t lo, size_t n) {
  return std::vector<int32_t>(v.begin() + lo, v.begin() + lo + n);
}

}  // namespace

TEST(Packing, GreedyRowsInOrderCloseWhenTheNextDoesNotFit) {
  // Lengths 3, 4, 2, 6, 1 in rows of 6: [3] (3 + 4 > 6), [4, 2], [6], [1].
  const std::vector<int64_t> len = {3, 4, 2, 6, 1};
  PackedRows p = packRows({0, 1, 2, 3, 4}, 6, [&](uint64_t r) { return len[r]; });
  EXPECT_EQ(p.rows(), 4u);
  EXPECT_EQ(p.start, (std::vector<uint64_t>{0, 1, 3, 4, 5}));
  EXPECT_EQ(p.tokens, 16u);
  PackingEfficiency e = packingEfficiency(p, 6);
  EXPECT_DOUBLE_EQ(e.padded, 16.0 / 30.0);
  EXPECT_DOUBLE_EQ(e.packed, 16.0 / 24.0);
  EXPECT_THROW(packRows({0}, 2, [](uint64_t) { return 3; }), Error);
}

TEST(Packing, ClassifyRowsHoldEachExampleAsPaddedWithItsIdsPositionsAndClsIndex) {
  TempDir d;
  writeFile(d.file("t.jsonl"), "{\"s\": \"abcdefghij\", \"y\": 0}\n");
  // Validation: "a" (3 tokens), "bb" (4), "ccccccc" (9): rows of 8 are
  // [a, bb] and [ccccccc cut to 6 bytes].
  writeFile(d.file("v.jsonl"),
            "{\"s\": \"a\", \"y\": 2}\n{\"s\": \"bb\", \"y\": 1}\n{\"s\": \"ccccccc\", \"y\": 0}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("v.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"s", "y:label"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Classify, 2, 8, 3, 1);
  b.setPack(true);
  EXPECT_EQ(b.valRows().rows(), 2u);
  EXPECT_EQ(b.valBatches(), 1u);
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints.count("labels"), 0u);
  EXPECT_EQ(x.ints.count("last"), 0u);
  const std::vector<int32_t> &ids = x.ints["ids"];
  EXPECT_EQ(part(ids, 0, 8), (std::vector<int32_t>{257, 'a', 258, 257, 'b', 'b', 258, 256}));
  EXPECT_EQ(part(x.ints["doc_ids"], 0, 8), (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 2}));
  EXPECT_EQ(part(x.ints["positions"], 0, 8), (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 0}));
  EXPECT_EQ(part(x.ints["cls_index"], 0, 3), (std::vector<int32_t>{0, 3, 0}));
  EXPECT_EQ(part(x.ints["last_index"], 0, 3), (std::vector<int32_t>{2, 6, 0}));
  EXPECT_EQ(part(x.ints["example_labels"], 0, 3), (std::vector<int32_t>{2, 1, -100}));
  // The long example fills its row alone, cut as its padded row is.
  EXPECT_EQ(part(ids, 8, 8), (std::vector<int32_t>{257, 'c', 'c', 'c', 'c', 'c', 'c', 258}));
  EXPECT_EQ(part(x.ints["doc_ids"], 8, 8), (std::vector<int32_t>(8, 0)));
  EXPECT_EQ(part(x.ints["cls_index"], 8, 2), (std::vector<int32_t>{8, 8}));
  EXPECT_EQ(part(x.ints["last_index"], 8, 2), (std::vector<int32_t>{15, 8}));
  EXPECT_EQ(part(x.ints["example_labels"], 8, 2), (std::vector<int32_t>{0, -100}));
  // Rows past the last packed row repeat record 0 with no label.
  ExampleBatcher wide(o.outDir, ExampleTask::Classify, 3, 8, 3, 1);
  wide.setPack(true);
  wide.valBatch(0, x);
  EXPECT_EQ(part(x.ints["ids"], 16, 4), (std::vector<int32_t>{257, 'a', 258, 256}));
  EXPECT_EQ(part(x.ints["example_labels"], 16, 2), (std::vector<int32_t>{-100, -100}));
}

TEST(Packing, SftLabelsEndAtEachExample) {
  TempDir d;
  writeFile(d.file("t.jsonl"), "{\"p\": \"a\", \"r\": \"b\"}\n{\"p\": \"cd\", \"r\": \"e\"}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"p", "r"};
  o.valFraction = 0;
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Sft, 1, 8, 0, 1);
  b.setPack(true);
  EXPECT_EQ(b.trainRowsOfEpochs(3), 3u);  // 3 + 4 tokens: one row an epoch
  ExampleBatch x;
  b.trainBatch(0, x);
  EXPECT_EQ(x.ints.count("last"), 0u);
  // Either order: "a b [SEP]" then "c d e [SEP]", or the reverse.
  const std::vector<int32_t> &ids = x.ints["ids"], &labels = x.ints["labels"];
  const bool abFirst = ids[0] == 'a';
  const std::vector<int32_t> wantIds =
      abFirst ? std::vector<int32_t>{'a', 'b', 258, 'c', 'd', 'e', 258, 256}
              : std::vector<int32_t>{'c', 'd', 'e', 258, 'a', 'b', 258, 256};
  const std::vector<int32_t> wantLabels =
      abFirst ? std::vector<int32_t>{'b', 258, -100, -100, 'e', 258, -100, -100}
              : std::vector<int32_t>{-100, 'e', 258, -100, 'b', 258, -100, -100};
  EXPECT_EQ(ids, wantIds);
  EXPECT_EQ(labels, wantLabels);
  EXPECT_EQ(x.ints["doc_ids"], abFirst ? (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 2})
                                       : (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(x.ints["positions"], abFirst ? (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 0})
                                         : (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 0}));
  // Row g is a pure function of (seed, g): a fresh batcher asked for step 2 first agrees.
  ExampleBatcher c(o.outDir, ExampleTask::Sft, 1, 8, 0, 1), again(o.outDir, ExampleTask::Sft, 1, 8, 0, 1);
  c.setPack(true);
  again.setPack(true);
  ExampleBatch y, z;
  c.trainBatch(2, y);
  for (uint64_t s = 0; s <= 2; ++s) again.trainBatch(s, z);
  EXPECT_EQ(y.ints["ids"], z.ints["ids"]);
  EXPECT_THROW(ExampleBatcher(o.outDir, ExampleTask::Preference, 1, 8, 0, 1), Error);  // needs three texts
}

TEST(Packing, RegressionSlotsHoldTargetsAndAMaskOfTheExamples) {
  TempDir d;
  writeFile(d.file("t.jsonl"), "{\"s\": \"abcdefghij\", \"y\": 0.5}\n");
  writeFile(d.file("v.jsonl"), "{\"s\": \"a\", \"y\": 2.5}\n{\"s\": \"bb\", \"y\": -1.0}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("v.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"s", "y:target"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Regression, 2, 8, 0, 1);
  b.setPack(true);
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.floats.count("targets"), 0u);
  EXPECT_EQ(x.ints.count("last"), 0u);
  EXPECT_EQ(part(x.ints["cls_index"], 0, 3), (std::vector<int32_t>{0, 3, 0}));
  EXPECT_EQ(part(x.ints["last_index"], 0, 3), (std::vector<int32_t>{2, 6, 0}));
  const std::vector<float> &t = x.floats["example_targets"], &m = x.floats["example_mask"];
  EXPECT_EQ(std::vector<float>(t.begin(), t.begin() + 3), (std::vector<float>{2.5f, -1.0f, 0.0f}));
  EXPECT_EQ(std::vector<float>(m.begin(), m.begin() + 3), (std::vector<float>{1, 1, 0}));
  // The row past the last record repeats record 0 and weighs nothing.
  EXPECT_EQ(part(x.ints["ids"], 8, 3), (std::vector<int32_t>{257, 'a', 258}));
  EXPECT_EQ(std::vector<float>(m.begin() + 8, m.end()), std::vector<float>(8, 0.0f));
}

TEST(Packing, TokensLabelsStayOnTheirExamplesTokens) {
  TempDir d;
  writeFile(d.file("t.jsonl"), "{\"w\": [\"a\"], \"g\": [1]}\n");
  writeFile(d.file("v.jsonl"), "{\"w\": [\"a\"], \"g\": [2]}\n{\"w\": [\"bc\", \"d\"], \"g\": [1, 0]}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("v.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"w:words", "g:tags"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Tokens, 1, 10, 3, 1);
  b.setPack(true);
  EXPECT_EQ(b.valRows().rows(), 1u);  // 3 + 6 tokens
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints["ids"], (std::vector<int32_t>{257, 'a', 258, 257, 'b', 'c', ' ', 'd', 258, 256}));
  EXPECT_EQ(x.ints["labels"], (std::vector<int32_t>{-100, 2, -100, -100, 1, -100, -100, 0, -100, -100}));
  EXPECT_EQ(x.ints["doc_ids"], (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_EQ(x.ints["positions"], (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 4, 5, 0}));
}

TEST(Packing, PreferencePairsShareTheirSlotOnBothSides) {
  TempDir d;
  // Pairs of lengths (chosen, rejected), [SEP] included: (3, 4) and (4, 3): in
  // rows of 8 both fit by their longer example (4 + 4).
  writeFile(d.file("t.jsonl"), "{\"p\": \"a\", \"c\": \"b\", \"r\": \"cd\"}\n{\"p\": \"e\", \"c\": \"fg\", \"r\": \"i\"}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("t.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"p", "c", "r"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Preference, 2, 8, 0, 1);
  b.setPack(true);
  EXPECT_EQ(b.valRows().rows(), 1u);
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints.count("chosen_last"), 0u);
  EXPECT_EQ(part(x.ints["chosen_ids"], 0, 8), (std::vector<int32_t>{'a', 'b', 258, 'e', 'f', 'g', 258, 256}));
  EXPECT_EQ(part(x.ints["rejected_ids"], 0, 8), (std::vector<int32_t>{'a', 'c', 'd', 258, 'e', 'i', 258, 256}));
  EXPECT_EQ(part(x.ints["chosen_labels"], 0, 8), (std::vector<int32_t>{'b', 258, -100, 'f', 'g', 258, -100, -100}));
  EXPECT_EQ(part(x.ints["rejected_labels"], 0, 8), (std::vector<int32_t>{'c', 'd', 258, -100, 'i', 258, -100, -100}));
  EXPECT_EQ(part(x.ints["chosen_doc_ids"], 0, 8), (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 2}));
  EXPECT_EQ(part(x.ints["rejected_doc_ids"], 0, 8), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(part(x.ints["rejected_positions"], 0, 8), (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 0}));
  EXPECT_EQ(part(x.ints["chosen_last_index"], 0, 3), (std::vector<int32_t>{2, 6, 0}));
  EXPECT_EQ(part(x.ints["rejected_last_index"], 0, 3), (std::vector<int32_t>{3, 6, 0}));
  const std::vector<float> &m = x.floats["example_mask"];
  EXPECT_EQ(std::vector<float>(m.begin(), m.begin() + 3), (std::vector<float>{1, 1, 0}));
  // The second row is past the last record: no pair weighs.
  EXPECT_EQ(std::vector<float>(m.begin() + 8, m.end()), std::vector<float>(8, 0.0f));
  EXPECT_EQ(part(x.ints["chosen_labels"], 8, 8), std::vector<int32_t>(8, -100));
}

TEST(Packing, Seq2SeqInputsAndTargetsShareTheirSlot) {
  TempDir d;
  // Inputs of 2 and 1 bytes (3 and 2 with EOS), targets of 1 and 3 (2 and 4):
  // both fit rows of 6 and targets of 6 together.
  writeFile(d.file("t.jsonl"), "{\"i\": \"ab\", \"o\": \"x\"}\n{\"i\": \"c\", \"o\": \"yzw\"}\n");
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("t.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"i", "o"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Seq2Seq, 1, 6, 0, 1);
  b.setTargetSeq(6);
  b.setPack(true);
  EXPECT_EQ(b.valRows().rows(), 1u);
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints["ids"], (std::vector<int32_t>{'a', 'b', 1, 'c', 1, 0}));
  EXPECT_EQ(x.ints["doc_ids"], (std::vector<int32_t>{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(x.ints["labels"], (std::vector<int32_t>{'x', 1, 'y', 'z', 'w', 1}));
  // Each target starts with its own start id 0; no EOS spills into the next.
  EXPECT_EQ(x.ints["decoder_ids"], (std::vector<int32_t>{0, 'x', 0, 'y', 'z', 'w'}));
  EXPECT_EQ(x.ints["decoder_doc_ids"], (std::vector<int32_t>{0, 0, 1, 1, 1, 1}));
  // A target that does not fit closes the row though the input would.
  ExampleBatcher narrow(o.outDir, ExampleTask::Seq2Seq, 1, 6, 0, 1);
  narrow.setTargetSeq(5);
  narrow.setPack(true);
  EXPECT_EQ(narrow.valRows().rows(), 2u);
}

TEST(Packing, SpanExamplesAndWindowsKeepTheirAnswersAtTheirSlots) {
  TempDir d;
  // Rows of 16, questions of at most 4: "ab"/"xyz" is 8 tokens ([CLS] a b
  // [SEP] x y z [SEP], its answer "y" at 5), "c"/"pq" 6 (answer "q" at 4, so
  // 12 in the row after the first), "d" and 14 context bytes 17: cut to 12
  // context bytes, its answer "z" (the 14th) is cut off and points at [CLS].
  const char *records = "{\"q\": \"ab\", \"c\": \"xyz\", \"a\": {\"text\": [\"y\"], \"answer_start\": [1]}}\n"
                        "{\"q\": \"c\", \"c\": \"pq\", \"a\": {\"text\": [\"q\"], \"answer_start\": [1]}}\n"
                        "{\"q\": \"d\", \"c\": \"mnopqrstuvwxyz\", \"a\": {\"text\": [\"z\"], \"answer_start\": [13]}}\n";
  writeFile(d.file("t.jsonl"), records);
  JsonlBuildOptions o;
  o.inputs = {d.file("t.jsonl")};
  o.valInputs = {d.file("t.jsonl")};
  o.outDir = d.file("data");
  o.fields = {"q", "c", "a:span"};
  buildJsonlDataset(o);
  ExampleBatcher b(o.outDir, ExampleTask::Span, 2, 16, 0, 1);
  b.setMaxQuestion(4);
  b.setPack(true);
  EXPECT_EQ(b.valRows().rows(), 2u);
  ExampleBatch x;
  b.valBatch(0, x);
  EXPECT_EQ(x.ints.count("start_positions"), 0u);
  EXPECT_EQ(part(x.ints["ids"], 0, 16), (std::vector<int32_t>{257, 'a', 'b', 258, 'x', 'y', 'z', 258, 257, 'c', 258,
                                                              'p', 'q', 258, 256, 256}));
  EXPECT_EQ(part(x.ints["segments"], 0, 16),
            (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(part(x.ints["doc_ids"], 0, 16), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(part(x.ints["positions"], 8, 8), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(part(x.ints["example_start_positions"], 0, 3), (std::vector<int32_t>{5, 12, -100}));
  EXPECT_EQ(part(x.ints["example_end_positions"], 0, 3), (std::vector<int32_t>{5, 12, -100}));
  EXPECT_EQ(part(x.ints["example_start_positions"], 16, 2), (std::vector<int32_t>{0, -100}));
  // With doc_stride 4 the long context is two windows (context bytes [0, 12)
  // and [8, 14)), each an example; the second holds "z" at 3 + 13 - 8 = 8.
  // Units: 8, 6, 16 and 10 tokens: rows [8, 6], [16], [10].
  b.setDocStride(4);
  EXPECT_EQ(b.valUnits(), 4u);
  EXPECT_EQ(b.valRows().rows(), 3u);
  ExampleBatch y;
  b.valBatch(1, y);
  EXPECT_EQ(part(y.ints["ids"], 0, 11), (std::vector<int32_t>{257, 'd', 258, 'u', 'v', 'w', 'x', 'y', 'z', 258, 256}));
  EXPECT_EQ(part(y.ints["example_start_positions"], 0, 2), (std::vector<int32_t>{8, -100}));
  // The second row of that batch is past the last packed row: nothing scores.
  EXPECT_EQ(part(y.ints["example_start_positions"], 16, 16), std::vector<int32_t>(16, -100));
}
