/* Tests the "mlm" batch transform: rows are [CLS] A [SEP] (B [SEP]) [PAD]...
   with segments and attention mask to match, about 15 % of the text selected
   with 80/10/10 replacement, specials never selected, labels -100 elsewhere,
   sentence pairs half random; and that a batch is a pure function of (seed,
   sample index): reproducible, fresh per step (dynamic masking), seed-dependent. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/stat.h>

#include "MaskedLmData.h"
#include "TempDir.h"
#include "runtime/data/batches.h"
#include "runtime/data/mlm.h"
#include "runtime/data/shard.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

using namespace lmrt;
using namespace lmrt::data;
using lmrt_test::errorOf;
using lmrt_test::makeData;
using lmrt_test::TempDir;

TEST(Mlm, RowLayoutSegmentsAndMask) {
  TempDir d;
  std::string dir = makeData(d, 5000);
  MlmOptions o;
  o.nsp = true;
  o.shortSeqProb = 0.5;
  const int64_t rows = 64, seq = 32;
  MlmBatcher b(dir, rows, seq, o, 7);
  MlmBatch x;
  b.trainBatch(0, x);
  int padded = 0, random = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t *ids = &x.ids[r * seq], *seg = &x.segments[r * seq];
    const uint8_t *att = &x.attention[r * seq];
    EXPECT_EQ(ids[0], kCls);
    int64_t len = 0;
    while (len < seq && att[len]) ++len;
    for (int64_t i = len; i < seq; ++i) {
      EXPECT_EQ(att[i], 0);
      EXPECT_EQ(ids[i], kPad);
      EXPECT_EQ(seg[i], 0);
      EXPECT_EQ(x.labels[r * seq + i], kIgnoreIndex);
    }
    padded += len < seq;
    EXPECT_EQ(ids[len - 1], kSep);
    int seps = 0;
    for (int64_t i = 0; i < len; ++i) seps += ids[i] == kSep;
    EXPECT_EQ(seps, 2);  // [MASK] and random replacements are never [SEP]
    // segment 0 up to the first [SEP], then 1
    int64_t firstSep = 1;
    while (ids[firstSep] != kSep) ++firstSep;
    for (int64_t i = 0; i < len; ++i) EXPECT_EQ(seg[i], i <= firstSep ? 0 : 1) << "row " << r << " pos " << i;
    EXPECT_TRUE(x.nsp[r] == 0 || x.nsp[r] == 1);
    random += x.nsp[r];
  }
  EXPECT_GT(padded, 16);  // short_seq_prob 0.5 of 64 rows
  EXPECT_LT(padded, 48);
  EXPECT_GT(random, 16);  // half the pairs random
  EXPECT_LT(random, 48);
}

TEST(Mlm, SelectsFifteenPercentWith80_10_10AndNeverSpecials) {
  TempDir d;
  std::string dir = makeData(d, 20000);
  MlmOptions o;  // mask_prob 0.15, no nsp, full rows
  const int64_t rows = 32, seq = 128;
  MlmBatcher b(dir, rows, seq, o, 11);
  int64_t text = 0, selected = 0, masked = 0, kept = 0, replaced = 0;
  for (uint64_t step = 0; step < 20; ++step) {
    MlmBatch x;
    b.trainBatch(step, x);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(x.ids[r * seq], kCls);
      EXPECT_EQ(x.ids[r * seq + seq - 1], kSep);  // full-length rows: no padding
      EXPECT_EQ(x.labels[r * seq], kIgnoreIndex);
      EXPECT_EQ(x.labels[r * seq + seq - 1], kIgnoreIndex);
      for (int64_t i = 1; i < seq - 1; ++i) {
        int32_t id = x.ids[r * seq + i], label = x.labels[r * seq + i];
        ++text;
        if (label == kIgnoreIndex) {
          EXPECT_LT(id, kFirstSpecial);
          continue;
        }
        ASSERT_GE(label, 0);
        ASSERT_LT(label, kFirstSpecial);
        ++selected;
        if (id == kMask) ++masked;
        else if (id == label) ++kept;
        else {
          ++replaced;
          EXPECT_LT(id, kFirstSpecial);
        }
      }
    }
  }
  double p = double(selected) / text;
  EXPECT_NEAR(p, 0.15, 0.01) << selected << " of " << text;
  EXPECT_NEAR(double(masked) / selected, 0.8, 0.02);
  // a random byte equals the original 1/256 of the time: counted as kept
  EXPECT_NEAR(double(replaced) / selected, 0.1 * 255 / 256, 0.015);
  EXPECT_NEAR(double(kept) / selected, 0.1 + 0.1 / 256, 0.015);
}

TEST(Mlm, NextSegmentFollowsAWhenNotRandom) {
  TempDir d;
  std::string dir = makeData(d, 5000);
  MlmOptions o;
  o.nsp = true;
  o.maskProb = 0;  // nothing corrupted: the text is visible
  MlmBatcher b(dir, 32, 40, o, 3);
  MlmBatch x;
  b.trainBatch(5, x);
  int checked = 0;
  for (int64_t r = 0; r < 32; ++r) {
    const int32_t *ids = &x.ids[r * 40];
    if (x.nsp[r] != 0) continue;
    // A then B is one contiguous stretch of the shard: find A's start.
    int64_t sep = 1;
    while (ids[sep] != kSep) ++sep;
    std::vector<int32_t> text(ids + 1, ids + sep);
    for (int64_t i = sep + 1; ids[i] != kSep; ++i) text.push_back(ids[i]);
    bool found = false;
    for (uint64_t s = 0; s + text.size() <= b.train().size() && !found; ++s) {
      bool all = true;
      for (size_t k = 0; k < text.size() && all; ++k) all = (int32_t)b.train().token(s + k) == text[k];
      found = all;
    }
    EXPECT_TRUE(found) << "row " << r;
    ++checked;
  }
  EXPECT_GT(checked, 4);
}

// With nsp a row stays inside one document: documents of 20 tokens, each token
// its document's number, give rows of one number, 20 long and padded after.
TEST(Mlm, PairsStayInsideADocument) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t;
  std::vector<uint64_t> starts;
  for (uint32_t doc = 0; doc < 100; ++doc) {
    starts.push_back(t.size());
    for (int i = 0; i < 20; ++i) t.push_back(doc);
  }
  writeShard(dir + "/train.bin", t, starts);
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  MlmOptions o;
  o.nsp = true;
  o.maskProb = 0;
  MlmBatcher b(dir, 32, 40, o, 9);
  MlmBatch x;
  b.trainBatch(0, x);
  for (int64_t r = 0; r < 32; ++r) {
    const int32_t *ids = &x.ids[r * 40];
    int64_t len = 0;
    while (len < 40 && x.attention[r * 40 + len]) ++len;
    EXPECT_EQ(len, 23) << "row " << r;  // [CLS] 20 tokens [SEP] [SEP]
    if (x.nsp[r] != 0) continue;
    for (int64_t i = 1; i < len; ++i)
      if (ids[i] != kSep) EXPECT_EQ(ids[i], ids[1]) << "row " << r << " pos " << i;
  }
}

// A split of several LMC shards (train_000.bin, train_001.bin): each file's
// documents, at its place in the stream, bound the pairs as in one shard.
TEST(Mlm, PairsStayInsideADocumentAcrossFiles) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  for (uint32_t f = 0; f < 2; ++f) {
    std::vector<uint32_t> t;
    std::vector<uint64_t> starts;
    for (uint32_t doc = 0; doc < 50; ++doc) {
      starts.push_back(t.size());
      for (int i = 0; i < 20; ++i) t.push_back(f * 50 + doc);
    }
    writeShard(dir + "/train_00" + std::to_string(f) + ".bin", t, starts);
  }
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  MlmOptions o;
  o.nsp = true;
  o.maskProb = 0;
  MlmBatcher b(dir, 64, 40, o, 9);
  EXPECT_EQ(b.train().files().size(), 2u);
  MlmBatch x;
  b.trainBatch(0, x);
  bool second = false;
  for (int64_t r = 0; r < 64; ++r) {
    const int32_t *ids = &x.ids[r * 40];
    int64_t len = 0;
    while (len < 40 && x.attention[r * 40 + len]) ++len;
    EXPECT_EQ(len, 23) << "row " << r;
    second |= ids[1] >= 50;
    if (x.nsp[r] != 0) continue;
    for (int64_t i = 1; i < len; ++i)
      if (ids[i] != kSep) EXPECT_EQ(ids[i], ids[1]) << "row " << r << " pos " << i;
  }
  EXPECT_TRUE(second);  // rows come from the second file too
}

/* An llm.c GPT-2 shard of `tokens` (header: magic, version 1, count). */
static void writeLlmc(const std::string &path, const std::vector<uint16_t> &tokens) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = (int32_t)tokens.size();
  FILE *f = std::fopen(path.c_str(), "wb");
  std::fwrite(header.data(), 4, header.size(), f);
  std::fwrite(tokens.data(), 2, tokens.size(), f);
  std::fclose(f);
}

