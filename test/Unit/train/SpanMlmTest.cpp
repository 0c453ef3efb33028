/* Tests the "span_mlm" batch transform (SpanBERT): span lengths follow the
   geometric distribution truncated to [1, max_span] (histograms against it, with
   bounds of 6 standard deviations: the draws are a fixed function of the seed,
   and another seed would fail a bin with probability below 1e-8), exactly
   ceil(mask_prob x n) tokens are masked per row, spans never touch, 80/10/10 is
   chosen per span, the boundary rows and offsets of the span boundary objective
   are right, and a batch is a pure function of (seed, sample index). */
#include <gtest/gtest.h>

#include <cmath>
#include <sys/stat.h>

#include "MaskedLmData.h"
#include "TempDir.h"
#include "runtime/data/batches.h"
#include "runtime/data/shard.h"
#include "runtime/data/span_mlm.h"
#include "runtime/data/transform_spec.h"
#include "runtime/lmrt/tensor.h"

using namespace lmrt;
using namespace lmrt::data;
using lmrt_test::errorOf;
using lmrt_test::makeData;
using lmrt_test::TempDir;

namespace {

/* P(L = l) of the geometric distribution truncated to [1, m]. */
double truncatedGeometric(int64_t l, double p, int64_t m) {
  return p * std::pow(1 - p, (double)(l - 1)) / (1 - std::pow(1 - p, (double)m));
}

/* Every bin of `count` (lengths 1..m, N draws in all) within 6 standard deviations
   of the truncated geometric's expectation. */
void expectHistogram(const std::vector<int64_t> &count, double p, int64_t m) {
  int64_t n = 0;
  for (int64_t c : count) n += c;
  ASSERT_GT(n, 10000);
  EXPECT_EQ(count[0], 0);
  for (int64_t l = 1; l <= m; ++l) {
    double q = truncatedGeometric(l, p, m), mean = n * q, sd = std::sqrt(n * q * (1 - q));
    EXPECT_LE(std::fabs(count[l] - mean), 6 * sd + 1) << "length " << l << ": " << count[l] << " of " << n
                                                      << ", expected " << mean;
  }
}

}  // namespace

TEST(SpanMlm, SpanLengthIsTheTruncatedGeometric) {
  const double p = 0.2;
  const int64_t m = 10, draws = 200000;
  std::vector<int64_t> count(m + 1, 0);
  double sum = 0;
  for (int64_t i = 0; i < draws; ++i) {
    int64_t l = spanLength(counterRandom(11, RngStream::TrainSpans, (uint64_t)i), p, m);
    ASSERT_GE(l, 1);
    ASSERT_LE(l, m);
    ++count[l];
    sum += l;
  }
  expectHistogram(count, p, m);
  // The paper's mean span length, 3.8 (3.797 exactly); sd of the mean ~0.006.
  EXPECT_NEAR(sum / draws, 3.797, 0.04);
  // Edges: p = 1 is always 1, max_span 1 is always 1, the top of the CDF is m.
  EXPECT_EQ(spanLength(~0ull, 1.0, 10), 1);
  EXPECT_EQ(spanLength(~0ull, 0.2, 1), 1);
  EXPECT_EQ(spanLength(~0ull, 0.2, 10), 10);
  EXPECT_EQ(spanLength(0, 0.2, 10), 1);
}

TEST(SpanMlm, BudgetIsCeilOfMaskProb) {
  EXPECT_EQ(spanBudget(0.15, 20), 3);  // 0.15 x 20 rounds to 3.0000000000000004
  EXPECT_EQ(spanBudget(0.15, 62), 10);
  EXPECT_EQ(spanBudget(0.15, 510), 77);
  EXPECT_EQ(spanBudget(0.15, 1), 1);
  EXPECT_EQ(spanBudget(0.0, 100), 0);
}

/* Rows of SpanBERT-base's 510 text tokens: every span but a row's last keeps the
   length it drew (the last is cut to the budget), and the lengths follow the
   truncated geometric; the budget is met exactly; spans never overlap or touch. */
