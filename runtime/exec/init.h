/* Implements: deterministic, counter-based random numbers for parameter init.
   Element i of a stream keyed by (seed, stream id) is a pure function of those
   three numbers (splitmix64 of a keyed counter, Box–Muller for normals), so the
   result never depends on thread count, on the order parameters are visited, or
   on which other parameters exist. */
#pragma once
#include <cstdint>
#include <string>

#include "contract/plan.pb.h"
#include "base/tensor.h"

namespace lmrt {

/* The key of the stream for (seed, name): FNV-1a of the name mixed with the seed. */
uint64_t streamKey(uint64_t seed, const std::string &name);
/* Uniform in (0, 1) (never 0 or 1), 53 random bits. */
double uniformAt(uint64_t key, uint64_t index);
/* Standard normal N(0, 1). */
double normalAt(uint64_t key, uint64_t index);

/* Fills `t` (f32 or f64) according to `init`, using stream streamKey(seed, name). */
void fillInit(const TensorRef &t, const plan::Init &init, uint64_t seed, const std::string &name);
/* Fills `t` (f32 or f64) with mean + std * N(0, 1) from stream streamKey(seed, name). */
void fillNormal(const TensorRef &t, double mean, double std, uint64_t seed, const std::string &name);

}  // namespace lmrt
