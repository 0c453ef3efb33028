//===- MemoryRulesTest.cpp - The fused head's chunk rule, the device table -===//
//
// Tests the two memory rules lmc and the runtime share through the contract:
// the rows of one chunk of lm.linear_cross_entropy(_with_grad)
// (contract/linear_cross_entropy.h: bound by bytes alone, so a head whose
// logits fit 64 MiB is one chunk) and --device-memory's parser
// (contract/train_settings.h: a known GPU or a size).
//
//===----------------------------------------------------------------------===//
#include "contract/linear_cross_entropy.h"
#include "contract/train_settings.h"

#include <gtest/gtest.h>

namespace {

using lmrt::kernels::linearCrossEntropyChunkRows;
constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kGpt2Vocab = 50257;

TEST(LinearCrossEntropyChunk, RowsWhoseLogitsFitAreOneChunk) {
  // GPT-2 small at batch 4 x seq 64: 256 rows of 50257 f32 logits (51 MB).
  EXPECT_EQ(linearCrossEntropyChunkRows(256, kGpt2Vocab, 768), 256);
  // GPT tiny (768 rows, a 256-token vocabulary) and a handful of rows.
  EXPECT_EQ(linearCrossEntropyChunkRows(768, 256, 128), 768);
  EXPECT_EQ(linearCrossEntropyChunkRows(6, 16, 8), 6);
  EXPECT_EQ(linearCrossEntropyChunkRows(1, kGpt2Vocab, 768), 1);
  EXPECT_EQ(linearCrossEntropyChunkRows(0, kGpt2Vocab, 768), 1);
  // Exactly 64 MiB of logits is still one chunk; one row more is two.
  EXPECT_EQ(linearCrossEntropyChunkRows(16 * kMiB / 1024, 1024, 64), 16 * 1024);
  EXPECT_EQ(linearCrossEntropyChunkRows(16 * 1024 + 1, 1024, 64), 8 * 1024 + 1);
}

TEST(LinearCrossEntropyChunk, LargerRowCountsTakeTheFewestEvenChunks) {
  // GPT-2 small at batch 8 x seq 1024: at most 333 rows in 64 MiB, so 25
  // chunks of 328 rows (the last 320).
  const int64_t rows = 8 * 1024, chunk = linearCrossEntropyChunkRows(rows, kGpt2Vocab, 768);
  EXPECT_EQ(chunk, 328);
  for (int64_t r : {int64_t(334), int64_t(1000), rows, int64_t(65536), int64_t(100003)}) {
    const int64_t c = linearCrossEntropyChunkRows(r, kGpt2Vocab, 768);
    const int64_t chunks = (r + c - 1) / c;
    EXPECT_LE(c * kGpt2Vocab * 4, 64 * kMiB) << r;
    // The fewest chunks within 64 MiB: one fewer would not fit.
    EXPECT_GT((r + chunks - 2) / (chunks - 1) * kGpt2Vocab * 4, 64 * kMiB) << r;
    // Even: no chunk is more than `chunks` rows shorter than another.
    EXPECT_LE(c * chunks - r, chunks) << r;
  }
}

TEST(LinearCrossEntropyChunk, AHugeVocabularyIsBoundBy64Rows) {
  // 1M logits a row: 64 rows are 256 MiB, over the bytes' bound, but a GEMM of
  // fewer rows runs well below the machine's rate, so the bound is 64 rows:
  // 1000 rows are 16 chunks of 63 (the last 55).
  EXPECT_EQ(linearCrossEntropyChunkRows(64, 1 << 20, 64), 64);
  EXPECT_EQ(linearCrossEntropyChunkRows(1000, 1 << 20, 64), 63);
}

TEST(LinearCrossEntropyChunk, ScratchCountsTheReducedGradientCopy) {
  using lmrt::kernels::linearCrossEntropyScratchBytes;
  // f32: one [chunk, V] f32 chunk and a double a row.
  EXPECT_EQ(linearCrossEntropyScratchBytes(256, 256, kGpt2Vocab, 4), 256 * kGpt2Vocab * 4 + 256 * 8);
  // bf16 operands in a train step: f32 logits and their gradient's bf16 copy.
  EXPECT_EQ(linearCrossEntropyScratchBytes(256, 256, kGpt2Vocab, 4, 2), 256 * kGpt2Vocab * 6 + 256 * 8);
  // chunk_rows 0 is all the rows.
  EXPECT_EQ(linearCrossEntropyScratchBytes(0, 10, 7, 4, 2), 10 * 7 * 6 + 10 * 8);
}

TEST(LinearCrossEntropyChunk, CpuScratchRowsOfMultiplesOf1024ArePadded) {
  using lmrt::kernels::linearCrossEntropyRowStride;
  EXPECT_EQ(linearCrossEntropyRowStride(kGpt2Vocab), kGpt2Vocab);
  EXPECT_EQ(linearCrossEntropyRowStride(4096), 4112);  // bench_tiny's vocabulary
  EXPECT_EQ(linearCrossEntropyRowStride(1024), 1040);
  EXPECT_EQ(linearCrossEntropyRowStride(256), 256);  // the tiny GPT's
  EXPECT_EQ(linearCrossEntropyRowStride(50304), 50304);  // GPT-2's vocabulary padded to 128s
}

TEST(LinearCrossEntropyChunk, TheGpuWidensTheRulesChunkOnly) {
  using lmrt::kernels::linearCrossEntropyCudaChunkRows;
  // GPT-2 small at batch 8 x seq 1024: the rule's 25 chunks of 328 rows become 2 of 4096
  // (at most 5341 rows of f32 logits in 1 GiB).
  const int64_t rows = 8 * 1024, rule = linearCrossEntropyChunkRows(rows, kGpt2Vocab, 768);
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(rule, rows, kGpt2Vocab, 768), 4096);
  // One chunk on the CPU already (batch 4 x seq 64): the same on the GPU.
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(256, 256, kGpt2Vocab, 768), 256);
  // Up to 5341 rows: one GPU chunk; one more row than fits 1 GiB twice: three even chunks.
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(linearCrossEntropyChunkRows(5341, kGpt2Vocab, 768), 5341, kGpt2Vocab, 768),
            5341);
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(linearCrossEntropyChunkRows(10683, kGpt2Vocab, 768), 10683, kGpt2Vocab,
                                            768),
            3561);
  // A chunk chosen by hand (not the rule's) is kept, and so is 0 (all rows).
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(8, 30, 50, 16), 8);
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(100, rows, kGpt2Vocab, 768), 100);
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(0, rows, kGpt2Vocab, 768), rows);
  // A vocabulary so large that 1 GiB holds fewer rows than the rule's chunk: the rule's stays.
  const int64_t huge = int64_t(8) << 20, hugeRule = linearCrossEntropyChunkRows(1000, huge, 64);
  EXPECT_EQ(linearCrossEntropyCudaChunkRows(hugeRule, 1000, huge, 64), hugeRule);
}

