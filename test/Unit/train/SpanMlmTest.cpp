/* Tests the "span_mlm" batch transform (SpanBERT): span lengths follow the
   geometric distribution truncated to [1, max_span] (histograms against it, with
   bounds of 6 standard deviations: the draws are a fixed function of the seed,
   and another seed would fail a bin with probability below 1e-8); spans of whole
   words (the default) start at a word's first token and end at a word's last
   (but for a row's last span, cut to the budget), hold 3.8 words on average and
   no more tokens than the position table; word boundaries of bytes and of
   SentencePiece pieces; exactly ceil(mask_prob x n) tokens are masked per row,
   spans never touch, 80/10/10 is chosen per span, the boundary rows and offsets
   of the span boundary objective are right, and a batch is a pure function of
   (seed, sample index). */
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sys/stat.h>

#include "MaskedLmData.h"
#include "TempDir.h"
#include "runtime/data/batches.h"
#include "runtime/data/shard.h"
#include "runtime/data/span_mlm.h"
#include "runtime/data/tokenizer.h"
#include "runtime/data/words.h"
#include "contract/transform_spec.h"
#include "base/tensor.h"

using namespace lmrt;
using namespace lmrt::data;
using lmrt_test::errorOf;
using lmrt_test::makeData;
using lmrt_test::makeWordData;
using lmrt_test::wordText;
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

