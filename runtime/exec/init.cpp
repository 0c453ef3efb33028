/* Implements: counter-based RNG and parameter initialisation (see init.h). */
#include "runtime/exec/init.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "base/hash.h"

namespace lmrt {

uint64_t streamKey(uint64_t seed, const std::string &name) {
  return splitmix64(splitmix64(seed) ^ fnv1a64(name));
}

double uniformAt(uint64_t key, uint64_t index) {
  // Two rounds so that neighbouring keys and indices decorrelate fully.
  uint64_t bits = splitmix64(splitmix64(key + index * 0x9e3779b97f4a7c15ull) ^ key);
  return ((bits >> 11) + 0.5) * 0x1.0p-53;  // centre of one of 2^53 cells: in (0, 1)
}

double normalAt(uint64_t key, uint64_t index) {
  // Box–Muller with both uniforms drawn from this element's own counters (2i, 2i+1).
  double u1 = uniformAt(key, 2 * index), u2 = uniformAt(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

namespace {

template <typename F> void fill(const TensorRef &t, F value) {
  int64_t n = t.numel();
  if (t.type.dtype == DType::F64) {
    double *p = t.as<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = value((uint64_t)i);
  } else if (t.type.dtype == DType::F32) {
    float *p = t.as<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = (float)value((uint64_t)i);
  } else {
    fail("cannot initialise an %s tensor (parameters are f32 or f64)", t.type.str().c_str());
  }
}

/* "normal(0, 1e+300)", as the model file wrote it. */
std::string initText(const plan::Init &init) {
  char buf[96];
  switch (init.kind()) {
  case plan::Init::NORMAL: std::snprintf(buf, sizeof buf, "normal(%g, %g)", init.mean(), init.std()); break;
  case plan::Init::UNIFORM: std::snprintf(buf, sizeof buf, "uniform(%g, %g)", init.low(), init.high()); break;
  case plan::Init::BLOCKS: std::snprintf(buf, sizeof buf, "blocks(%d parts)", init.blocks_size()); break;
  default: std::snprintf(buf, sizeof buf, "init kind %d", (int)init.kind());
  }
  return buf;
}

/* The first non-finite element of `t`, or -1. */
int64_t firstNonFinite(const TensorRef &t, double &value) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    value = t.type.dtype == DType::F64 ? t.as<double>()[i] : (double)t.as<float>()[i];
    if (!std::isfinite(value)) return i;
  }
  return -1;
}

}  // namespace

void fillInit(const TensorRef &t, const plan::Init &init, uint64_t seed, const std::string &name) {
  uint64_t key = streamKey(seed, name);
  switch (init.kind()) {
  case plan::Init::ZEROS: fill(t, [](uint64_t) { return 0.0; }); return;
  case plan::Init::ONES: fill(t, [](uint64_t) { return 1.0; }); return;
  case plan::Init::NORMAL: {
    double mean = init.mean(), std = init.std();
    fill(t, [&](uint64_t i) { return mean + std * normalAt(key, i); });
    break;
  }
  case plan::Init::UNIFORM: {
    double lo = init.low(), hi = init.high();
    fill(t, [&](uint64_t i) { return lo + (hi - lo) * uniformAt(key, i); });
    break;
  }
  case plan::Init::BLOCKS: {
    // The last dimension in equal parts (the plan contract checked they divide it).
    int64_t last = t.type.shape.empty() ? 0 : t.type.shape.back();
    int64_t parts = init.blocks_size();
    if (parts == 0 || last <= 0 || last % parts != 0)
      fail("parameter '%s' %s: blocks init of %lld parts does not divide its last dimension", name.c_str(),
           t.type.str().c_str(), (long long)parts);
    int64_t part = last / parts;
    fill(t, [&](uint64_t i) { return init.blocks((int)((int64_t)(i % (uint64_t)last) / part)); });
    break;
  }
  default: fail("parameter '%s': unknown init kind %d", name.c_str(), (int)init.kind());
  }
  // A value the parameter's type cannot hold (normal(0, 1e300) in f32) would
  // surface at step 1 as a non-finite loss blamed on an update that never ran.
  double value = 0;
  int64_t at = firstNonFinite(t, value);
  if (at >= 0)
    fail("parameter '%s' %s: its initialiser %s gives %g at element %lld (%s holds magnitudes up to %g); "
         "give it a smaller scale in the model file",
         name.c_str(), t.type.str().c_str(), initText(init).c_str(), value, (long long)at,
         t.type.dtype == DType::F64 ? "f64" : "f32",
         t.type.dtype == DType::F64 ? std::numeric_limits<double>::max() : (double)std::numeric_limits<float>::max());
}

void fillNormal(const TensorRef &t, double mean, double std, uint64_t seed, const std::string &name) {
  uint64_t key = streamKey(seed, name);
  fill(t, [&](uint64_t i) { return mean + std * normalAt(key, i); });
}

}  // namespace lmrt