// Formats without document starts (llm.c, Megatron) feed mlm without nsp; with
// nsp, which needs documents, they are refused by name.
TEST(Mlm, OtherFormatsWithoutNspOnly) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint16_t> t(3000);
  for (size_t i = 0; i < t.size(); ++i) t[i] = (uint16_t)((i * 31) % 256);
  writeLlmc(dir + "/tiny_train.bin", t);
  writeLlmc(dir + "/tiny_val.bin", std::vector<uint16_t>(200, 7));
  MlmBatcher b(dir, 4, 32, MlmOptions{}, 3);
  MlmBatch x;
  b.trainBatch(0, x);
  EXPECT_EQ(x.ids[0], kCls);
  EXPECT_LT(x.ids[1], kFirstSpecial);
  MlmOptions nsp;
  nsp.nsp = true;
  std::string e = errorOf([&] { MlmBatcher(dir, 4, 32, nsp, 3); });
  EXPECT_NE(e.find("tiny_train.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("needs the document boundaries of LMC shards"), std::string::npos) << e;
}

TEST(Mlm, BatchesArePureFunctionsOfSeedAndSampleIndex) {
  TempDir d;
  std::string dir = makeData(d, 5000);
  MlmOptions o;
  o.nsp = true;
  MlmBatcher b(dir, 8, 32, o, 5), again(dir, 8, 32, o, 5), other(dir, 8, 32, o, 6);
  MlmBatch x, y, z, w;
  b.trainBatch(3, x);
  again.trainBatch(3, y);
  EXPECT_EQ(x.ids, y.ids);
  EXPECT_EQ(x.labels, y.labels);
  EXPECT_EQ(x.nsp, y.nsp);
  b.trainBatch(4, z);  // another step: other samples, other masks
  EXPECT_NE(x.labels, z.labels);
  other.trainBatch(3, w);
  EXPECT_NE(x.ids, w.ids);
  // Validation batches are their own, fixed per index.
  MlmBatch v1, v2;
  b.valBatch(0, v1);
  again.valBatch(0, v2);
  EXPECT_EQ(v1.ids, v2.ids);
  EXPECT_NE(v1.ids, x.ids);
  // Row r of batch i is the sample (i, r): fillRow of that sample alone agrees,
  // and so do micro-batches of its rows (firstRow).
  MlmBatch one = x;
  b.fillRow(b.train(), false, b.sampleKey(false, 3, 2), 2, one);
  EXPECT_EQ(one.ids, x.ids);
  MlmBatcher half(dir, 4, 32, o, 5);
  MlmBatch lo, hi;
  half.trainBatch(3, lo, 0);
  half.trainBatch(3, hi, 4);
  lo.ids.insert(lo.ids.end(), hi.ids.begin(), hi.ids.end());
  lo.labels.insert(lo.labels.end(), hi.labels.begin(), hi.labels.end());
  EXPECT_EQ(lo.ids, x.ids);
  EXPECT_EQ(lo.labels, x.labels);
}

TEST(Mlm, ErrorsNameTheProblem) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  writeShard(dir + "/train.bin", std::vector<uint32_t>(100, 300), {0});
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  EXPECT_NE(errorOf([&] { MlmBatcher(dir, 2, 16, MlmOptions{}, 1); }).find("token 300 at offset 0 is not a byte"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { MlmBatcher(d.file("none"), 2, 16, MlmOptions{}, 1); }).find("does not exist"),
            std::string::npos);
  MlmOptions nsp;
  nsp.nsp = true;
  EXPECT_NE(errorOf([&] { MlmBatcher(dir, 2, 4, nsp, 1); }).find("seq >= 5"), std::string::npos);
}