/* As expectHistogram, for fewer draws (every bin within 6 sd + 2). */
void expectHistogramLoose(const std::vector<int64_t> &count, double p, int64_t m) {
  int64_t n = 0;
  for (int64_t c : count) n += c;
  for (int64_t l = 1; l <= m; ++l) {
    double q = truncatedGeometric(l, p, m), mean = n * q, sd = std::sqrt(n * q * (1 - q));
    EXPECT_LE(std::fabs(count[l] - mean), 6 * sd + 2) << "length " << l << ": " << count[l] << " of " << n
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

/* unit = "token" on pseudo-random bytes: spans of at most max_span tokens
   anywhere in the text. */
TEST(SpanMlm, TokenSpanRowsAndBoundaries) {
  TempDir d;
  std::string dir = makeData(d, 20000);
  const int64_t rows = 64, seq = 128;
  SpanMlmOptions o;
  o.unit = SpanUnit::Token;
  SpanMlmBatcher b(dir, rows, seq, o, 7);
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
  std::string dir = makeWordData(d, 1000);
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

namespace {

std::vector<int32_t> bytesOf(const std::string &s) {
  std::vector<int32_t> out;
  for (unsigned char c : s) out.push_back(c);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> wordPairs(const std::vector<Word> &words) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Word &w : words) out.push_back({w.start, w.end});
  return out;
}

bool isSpace(int32_t t) { return t == ' ' || (t >= '\t' && t <= '\r'); }

/* A tokenizer of the given pieces (id = index), for the word rules alone. */
class PieceTokenizer final : public Tokenizer {
public:
  explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  const char *kind() const override { return "sentencepiece"; }
  int64_t vocab() const override { return (int64_t)pieces_.size(); }
  std::vector<int32_t> encode(const std::string &) const override { return {}; }
  std::string decode(const std::vector<int32_t> &) const override { return ""; }
  std::string piece(int32_t id) const override { return pieces_.at(id); }
  std::vector<std::pair<std::string, int32_t>> specialTokens() const override { return {}; }

private:
  std::vector<std::string> pieces_;
};

}  // namespace

// Bytes: a word is a maximal run of non-whitespace bytes, punctuation
// included; a word cut by the row's start or end (the ids just outside it) is
// none; several spaces or a newline separate as one space does.
TEST(SpanMlm, WordsOfBytes) {
  const std::vector<TokenClass> classes = tokenClasses(*byteTokenizer());
  std::vector<int32_t> t = bytesOf("ab cd,  e\nfg.");
  using P = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(wordPairs(findWords(t.data(), t.size(), -1, -1, classes)), (P{{0, 2}, {3, 6}, {8, 9}, {10, 13}}));
  EXPECT_EQ(wordPairs(findWords(t.data(), t.size(), ' ', '\n', classes)), (P{{0, 2}, {3, 6}, {8, 9}, {10, 13}}));
  // "x" before the row and "y" after it: "ab" and "fg." are parts of longer words.
  EXPECT_EQ(wordPairs(findWords(t.data(), t.size(), 'x', 'y', classes)), (P{{3, 6}, {8, 9}}));
  std::vector<int32_t> spaces = bytesOf(" \t\r\n ");
  EXPECT_TRUE(findWords(spaces.data(), spaces.size(), 'a', 'b', classes).empty());
  std::vector<int32_t> one = bytesOf("word");
  EXPECT_TRUE(findWords(one.data(), one.size(), 'a', -1, classes).empty());
  EXPECT_EQ(findWords(one.data(), one.size(), -1, -1, classes).size(), 1u);
  // Bytes that are not ASCII (UTF-8) are letters: "é" does not split a word.
  std::vector<int32_t> utf8 = bytesOf("caf\xC3\xA9 ok");
  EXPECT_EQ(wordPairs(findWords(utf8.data(), utf8.size(), -1, -1, classes)), (P{{0, 5}, {6, 8}}));
}

// SentencePiece: a word starts at a piece beginning with U+2581 (its first
// piece, space mark included) or after a whitespace piece; control pieces ("")
// separate words.
TEST(SpanMlm, WordsOfSentencePiecePieces) {
  const std::string mark = "\xE2\x96\x81";
  PieceTokenizer sp({"", mark + "the", mark + "cat", "s", ".", "\n", mark, "sat", mark + mark + "on"});
  std::vector<TokenClass> classes = tokenClasses(sp);
  EXPECT_EQ(classes[0], TokenClass::Space);
  EXPECT_EQ(classes[1], TokenClass::WordStart);
  EXPECT_EQ(classes[3], TokenClass::Inner);
  EXPECT_EQ(classes[5], TokenClass::Space);
  EXPECT_EQ(classes[6], TokenClass::Space);
  EXPECT_EQ(classes[8], TokenClass::WordStart);
  // "▁the ▁cat s . \n sat ▁ ▁▁on <eos> ▁the s": the cats. / sat / on / the s
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 7, 6, 8, 0, 1, 3};
  using P = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(wordPairs(findWords(ids.data(), ids.size(), -1, -1, classes)),
            (P{{0, 1}, {1, 4}, {5, 6}, {7, 8}, {9, 11}}));
  // A row starting inside a word ("s" after "▁cat") skips to the next start;
  // the last word continues past the row ("s" after it): left out.
  std::vector<int32_t> cut = {3, 4, 2, 1, 3};
  EXPECT_EQ(wordPairs(findWords(cut.data(), cut.size(), 2, 3, classes)), (P{{2, 3}}));
}

TEST(SpanMlm, NoWordBoundariesIsAnError) {
  PieceTokenizer letters({"a", "b", "ab"});
  std::string e = errorOf([&] { tokenClasses(letters); });
  EXPECT_NE(e.find("the sentencepiece tokenizer gives no word boundaries"), std::string::npos) << e;
  EXPECT_NE(e.find("span_mlm(unit = \"token\")"), std::string::npos) << e;
}

/* Whole-word spans on a long row of text: every span starts at a word's first
   token, every span but the row's last ends at a word's last token, the spans
   hold 3.797 words on average (the paper's 3.8: the truncated geometric's mean;
   over ~10,000 spans of sd 2.55 words the mean's sd is ~0.026, so 0.1 is 4 sd;
   measured: 3.757 over these 20 rows, 3.800 over 200),
   the budget is met exactly and no span touches another. */
TEST(SpanMlm, WordSpansAreWholeWordsWithTheGeometricMean) {
  const std::string text = wordText(12000, 3);
  const std::vector<int32_t> t = bytesOf(text);
  const int64_t n = (int64_t)t.size();
  const std::vector<Word> words = findWords(t.data(), n, -1, -1, tokenClasses(*byteTokenizer()));
  std::vector<int64_t> wordAt(n + 1, -1), wordEnding(n + 1, -1);  // word index by first / one-past-last token
  for (size_t w = 0; w < words.size(); ++w) wordAt[words[w].start] = wordEnding[words[w].end] = (int64_t)w;
  SpanMlmOptions o;
  o.maxSpanTokens = 512;  // no span shortened for the table: the lengths as drawn
  const int64_t budget = spanBudget(o.maskProb, n);
  double sum = 0;
  int64_t count = 0;
  std::vector<int64_t> histogram(o.maxSpan + 1, 0);
  for (uint64_t row = 0; row < 20; ++row) {
    std::vector<Span> spans = sampleWordSpans(9, RngStream::TrainSpans, row, n, words, o);
    std::vector<char> taken(n, 0);
    int64_t total = 0;
    for (size_t j = 0; j < spans.size(); ++j) {
      const Span &s = spans[j];
      const int64_t end = s.start + s.length;
      ASSERT_GE(wordAt[s.start], 0) << "span " << j << " starts inside a word";
      for (int64_t i = std::max<int64_t>(0, s.start - 1); i < std::min(n, end + 1); ++i)
        ASSERT_FALSE(taken[i]) << "row " << row << " span " << j << " touches another";
      std::fill(taken.begin() + s.start, taken.begin() + end, 1);
      const int64_t before = total;
      total += s.length;
      if (j + 1 == spans.size()) continue;  // the last span: cut to the budget
      ASSERT_GE(wordEnding[end], 0) << "span " << j << " ends inside a word";
      // Into the mean only where the spans before it left room for any span
      // (10 words of at most 11 bytes): counting every span but the last would
      // favour short ones, as the last one is likelier long.
      if (budget - before <= 110) continue;
      const int64_t inSpan = wordEnding[end] - wordAt[s.start] + 1;
      // As drawn, unless the row's words ran out.
      if (wordEnding[end] + 1 < (int64_t)words.size()) {
        EXPECT_EQ(inSpan, s.drawn) << "span " << j;
      }
      sum += inSpan;
      ++count;
      ++histogram[inSpan];
    }
    EXPECT_EQ(total, budget) << "row " << row;
  }
  ASSERT_GT(count, 9000);
  EXPECT_NEAR(sum / count, 3.797, 0.1) << count << " spans";
  expectHistogramLoose(histogram, o.geometricP, o.maxSpan);
}

/* With a small position table, a span keeps the whole words that fit in
   max_span_tokens tokens; a word longer than the table starts no span. */
TEST(SpanMlm, WordSpansFitThePositionTable) {
  const std::vector<int32_t> t = bytesOf(wordText(3000, 4) + " abcdefghijklmnopqrstuvwxyz");
  const int64_t n = (int64_t)t.size();
  const std::vector<Word> words = findWords(t.data(), n, -1, -1, tokenClasses(*byteTokenizer()));
  SpanMlmOptions o;
  o.maxSpanTokens = 12;
  int64_t spans = 0;
  for (uint64_t row = 0; row < 20; ++row)
    for (const Span &s : sampleWordSpans(2, RngStream::ValSpans, row, n, words, o)) {
      EXPECT_LE(s.length, o.maxSpanTokens);
      EXPECT_LT(s.start, n - 26) << "the 26-letter word was masked";
      ++spans;
    }
  EXPECT_GT(spans, 1000);
}

/* Batches of whole-word spans: each span of the row starts after whitespace
   (or at the row's first token) and ends before whitespace or [SEP], except at
   most one a row (its last span, cut to the budget, which may end inside a
   word); the boundary tokens are unmasked; span_pos counts tokens and stays
   below max_span_tokens; the budget is exact. */
TEST(SpanMlm, WordSpanRowsAndBoundaries) {
  TempDir d;
  std::string dir = makeWordData(d, 20000);
  const int64_t rows = 64, seq = 256;
  SpanMlmOptions o;
  o.maxSpanTokens = 40;
  SpanMlmBatcher b(dir, rows, seq, o, 7);
  SpanMlmBatch x;
  b.trainBatch(0, x);
  int64_t spans = 0, multiWord = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * seq;
    const int32_t *ids = &x.ids[base], *labels = &x.labels[base];
    std::vector<int32_t> orig(seq);  // the row's text before masking
    for (int64_t i = 0; i < seq; ++i) orig[i] = labels[i] != kIgnoreIndex ? labels[i] : ids[i];
    int64_t masked = 0, cutInWord = 0;
    for (int64_t i = 1; i < seq - 1; ++i) {
      if (labels[i] == kIgnoreIndex) continue;
      int64_t s = i, e = i;
      while (labels[e + 1] != kIgnoreIndex) ++e;
      EXPECT_EQ(labels[s - 1], kIgnoreIndex);
      EXPECT_EQ(labels[e + 1], kIgnoreIndex);
      EXPECT_TRUE(s == 1 || isSpace(orig[s - 1])) << "row " << r << ": span at " << s << " starts inside a word";
      EXPECT_FALSE(isSpace(orig[s])) << "row " << r << ": span at " << s << " starts with whitespace";
      if (!(e + 1 == seq - 1 || isSpace(orig[e + 1]))) ++cutInWord;
      EXPECT_LE(e - s + 1, o.maxSpanTokens);
      int64_t wordsIn = 1;
      for (int64_t t = s; t <= e; ++t) {
        EXPECT_EQ(x.pos[base + t], t - s);
        EXPECT_EQ(x.left[base + t], base + s - 1);
        EXPECT_EQ(x.right[base + t], base + e + 1);
        wordsIn += t > s && isSpace(orig[t - 1]) && !isSpace(orig[t]);
      }
      EXPECT_LE(wordsIn, o.maxSpan);
      multiWord += wordsIn > 1;
      ++spans;
      masked += e - s + 1;
      i = e;
    }
    EXPECT_LE(cutInWord, 1) << "row " << r;
    EXPECT_EQ(masked, spanBudget(0.15, seq - 2)) << "row " << r;
  }
  EXPECT_GT(spans, 64);
  EXPECT_GT(multiWord, spans / 4);
}

