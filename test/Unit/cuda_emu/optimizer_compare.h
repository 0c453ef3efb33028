/* Implements: how the tests of the CUDA optimizer kernels (AdamW's too) compare them with the CPU's
   (OptimizerEmulationTest.cpp on the CPU emulation, test/Unit/cuda/CudaTrainTest.cpp on a
   GPU, where blockSum adds in the emulation's order and so gives its bits): bit for bit,
   or within kReducedUlps where a block reduction feeds the value. */
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace lmrt::cuda::test {

/* How far the kernels' values may be from the CPU's after three updates where a block
   reduction feeds them (LAMB's parameters: the norms; Adafactor's parameters and row
   statistics: the row sums, RMS(w), the update's RMS), in units in the last place at the
   values' scale (scaledUlps). The kernels add in blockSum's order, the CPU in element
   order, and two orders of a double sum of n terms differ by up to about n ulps. The
   scalars rounded from the sums (a trust ratio's step, an RMS) then move an update of
   order lr by an ulp or so, not the parameter of order 1 it is added to; a row statistic
   (a mean of 240 squares in OptimizerEmulationTest) takes its sum's difference whole.
   Measured on the emulation, three updates of OptimizerEmulationTest's parameters: f32
   none (the same bits), f64 parameters 2, f64 row statistics 6. */
constexpr double kReducedUlps = 16;

/* The same bytes, or NaN on both (a GPU writes its canonical NaN, x86 propagates the
   gradient's payload). */
template <typename T> bool sameBits(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || !std::memcmp(&a, &b, sizeof(T));
}

/* |a - b| in units in the last place of max(|b|, 1) in T (b's own ulp where |b| >= 1, an
   ulp of 1 below): 0 for NaN on both, infinite for NaN on one side. */
template <typename T> double scaledUlps(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0.0 : INFINITY;
  const T scale = std::max<T>(std::fabs(b), T(1));
  const double unit = (double)(std::nextafter(scale, std::numeric_limits<T>::infinity()) - scale);
  return std::fabs((double)a - (double)b) / unit;
}

}  // namespace lmrt::cuda::test
