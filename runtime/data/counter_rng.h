/* Implements: the counter-based random numbers behind every data decision
   (train/val split, batch offsets, sampling). A value is a pure function of its
   key (seed, stream, counters...), never of how many values were drawn before,
   so resuming a run, changing the thread count or skipping evaluation cannot
   change the data a step sees. */
#pragma once
#include <cstdint>

#include "base/hash.h"

namespace lmrt {

/* Independent streams: the same seed gives unrelated numbers in each. */
enum class RngStream : uint64_t {
  Split = 0x73706c6974ull,   // document -> train/val
  Train = 0x747261696eull,   // (step, row) -> window offset
  Val = 0x76616cull,         // (eval batch, row) -> window offset
  Sample = 0x73616d706cull,  // (token index) -> sampled token
  // The mlm transform (mlm.h): (sample, decision) -> row layout, and
  // (sample, position) -> masking; training and validation apart.
  TrainPairs = 0x747061697273ull,
  ValPairs = 0x767061697273ull,
  TrainMask = 0x746d61736bull,
  ValMask = 0x766d61736bull,
  // The span_mlm transform (span_mlm.h): (sample, draw) -> row offset and
  // spans, and (sample, span / position) -> replacement.
  TrainSpans = 0x747370616e73ull,
  ValSpans = 0x767370616e73ull,
  TrainSpanMask = 0x74736d61736bull,
  ValSpanMask = 0x76736d61736bull,
  // The span_corruption transform (span_corruption.h): (sample, draw) -> row
  // offset and the noise spans' segmentation.
  TrainCorrupt = 0x74636f7272ull,
  ValCorrupt = 0x76636f7272ull,
  // (sample, position) -> the random bits of the model's own draws (lm.sample).
  TrainDraws = 0x7464726177ull,
  ValDraws = 0x7664726177ull,
  // Example datasets (example_batches.h): (epoch, position) -> the epoch's shuffle.
  Epochs = 0x65706f636873ull,
  // (step, row) -> the row's dropout key (the dropout_key input; lm.dropout
  // derives each element's mask from it, contract/dropout_math.h).
  TrainDropout = 0x7464726f70ull,
  ValDropout = 0x7664726f70ull,
};


/* The random 64-bit word for a key. Each component goes through a full mix
   before the next is folded in, so (a, b) and (b, a) differ. */
inline uint64_t counterRandom(uint64_t seed, RngStream stream, uint64_t a, uint64_t b = 0) {
  uint64_t h = splitmix64(seed ^ 0x6c6d72742d726e67ull);
  h = splitmix64(h ^ static_cast<uint64_t>(stream));
  h = splitmix64(h ^ a);
  h = splitmix64(h ^ b);
  return h;
}

/* A uniform integer in [0, n): the high word of h * n (Lemire). Its bias is at
   most n / 2^64, far below anything a training run can observe. */
inline uint64_t uniformBelow(uint64_t h, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

/* A uniform double in [0, 1) with 53 random bits. */
inline double uniform01(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace lmrt