TEST(SpanMlm, SampledSpansFollowTheDistributionAndMeetTheBudget) {
  SpanMlmOptions o;
  const int64_t n = 510, budget = spanBudget(o.maskProb, n);
  std::vector<int64_t> count(o.maxSpan + 1, 0);
  for (uint64_t row = 0; row < 3000; ++row) {
    std::vector<Span> spans = sampleSpans(5, RngStream::TrainSpans, row, n, o);
    ASSERT_FALSE(spans.empty());
    int64_t total = 0;
    std::vector<char> taken(n, 0);
    for (size_t j = 0; j < spans.size(); ++j) {
      const Span &s = spans[j];
      ASSERT_GE(s.start, 0);
      ASSERT_LE(s.start + s.length, n);
      for (int64_t t = std::max<int64_t>(0, s.start - 1); t < std::min(n, s.start + s.length + 1); ++t)
        ASSERT_FALSE(taken[t]) << "row " << row << " span " << j << " touches another";
      for (int64_t t = s.start; t < s.start + s.length; ++t) taken[t] = 1;
      // Whether span j enters the histogram is decided by the spans before it
      // (it cannot be the last, cut one): so its length is an unbiased draw.
      // (Counting every span but the last would favour short ones: rows of
      // short spans have more of them.)
      if (total + o.maxSpan < budget) ++count[s.length];
      total += s.length;
      if (j + 1 < spans.size()) {
        ASSERT_EQ(s.length, s.drawn) << "row " << row << " span " << j << " was shortened";
      } else {
        EXPECT_EQ(s.length, std::min(s.drawn, budget - (total - s.length)));
      }
    }
    EXPECT_EQ(total, budget) << "row " << row;
  }
  expectHistogram(count, o.geometricP, o.maxSpan);
}

// Other parameters: p = 0.5 truncated to [1, 4].
TEST(SpanMlm, OtherGeometricParameters) {
  SpanMlmOptions o;
  o.geometricP = 0.5;
  o.maxSpan = 4;
  std::vector<int64_t> count(5, 0);
  for (uint64_t row = 0; row < 1500; ++row) {
    int64_t total = 0;
    for (const Span &s : sampleSpans(8, RngStream::ValSpans, row, 510, o)) {
      if (total + o.maxSpan < spanBudget(o.maskProb, 510)) ++count[s.length];  // as above
      total += s.length;
    }
  }
  expectHistogram(count, 0.5, 4);
}

// Short rows still meet the budget (one text token: its one span is the whole text).
TEST(SpanMlm, ShortRows) {
  SpanMlmOptions o;
  for (int64_t n = 1; n <= 12; ++n)
    for (uint64_t row = 0; row < 50; ++row) {
      int64_t total = 0;
      for (const Span &s : sampleSpans(2, RngStream::TrainSpans, row, n, o)) total += s.length;
      EXPECT_EQ(total, spanBudget(o.maskProb, n)) << "n " << n << " row " << row;
    }
}

TEST(SpanMlm, RowsSpansAndBoundaries) {
  TempDir d;
  std::string dir = makeData(d, 20000);
  const int64_t rows = 64, seq = 128;
  SpanMlmBatcher b(dir, rows, seq, SpanMlmOptions{}, 7);
  SpanMlmBatch x;
  b.trainBatch(0, x);
  int64_t masks = 0, kept = 0, random = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * seq;
    const int32_t *ids = &x.ids[base], *labels = &x.labels[base];
    EXPECT_EQ(ids[0], kCls);
    EXPECT_EQ(ids[seq - 1], kSep);
    EXPECT_EQ(labels[0], kIgnoreIndex);
    EXPECT_EQ(labels[seq - 1], kIgnoreIndex);
    int64_t masked = 0;
    for (int64_t i = 0; i < seq; ++i) {
      EXPECT_EQ(x.attention[base + i], 1);
      if (labels[i] == kIgnoreIndex) {
        EXPECT_LT(ids[i] == kCls || ids[i] == kSep ? 0 : ids[i], kFirstSpecial) << "row " << r << " pos " << i;
        EXPECT_EQ(x.left[base + i], base + i);
        EXPECT_EQ(x.right[base + i], base + i);
        EXPECT_EQ(x.pos[base + i], 0);
        continue;
      }
      // A span [s, e]: the run of labelled positions.
      int64_t s = i, e = i;
      while (labels[e + 1] != kIgnoreIndex) ++e;
      int nMask = 0, nSame = 0;
      for (int64_t t = s; t <= e; ++t) {
        EXPECT_GE(labels[t], 0);
        EXPECT_LT(labels[t], kFirstSpecial);
        EXPECT_EQ(x.left[base + t], base + s - 1);
        EXPECT_EQ(x.right[base + t], base + e + 1);
        EXPECT_EQ(x.pos[base + t], t - s);
        nMask += ids[t] == kMask;
        nSame += ids[t] == labels[t];
      }
      EXPECT_LE(e - s + 1, 10);
      // The boundary tokens are not masked: [CLS], [SEP] or unlabelled text.
      EXPECT_EQ(labels[s - 1], kIgnoreIndex);
      EXPECT_EQ(labels[e + 1], kIgnoreIndex);
      // One choice per span: all [MASK], or none.
      EXPECT_TRUE(nMask == 0 || nMask == e - s + 1) << "row " << r << " span at " << s;
      if (nMask) ++masks;
      else if (nSame == e - s + 1) ++kept;
      else ++random;
      masked += e - s + 1;
      i = e;
    }
    EXPECT_EQ(masked, spanBudget(0.15, seq - 2)) << "row " << r;
  }
  // ~64 x 19 / 3.8 = 320 spans: 80/10/10 within wide bounds (a random span of
  // one byte may draw its own byte and count as kept).
  int64_t spans = masks + kept + random;
  EXPECT_GT(spans, 200);
  EXPECT_NEAR(double(masks) / spans, 0.8, 0.12);
  EXPECT_NEAR(double(kept) / spans, 0.1, 0.08);
  EXPECT_NEAR(double(random) / spans, 0.1, 0.08);
}