/* The random bits of lm.sample (random_bits) are keyed like the rest, by (seed,
   sample): the same (seed, step) gives the same bits whatever the micro-batching,
   another step, another seed or validation other bits; and they look uniform
   (every bit position set about half the time over the batch). */
TEST(Mlm, RandomBitsAreKeyedBySeedStepAndSample) {
  TempDir d;
  std::string dir = makeData(d, 5000);
  MlmOptions o;
  MlmBatcher b(dir, 8, 32, o, 5), again(dir, 8, 32, o, 5), other(dir, 8, 32, o, 6), half(dir, 4, 32, o, 5);
  MlmBatch x, y, z, w, lo, hi, v;
  b.trainBatch(3, x);
  again.trainBatch(3, y);
  ASSERT_EQ(x.bits.size(), 8u * 32u);
  EXPECT_EQ(x.bits, y.bits);
  b.trainBatch(4, z);
  EXPECT_NE(x.bits, z.bits);
  other.trainBatch(3, w);
  EXPECT_NE(x.bits, w.bits);
  b.valBatch(0, v);
  EXPECT_NE(x.bits, v.bits);
  half.trainBatch(3, lo, 0);
  half.trainBatch(3, hi, 4);
  lo.bits.insert(lo.bits.end(), hi.bits.begin(), hi.bits.end());
  EXPECT_EQ(lo.bits, x.bits);
  // 256 words: each of the 32 bit positions is set with probability 1/2, so its
  // count is 128 +- 8 (one sigma); 128 +- 64 is 8 sigma, fixed inputs: no flakes.
  for (int bit = 0; bit < 32; ++bit) {
    int set = 0;
    for (int32_t word : x.bits) set += ((uint32_t)word >> bit) & 1u;
    EXPECT_GT(set, 64) << "bit " << bit;
    EXPECT_LT(set, 192) << "bit " << bit;
  }
}

