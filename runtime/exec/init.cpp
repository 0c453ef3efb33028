/* Implements: counter-based RNG and parameter initialisation (see init.h). */
#include "runtime/exec/init.h"
#include "runtime/exec/bound_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "base/hash.h"

// LAPACK's Householder QR (OpenBLAS carries it; there is no LAPACKE header to use).
extern "C" {
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
}

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
  case plan::Init::ORTHOGONAL: std::snprintf(buf, sizeof buf, "orthogonal(%g)", init.gain()); break;
  default: std::snprintf(buf, sizeof buf, "init kind %d", (int)init.kind());
  }
  return buf;
}

/* The Q of the thin QR of the column-major m x n matrix `a` (m >= n), its
   columns' signs those of R's diagonal (torch.nn.init.orthogonal_: q *= sign(diag(r)),
   so Q does not depend on LAPACK's sign convention; a zero diagonal keeps +). */
void orthonormalColumns(std::vector<double> &a, int m, int n, const std::string &name) {
  std::vector<double> tau(n);
  int info = 0, lwork = -1;
  double size = 0;
  dgeqrf_(&m, &n, a.data(), &m, tau.data(), &size, &lwork, &info);
  std::vector<double> work(std::max<size_t>(1, (size_t)size));
  lwork = (int)work.size();
  dgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  if (info != 0) fail("parameter '%s': orthogonal init: LAPACK dgeqrf failed (info %d)", name.c_str(), info);
  std::vector<double> sign(n);
  for (int j = 0; j < n; ++j) sign[j] = a[(size_t)j * m + j] < 0 ? -1.0 : 1.0;
  lwork = -1;
  dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), &size, &lwork, &info);
  work.assign(std::max<size_t>(1, (size_t)size), 0.0);
  lwork = (int)work.size();
  dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  if (info != 0) fail("parameter '%s': orthogonal init: LAPACK dorgqr failed (info %d)", name.c_str(), info);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a[(size_t)j * m + i] *= sign[j];
}

/* orthogonal(gain, blocks = k) over the matrix [rows = numel / last, last]: each
   of the k column blocks [rows, c = last / k] is gain x Q, Q from the QR of a
   standard Gaussian block (element (r, col) of block b drawn at index
   b * rows * c + r * c + col of the parameter's stream), taken tall as torch
   does: Q^T Q = I when rows >= c (orthonormal columns), Q Q^T = I otherwise. */
std::vector<double> orthogonalValues(const TensorType &type, const plan::Init &init, uint64_t key,
                                     const std::string &name) {
  int64_t last = type.shape.size() >= 2 ? type.shape.back() : 0;
  int64_t blocks = std::max<int64_t>(1, init.orthogonal_blocks());
  if (last <= 0 || last % blocks != 0)
    fail("parameter '%s' %s: orthogonal init needs a matrix whose last dimension its %lld blocks divide",
         name.c_str(), type.str().c_str(), (long long)blocks);
  const int64_t rows = type.numel() / last, c = last / blocks;
  if (std::max(rows, c) > std::numeric_limits<int>::max() / std::max<int64_t>(1, std::min(rows, c)))
    fail("parameter '%s' %s: orthogonal init of blocks [%lld, %lld] is too large for LAPACK", name.c_str(),
         type.str().c_str(), (long long)rows, (long long)c);
  std::vector<double> out((size_t)type.numel());
  const bool tall = rows >= c;
  const int m = (int)(tall ? rows : c), n = (int)(tall ? c : rows);
  std::vector<double> a((size_t)m * n);
  for (int64_t b = 0; b < blocks; ++b) {
    // The block G [rows, c]; A = G (tall) or G^T, column-major m x n.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < c; ++col) {
        double g = normalAt(key, (uint64_t)(b * rows * c + r * c + col));
        if (tall)
          a[(size_t)col * m + r] = g;
        else
          a[(size_t)r * m + col] = g;
      }
    orthonormalColumns(a, m, n, name);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < c; ++col)
        out[(size_t)(r * last + b * c + col)] =
            init.gain() * (tall ? a[(size_t)col * m + r] : a[(size_t)r * m + col]);
  }
  return out;
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
  case plan::Init::ORTHOGONAL: {
    std::vector<double> v = orthogonalValues(t.type, init, key, name);
    fill(t, [&](uint64_t i) { return v[i]; });
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