// The kept text is the split's text: a row is seq - 2 contiguous tokens.
TEST(SpanMlm, RowTextIsContiguous) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  std::vector<uint32_t> t(3000);
  for (uint32_t i = 0; i < t.size(); ++i) t[i] = i % 200;
  writeShard(dir + "/train.bin", t, {0});
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  SpanMlmOptions o;
  o.maskProb = 0;
  SpanMlmBatcher b(dir, 8, 40, o, 3);
  SpanMlmBatch x;
  b.trainBatch(2, x);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t i = 2; i < 39; ++i) EXPECT_EQ(x.ids[r * 40 + i], (x.ids[r * 40 + i - 1] + 1) % 200);
}

TEST(SpanMlm, BatchesArePureFunctionsOfSeedAndSampleIndex) {
  TempDir d;
  std::string dir = makeData(d, 5000);
  SpanMlmBatcher b(dir, 8, 32, SpanMlmOptions{}, 5), again(dir, 8, 32, SpanMlmOptions{}, 5),
      other(dir, 8, 32, SpanMlmOptions{}, 6);
  SpanMlmBatch x, y, z, w;
  b.trainBatch(3, x);
  again.trainBatch(3, y);
  EXPECT_EQ(x.ids, y.ids);
  EXPECT_EQ(x.labels, y.labels);
  EXPECT_EQ(x.left, y.left);
  EXPECT_EQ(x.pos, y.pos);
  b.trainBatch(4, z);
  EXPECT_NE(x.labels, z.labels);
  other.trainBatch(3, w);
  EXPECT_NE(x.ids, w.ids);
  SpanMlmBatch v1, v2;
  b.valBatch(0, v1);
  again.valBatch(0, v2);
  EXPECT_EQ(v1.ids, v2.ids);
  EXPECT_NE(v1.ids, x.ids);
  // Micro-batches (firstRow): the same samples, with boundary rows counted
  // within the micro-batch (its hidden states are [rows * seq, d]).
  SpanMlmBatcher half(dir, 4, 32, SpanMlmOptions{}, 5);
  SpanMlmBatch lo, hi;
  half.trainBatch(3, lo, 0);
  half.trainBatch(3, hi, 4);
  for (int64_t i = 0; i < 4 * 32; ++i) {
    EXPECT_EQ(lo.ids[i], x.ids[i]);
    EXPECT_EQ(hi.ids[i], x.ids[4 * 32 + i]);
    EXPECT_EQ(hi.labels[i], x.labels[4 * 32 + i]);
    EXPECT_EQ(hi.left[i] + 4 * 32, x.left[4 * 32 + i]);
    EXPECT_EQ(hi.right[i] + 4 * 32, x.right[4 * 32 + i]);
    EXPECT_EQ(hi.pos[i], x.pos[4 * 32 + i]);
  }
}

TEST(SpanMlm, ErrorsNameTheProblem) {
  TempDir d;
  std::string dir = d.file("data");
  mkdir(dir.c_str(), 0777);
  writeShard(dir + "/train.bin", std::vector<uint32_t>(100, 300), {0});
  writeShard(dir + "/val.bin", std::vector<uint32_t>(100, 1), {0});
  std::string e = errorOf([&] { SpanMlmBatcher(dir, 2, 16, SpanMlmOptions{}, 1); });
  EXPECT_NE(e.find("token 300 at offset 0 is not a byte; the span_mlm transform"), std::string::npos) << e;
  EXPECT_NE(errorOf([&] { SpanMlmBatcher(d.file("none"), 2, 16, SpanMlmOptions{}, 1); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { SpanMlmBatcher(dir, 2, 2, SpanMlmOptions{}, 1); }).find("seq >= 3"), std::string::npos);
  std::string small = makeData(d, 50);
  e = errorOf([&] { SpanMlmBatcher(small, 2, 64, SpanMlmOptions{}, 1); });
  EXPECT_NE(e.find("fewer than the 62 text tokens of one span_mlm row"), std::string::npos) << e;
  SpanMlmBatcher ok(small, 2, 40, SpanMlmOptions{}, 1);
  EXPECT_NO_THROW(ok.checkValidation());
  SpanMlmBatch x;
  e = errorOf([&] { SpanMlmBatcher(makeData(d, 5000, 10), 2, 40, SpanMlmOptions{}, 1).valBatch(0, x); });
  EXPECT_NE(e.find("--eval-batches 0"), std::string::npos) << e;
}
