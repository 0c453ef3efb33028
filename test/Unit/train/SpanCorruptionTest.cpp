/* Tests the "span_corruption" batch transform (T5): the lengths of HF's
   compute_input_and_target_lengths (its published 512 -> 568 raw tokens and
   114 targets, the density-0.5 adjustment, rounding half to even as Python's
   round), the noise mask's counts and alternation, the cut points' uniformity
   (each noise span's mean length noise / spans, within 6 standard errors: the
   draws are a fixed function of the seed), the rows' layout (sentinels
   counting down from vocab - 1, EOS, the decoder ids shifted right from 0), and
   that a batch is a pure function of (seed, step, row): micro-batches give the
   rows of the whole batch. The rows against a port of HF's functions:
   test/E2E/t5-train.test. */
#include <gtest/gtest.h>

#include <cmath>

#include "MaskedLmData.h"
#include "TempDir.h"
#include "runtime/data/span_corruption.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

using namespace lmrt;
using namespace lmrt::data;
using lmrt_test::errorOf;
using lmrt_test::makeData;
using lmrt_test::TempDir;

TEST(SpanCorruption, LengthsAreHfs) {
  // run_t5_mlm_flax.py's defaults: max_seq_length 512 -> expanded 568, targets 114.
  SpanCorruptionLengths l = spanCorruptionLengths(512, 0.15, 3.0);
  EXPECT_EQ(l.raw, 568);
  EXPECT_EQ(l.targets, 114);
  l = spanCorruptionLengths(64, 0.15, 3.0);
  EXPECT_EQ(l.raw, 70);
  EXPECT_EQ(l.targets, 14);
  // Density 0.5: HF shortens the raw text by one so targets are not longer.
  l = spanCorruptionLengths(32, 0.5, 3.0);
  EXPECT_LE(l.targets, 32);
  EXPECT_EQ(roundHalfEven(10.5), 10);
  EXPECT_EQ(roundHalfEven(11.5), 12);
  EXPECT_EQ(roundHalfEven(2.4), 2);
  EXPECT_EQ(roundHalfEven(2.6), 3);
  SpanNoise n = spanNoise(568, 0.15, 3.0);
  EXPECT_EQ(n.noise, 85);
  EXPECT_EQ(n.spans, 28);
}

TEST(SpanCorruption, MaskAlternatesWithUniformCuts) {
  SpanCorruptionOptions o;
  const int64_t length = 568;
  const SpanNoise n = spanNoise(length, o.noiseDensity, o.meanSpanLength);
  const int rows = 4000;
  std::vector<double> sum(n.spans, 0), sumSq(n.spans, 0);
  for (int r = 0; r < rows; ++r) {
    std::vector<uint8_t> m = spanNoiseMask(11, RngStream::TrainCorrupt, (uint64_t)r, length, o);
    ASSERT_EQ((int64_t)m.size(), length);
    int64_t noise = 0, spans = 0, run = 0;
    EXPECT_EQ(m[0], 0);   // a kept run first
    EXPECT_EQ(m.back(), 1);  // a noise span last
    for (int64_t i = 0; i < length; ++i) {
      noise += m[i];
      if (m[i] && (i == 0 || !m[i - 1])) {
        run = 0;
        ++spans;
      }
      if (m[i]) ++run;
      if (m[i] && (i + 1 == length || !m[i + 1])) {
        sum[spans - 1] += run;
        sumSq[spans - 1] += (double)run * run;
      }
    }
    EXPECT_EQ(noise, n.noise);
    EXPECT_EQ(spans, n.spans);
  }
  const double mean = (double)n.noise / n.spans;
  for (int64_t s = 0; s < n.spans; ++s) {
    double m = sum[s] / rows, sd = std::sqrt(sumSq[s] / rows - m * m);
    EXPECT_NEAR(m, mean, 6 * sd / std::sqrt((double)rows)) << "noise span " << s;
  }
}

TEST(SpanCorruption, RowsAndKeys) {
  TempDir d;
  std::string dir = makeData(d, 20000);
  SpanCorruptionOptions o;
  const int64_t vocab = 300, seq = 64;
  SpanCorruptionBatcher b(dir, 4, seq, vocab, o, 9);
  ASSERT_EQ(b.rawLength(), 70);
  ASSERT_EQ(b.targetSeq(), 14);
  SpanCorruptionBatch x;
  b.trainBatch(3, x);
  ASSERT_EQ(x.ids.size(), 4u * 64);
  ASSERT_EQ(x.labels.size(), 4u * 14);
  for (int r = 0; r < 4; ++r) {
    const int32_t *ids = x.ids.data() + r * 64, *labels = x.labels.data() + r * 14,
                  *dec = x.decoder.data() + r * 14;
    EXPECT_EQ(ids[63], kT5Eos);
    EXPECT_EQ(labels[13], kT5Eos);
    EXPECT_EQ(labels[0], vocab - 1);  // s_0 opens the targets
    EXPECT_EQ(dec[0], kT5Pad);
    for (int t = 1; t < 14; ++t) EXPECT_EQ(dec[t], labels[t - 1]);
    int32_t next = vocab - 1;  // the inputs' sentinels in order, counting down
    for (int t = 0; t < 63; ++t)
      if (ids[t] >= 256) {
        EXPECT_EQ(ids[t], next--);
      }
    EXPECT_EQ(vocab - 1 - next, spanNoise(70, 0.15, 3.0).spans);
  }
  // Rows 2 and 3 of a step are the second micro-batch of two rows.
  SpanCorruptionBatcher half(dir, 2, seq, vocab, o, 9);
  SpanCorruptionBatch y;
  half.trainBatch(3, y, 2);
  EXPECT_TRUE(std::equal(y.ids.begin(), y.ids.end(), x.ids.begin() + 2 * 64));
  EXPECT_TRUE(std::equal(y.labels.begin(), y.labels.end(), x.labels.begin() + 2 * 14));
  SpanCorruptionBatch z;
  b.trainBatch(4, z);
  EXPECT_NE(z.ids, x.ids);
  // A vocabulary without room for the sentinels above the bytes is refused.
  EXPECT_NE(errorOf([&] { SpanCorruptionBatcher(dir, 4, seq, 258, o, 9); }).find("sentinels"), std::string::npos);
}