TEST(DeviceMemory, KnownDevicesAndSizes) {
  namespace st = lmrt::settings;
  int64_t bytes = 0;
  std::string error;
  ASSERT_TRUE(st::parseDeviceMemory("h100", bytes, error)) << error;
  EXPECT_EQ(bytes, int64_t(81559) * kMiB);
  ASSERT_TRUE(st::parseDeviceMemory("a100-40gb", bytes, error)) << error;
  EXPECT_EQ(bytes, int64_t(40960) * kMiB);
  ASSERT_TRUE(st::parseDeviceMemory("80GiB", bytes, error)) << error;
  EXPECT_EQ(bytes, int64_t(80) << 30);
  ASSERT_TRUE(st::parseDeviceMemory("24 GB", bytes, error)) << error;
  EXPECT_EQ(bytes, int64_t(24000000000));
  EXPECT_FALSE(st::parseDeviceMemory("h1000", bytes, error));
  EXPECT_EQ(error,
            "'h1000' is neither a known device (a100-40gb, a100-80gb, h100 or h200) nor a size such as \"80 GiB\"");
  EXPECT_FALSE(st::parseDeviceMemory("80 parsecs", bytes, error));
  EXPECT_NE(error.find("unknown unit 'parsecs'"), std::string::npos) << error;
  EXPECT_FALSE(st::parseDeviceMemory("", bytes, error));
  EXPECT_NE(error.find("is empty"), std::string::npos) << error;
}

} // namespace
