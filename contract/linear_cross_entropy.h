/* Implements: the chunking of lm.linear_cross_entropy(_with_grad), in plain C++ so that
   lmc (the chunk it writes in the op's chunk_rows, the scratch it predicts) and the
   kernels (the scratch they allocate) agree. */
#pragma once
#include <cstdint>

namespace lmrt::kernels {

/* Rows of one chunk for `rows` rows of width `d` against a vocabulary `v`, bound by
   bytes alone: all the rows when their f32 logits take at most 64 MiB (one chunk, one
   pass over the weight gradient), else the fewest chunks of at most 64 MiB, evened out
   (ceil(rows / chunks) rows each, so the scratch is no larger than those chunks need);
   with a vocabulary so large that 64 rows exceed 64 MiB, the bound is 64 rows instead
   (a GEMM of fewer rows runs well below the machine's rate). Each
   chunk reads and writes the whole [V, d] weight gradient once (dw +=), so the fewest
   chunks cost the least traffic, while the scratch is what the fusion is for: GPT-2
   small at 4 x 64 tokens is one chunk of 256 rows (51 MB: smaller chunks re-read its
   154 MB dw for nothing and ran the fused step slower than the unfused one), at
   8 x 1024 tokens 25 chunks of 328 rows (a 66 MB scratch for 1.65 GB of logits). An
   eighth of the rows as a cap (the earlier rule) made small batches pay that traffic.
   `d` is unused by this rule but kept for the next. */
inline int64_t linearCrossEntropyChunkRows(int64_t rows, int64_t v, int64_t d) {
  (void)d;
  constexpr int64_t kMaxChunkBytes = int64_t(64) << 20, kMinChunkRows = 64;
  if (rows <= 0) return 1;
  int64_t maxRows = v > 0 ? kMaxChunkBytes / (v * 4) : rows;
  if (maxRows < kMinChunkRows) maxRows = kMinChunkRows;
  if (rows <= maxRows) return rows;
  const int64_t chunks = (rows + maxRows - 1) / maxRows;
  return (rows + chunks - 1) / chunks;
}

/* The rows a kernel actually takes per chunk: chunk_rows, 0 meaning all of them. */
inline int64_t linearCrossEntropyEffectiveChunk(int64_t chunkRows, int64_t rows) {
  return chunkRows <= 0 || chunkRows > rows ? (rows > 0 ? rows : 1) : chunkRows;
}

/* The rows a CUDA kernel takes per chunk. The rule above sizes chunks for a CPU's caches;
   a GPU's GEMMs want thousands of rows (at 328 rows GPT-2's 25 chunks ran 3 small GEMMs each
   at 68 TFLOP/s on an H200), and its memory holds a larger scratch. So where chunk_rows is
   the rule's own choice (lmc's default), the GPU takes the fewest even chunks of at most
   1 GiB of f32 logits (GPT-2 at 8 x 1024 tokens: 2 chunks of 4096 rows, an 823 MB scratch
   instead of 1.65 GB of logits); a chunk_rows chosen by hand (-lm-fuse-linear-cross-entropy
   chunk-rows) is kept. contract.cpp's predictedMemory counts this scratch for a plan
   compiled for CUDA. */
inline int64_t linearCrossEntropyCudaChunkRows(int64_t chunkRows, int64_t rows, int64_t v, int64_t d) {
  constexpr int64_t kMaxCudaChunkBytes = int64_t(1) << 30;
  const int64_t planned = linearCrossEntropyEffectiveChunk(chunkRows, rows);
  if (rows <= 0 || chunkRows != linearCrossEntropyChunkRows(rows, v, d)) return planned;
  const int64_t maxRows = v > 0 ? kMaxCudaChunkBytes / (v * 4) : rows;
  if (maxRows <= planned) return planned;
  if (rows <= maxRows) return rows;
  const int64_t chunks = (rows + maxRows - 1) / maxRows, even = (rows + chunks - 1) / chunks;
  return even > planned ? even : planned;
}

/* The row stride of the CPU kernel's chunk scratch (elements): v, plus 16 when v is a
   multiple of 1024. f32 rows a multiple of 4 KiB apart put the elements of one column
   in one L1 set, and the backward's GEMM that reads the chunk transposed (dw += dz^T h)
   packs it column by column: at V = 4096 (bench_tiny) it ran at 73-107 GFLOP/s on one
   thread against 88-147 with the padded stride, and dh = dz w 3-9 % slower (oneDNN
   sgemm, 2026-11-28; the results are the same bits). Smaller vocabularies (the tiny
   GPT's 256) keep their rows as they are. */
inline int64_t linearCrossEntropyRowStride(int64_t v) { return v % 1024 == 0 ? v + 16 : v; }

/* The scratch one call keeps: the chunk's logits (and their gradient, in place),
   [chunk, width] of the logits' element type (width: v on CUDA, the padded row stride
   above on the CPU), plus one double a row for the row losses; with bf16 or f16
   operands (f32 logits), a train step's call also keeps the gradient rounded to the
   operands' type for its backward GEMMs, [chunk, width] of `gradCopyBytes` an element
   (0: none). */
inline int64_t linearCrossEntropyScratchBytes(int64_t chunkRows, int64_t rows, int64_t width, int64_t elementBytes,
                                              int64_t gradCopyBytes = 0) {
  const int64_t chunk = linearCrossEntropyEffectiveChunk(chunkRows, rows);
  return chunk * width * (elementBytes + gradCopyBytes) + rows * 8;
}

}  // namespace lmrt::kernels
