/* Implements: the AdamW kernel over flat parameter storage (optimizer.cu launches it,
   launchAdamW): a block per chunk (optimizer_chunks.h's AdamWChunk) of at most 64 Ki
   elements of one parameter, each thread over the elements begin + threadIdx.x + k
   blockDim.x, each element contract/adamw_math.h's, whose explicit round-to-nearest
   operations nvcc does not contract into FMAs: the CPU's AdamW bits
   (runtime/cpu/adamw.cpp). No synchronisation, so the CPU emulation in
   test/Unit/cuda_emu runs it as it is. */
#pragma once
#include <cstdint>

#include "contract/adamw_math.h"
#include "runtime/cuda/optimizer_chunks.h"

namespace lmrt::cuda::opt {

template <typename T>
__global__ void adamw(T *p, const T *g, T *m, T *v, const AdamWChunk *chunks, double gradScale, AdamWStep st) {
  const AdamWChunk c = chunks[blockIdx.x];
  const double lr = lmc::rn::mul(st.lr, c.lrScale), decay = c.decay ? st.weightDecay : 0.0;
  const lmc::AdamWScalars<T> s =
      lmc::adamwScalars<T>(lr, decay, st.beta1, st.beta2, st.eps, st.bc1, st.bc2, gradScale, st.clipValue);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const int64_t k = i - c.stateShift;
    T mi = m[k], vi = v[k];
    p[i] = lmc::adamwElement(p[i], g[i - c.gradShift], mi, vi, s);
    m[k] = mi;
    v[k] = vi;
  }
}

}  // namespace lmrt::cuda::opt