TEST(SpanMlm, TokenSpansNeedThePositionTable) {
  TempDir d;
  std::string dir = makeWordData(d, 500);
  SpanMlmOptions o;
  o.unit = SpanUnit::Token;
  o.maxSpan = 20;
  o.maxSpanTokens = 15;
  std::string e = errorOf([&] { SpanMlmBatcher(dir, 2, 32, o, 1); });
  EXPECT_NE(e.find("max_span <= max_span_tokens with unit \"token\" (got 15, 20)"), std::string::npos) << e;
  o.unit = SpanUnit::Word;  // 20 words, at most 15 tokens: whole words that fit
  EXPECT_NO_THROW(SpanMlmBatcher(dir, 2, 32, o, 1));
}

/* A SentencePiece model trained here (BPE, as `lmrt data tokenizer train`
   trains them: no dummy prefix, whitespace as written, newlines as the byte
   piece <0x0A>): its words in a text are the text's whitespace-separated words,
   each decoding to the word with the space before it. */
TEST(SpanMlm, WordsOfATrainedSentencePieceModel) {
  TempDir d;
  TokenizerTrainOptions t;
  for (uint32_t i = 0; i < 200; ++i) t.texts.push_back(wordText(100, 10 + i));
  t.vocab = 400;
  t.outPath = d.file("sp.model");
  trainTokenizer(t);
  std::unique_ptr<Tokenizer> sp = loadSentencePiece(t.outPath);
  const std::vector<TokenClass> classes = tokenClasses(*sp);
  const std::string text = "the cat, sat\non  the mat. " + wordText(300, 7);
  const std::vector<int32_t> ids = sp->encode(text);
  std::vector<std::string> expected, found;
  for (size_t at = 0; at < text.size();) {  // the text's words, by whitespace
    size_t start = text.find_first_not_of(" \n", at);
    if (start == std::string::npos) break;
    size_t end = std::min(text.find_first_of(" \n", start), text.size());
    expected.push_back(text.substr(start, end - start));
    at = end;
  }
  for (const Word &w : findWords(ids.data(), (int64_t)ids.size(), -1, -1, classes)) {
    std::string s = sp->decode(std::vector<int32_t>(ids.begin() + w.start, ids.begin() + w.end));
    // A word after a space carries it (U+2581 in its first piece); one after a
    // newline follows the piece <0x0A>.
    size_t offset = sp->decode(std::vector<int32_t>(ids.begin(), ids.begin() + w.start)).size();
    EXPECT_EQ(text.compare(offset, s.size(), s), 0) << "'" << s << "'";
    if (w.start > 0) {
      EXPECT_TRUE(s[0] == ' ' || text[offset - 1] == '\n') << "'" << s << "'";
    }
    found.push_back(s.substr(s.find_first_not_of(' ')));
  }
  EXPECT_EQ(found, expected);
}