// Sentence-order prediction (ALBERT): a row is [CLS] X [SEP] Y [SEP] where A, B
// are consecutive text of the stream; label 0 keeps them in order (X = A, Y = B),
// label 1 swaps them (X = B, Y = A), about half the rows each. Segment 1 is Y.
TEST(Mlm, SentenceOrderPairsAreConsecutiveTextSwappedHalfTheTime) {
  TempDir d;
  const uint32_t n = 20000;
  std::string dir = makeData(d, n);
  std::vector<int32_t> text(n);
  for (uint32_t i = 0; i < n; ++i) text[i] = (int32_t)((i * 2654435761u >> 7) % 256);
  MlmOptions o;
  o.sop = true;
  o.maskProb = 0;
  const int64_t rows = 256, seq = 40;
  MlmBatcher b(dir, rows, seq, o, 11);
  MlmBatch x;
  b.trainBatch(0, x);
  int swapped = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t *ids = &x.ids[r * seq];
    const int32_t *seg = &x.segments[r * seq];
    ASSERT_EQ(ids[0], kCls);
    ASSERT_TRUE(x.sop[r] == 0 || x.sop[r] == 1);
    EXPECT_EQ(x.nsp[r], 0);
    std::vector<int32_t> first, second;
    int64_t i = 1;
    for (; ids[i] != kSep; ++i) first.push_back(ids[i]);
    for (++i; ids[i] != kSep; ++i) {
      EXPECT_EQ(seg[i], 1) << "row " << r;
      second.push_back(ids[i]);
    }
    EXPECT_EQ(i, seq - 1) << "row " << r << ": a full row";
    for (int64_t k = 0; k <= (int64_t)first.size() + 1; ++k) EXPECT_EQ(seg[k], 0) << "row " << r;
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(second.empty());
    // In document order the text is A then B: first + second if kept, second + first if swapped.
    std::vector<int32_t> a = x.sop[r] ? second : first, bb = x.sop[r] ? first : second;
    std::vector<int32_t> joined = a;
    joined.insert(joined.end(), bb.begin(), bb.end());
    EXPECT_NE(std::search(text.begin(), text.end(), joined.begin(), joined.end()), text.end())
        << "row " << r << " (sop " << x.sop[r] << ") is not consecutive text";
    swapped += x.sop[r];
  }
  EXPECT_GT(swapped, 96);
  EXPECT_LT(swapped, 160);
  // The batch is a function of (seed, sample): the same again, another seed another one.
  MlmBatch y;
  b.trainBatch(0, y);
  EXPECT_EQ(x.ids, y.ids);
  EXPECT_EQ(x.sop, y.sop);
  MlmBatcher other(dir, rows, seq, o, 12);
  other.trainBatch(0, y);
  EXPECT_NE(x.sop, y.sop);
}

// With sop, as with nsp, both segments come from one document.
TEST(Mlm, SentenceOrderPairsStayInsideADocument) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t;
  std::vector<uint64_t> starts;
  for (uint32_t doc = 0; doc < 100; ++doc) {
    starts.push_back(t.size());
    for (int i = 0; i < 20; ++i) t.push_back(doc);
  }
  writeShard(dir + "/train.bin", t, starts);
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  MlmOptions o;
  o.sop = true;
  o.maskProb = 0;
  MlmBatcher b(dir, 32, 40, o, 9);
  MlmBatch x;
  b.trainBatch(0, x);
  for (int64_t r = 0; r < 32; ++r) {
    const int32_t *ids = &x.ids[r * 40];
    int64_t len = 0;
    while (len < 40 && x.attention[r * 40 + len]) ++len;
    EXPECT_EQ(len, 23) << "row " << r;  // [CLS] 20 tokens [SEP] [SEP]
    for (int64_t i = 1; i < len; ++i)
      if (ids[i] != kSep) EXPECT_EQ(ids[i], ids[1]) << "row " << r << " pos " << i;
  }
}

TEST(Mlm, SentenceOrderAndNextSentenceExcludeEachOther) {
  TempDir d;
  std::string dir = makeData(d, 2000);
  MlmOptions both;
  both.nsp = both.sop = true;
  EXPECT_NE(errorOf([&] { MlmBatcher(dir, 2, 32, both, 1); }).find("nsp or sop, not both"), std::string::npos);
  MlmOptions sop;
  sop.sop = true;
  EXPECT_NE(errorOf([&] { MlmBatcher(dir, 2, 4, sop, 1); }).find("seq >= 5"), std::string::npos);
}
