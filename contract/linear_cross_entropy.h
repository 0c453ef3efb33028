/* Implements: the chunking of lm.linear_cross_entropy(_with_grad), in plain C++ so that
   lmc (the chunk it writes in the op's chunk_rows, the scratch it predicts) and the
   kernels (the scratch they allocate) agree. */
#pragma once
#include <cstdint>

namespace lmrt::kernels {

/* Rows of one chunk for `rows` rows of width `d` against a vocabulary `v`: the largest
   power of two at most rows / 8, so that the scratch is at most an eighth of the
   logits, but at least 64 rows (a GEMM of fewer rows runs well below the machine's
   rate) and at most `rows`. Liger Kernel's GPU rule (a chunk of logits about the size
   of the hidden states) gives GPT-2 small at 8 x 1024 tokens 128-row chunks, and each
   chunk then reads and writes the whole [V, d] weight gradient once: 64 passes over
   154 MB on a CPU; eight 1024-row chunks keep that to 2.5 GB for a 206 MB scratch
   (instead of 1.65 GB of logits). `d` is unused by this rule but kept for the next. */
inline int64_t linearCrossEntropyChunkRows(int64_t rows, int64_t v, int64_t d) {
  (void)v;
  (void)d;
  if (rows <= 64) return rows > 0 ? rows : 1;
  int64_t chunk = 64;
  while (chunk * 2 <= rows / 8) chunk *= 2;
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
