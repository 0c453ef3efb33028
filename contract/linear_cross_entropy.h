/* Implements: the chunking of lm.linear_cross_entropy(_with_grad), in plain C++ so that
   lmc (the chunk it writes in the op's chunk_rows, the scratch it predicts) and the
   kernels (the scratch they allocate) agree. */
#pragma once
#include <cstdint>

namespace lmrt::kernels {

/* Rows of one chunk for `rows` rows of width `d` against a vocabulary `v`: the largest
   power of two at most rows / 8 whose f32 logits take at most 64 MiB, but at least 64
   rows (a GEMM of fewer rows runs well below the machine's rate) and at most `rows`.
   Each chunk reads and writes the whole [V, d] weight gradient once (dw +=), so fewer,
   larger chunks cost less traffic, while the scratch is what the fusion is for: GPT-2
   small at 8 x 1024 tokens gets 256-row chunks, a 51 MB scratch for 1.65 GB of logits,
   and 32 passes over its 154 MB dw (under 2 % of a step on 2 CPU cores). Liger Kernel's
   GPU rule (a chunk of logits about the size of the hidden states) would give 128 rows.
   `d` is unused by this rule but kept for the next. */
inline int64_t linearCrossEntropyChunkRows(int64_t rows, int64_t v, int64_t d) {
  (void)d;
  constexpr int64_t kMaxChunkBytes = int64_t(64) << 20;
  if (rows <= 64) return rows > 0 ? rows : 1;
  const int64_t byBytes = v > 0 ? kMaxChunkBytes / (v * 4) : rows;
  int64_t chunk = 64;
  while (chunk * 2 <= rows / 8 && chunk * 2 <= byBytes) chunk *= 2;
  return chunk;
}

/* The rows a kernel actually takes per chunk: chunk_rows, 0 meaning all of them. */
inline int64_t linearCrossEntropyEffectiveChunk(int64_t chunkRows, int64_t rows) {
  return chunkRows <= 0 || chunkRows > rows ? (rows > 0 ? rows : 1) : chunkRows;
}

/* The scratch one call keeps: the chunk's logits (and their gradient, in place),
   [chunk, v] of the element type, plus one double a row for the row losses. */
inline int64_t linearCrossEntropyScratchBytes(int64_t chunkRows, int64_t rows, int64_t v, int64_t elementBytes) {
  const int64_t chunk = linearCrossEntropyEffectiveChunk(chunkRows, rows);
  return chunk * v * elementBytes + rows * 8;
}

}  // namespace lmrt::kernels
