/* Implements: the bf16 x bf16 -> f32 GEMM of blas.h on oneDNN's matmul primitive.
   Strides say the layout: op(A) is [m, k] stored row-major with leading dimension
   lda, or transposed ([k, m] stored); likewise op(B). A primitive is made once per
   (shape, layout, alpha, beta) on each thread and kept, always for one thread: oneDNN's own cache
   makes one in about 2 us, a GEMM block of the tiny GPT takes 20-200 us. Where
   oneDNN has no bf16 matmul for a key (a CPU before AVX-512: oneDNN 2.6 needs
   avx512_core), the key is kept as such and the GEMM runs widened on sgemm
   (gemm_widened.cpp), with a note on stderr once a process. */
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "runtime/cpu/kernels/blas.h"

namespace lmrt::kernels::detail {
namespace {

/* The largest transposed A block copied dense (elements; 2 MiB a thread): a weight
   gradient's row block of 256 x 4096 tokens. Larger ones run strided. */
constexpr int64_t kDenseCopyMax = int64_t{1} << 20;

using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, float>;

struct Gemm {
  dnnl::memory::desc a, b, c;
  std::optional<dnnl::matmul> prim;  // none: oneDNN has no bf16 matmul for it here
};

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

Gemm &gemmFor(const Key &key) {
  thread_local std::map<Key, Gemm> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto [ta, tb, m, n, k, lda, ldb, ldc, alpha, beta] = key;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  Gemm g;
  g.a = dnnl::memory::desc(dims{m, k}, dt::bf16, ta ? dims{1, lda} : dims{lda, 1});
  g.b = dnnl::memory::desc(dims{k, n}, dt::bf16, tb ? dims{1, ldb} : dims{ldb, 1});
  g.c = dnnl::memory::desc(dims{m, n}, dt::f32, dims{ldc, 1});
  dnnl::primitive_attr attr;
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (beta != 0.f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g.a, g.b, g.c), attr, cpuEngine());
    g.prim = dnnl::matmul(pd);
  } catch (const dnnl::error &e) {
    if (e.status != dnnl_unimplemented) throw;
    static std::once_flag noted;
    std::call_once(noted, [] {
      std::fprintf(stderr, "lmrt: note: oneDNN has no bf16 matmul on this CPU (it needs AVX-512): bf16 GEMMs run "
                           "with their operands widened to f32 on sgemm, at f32 speed\n");
    });
  }
  return cache.emplace(key, std::move(g)).first->second;
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const lmc::bf16 *a, int64_t lda,
          const lmc::bf16 *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (beta != 0.f && beta != 1.f) fail("bf16 GEMM: beta %g (only 0 and 1 are supported)", (double)beta);
  // A transposed and strided (a block of a weight gradient's activations, [k, m] of a
  // wider [k, lda]): copied dense first, so that oneDNN takes its brgemm kernels (AMX
  // where the CPU has it) instead of gemm:jit, about twice as fast on these blocks
  // (blas.h, bf16RowBlocks). Another kernel may sum in another order (a bf16 GPT-2
  // b4 x t64 run's weights were byte-identical with and without the copy, bench_tiny's
  // not), but the order still depends on the shape alone, never on the thread count.
  thread_local std::vector<lmc::bf16> denseA;
  if (ta && lda != m && k > 0 && m * k <= kDenseCopyMax) {
    denseA.resize(size_t(m * k));
    for (int64_t r = 0; r < k; ++r) std::memcpy(denseA.data() + r * m, a + r * lda, sizeof(lmc::bf16) * m);
    a = denseA.data();
    lda = m;
  }
  // One thread for oneDNN, inside a parallel region too: there omp_get_max_threads()
  // still says the team's size, and oneDNN's brgemm kernels plan their blocking for
  // the threads they are told of, which made the bits depend on --threads.
  const int threads = omp_get_max_threads();
  if (threads > 1) omp_set_num_threads(1);
  try {
    Gemm &g = gemmFor(Key{ta, tb, m, n, k, lda, ldb, ldc, alpha, beta});
    if (!g.prim) {
      if (threads > 1) omp_set_num_threads(threads);
      gemmWidened(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    thread_local dnnl::stream stream(cpuEngine());
    dnnl::memory ma(g.a, cpuEngine(), const_cast<lmc::bf16 *>(a));
    dnnl::memory mb(g.b, cpuEngine(), const_cast<lmc::bf16 *>(b));
    dnnl::memory mc(g.c, cpuEngine(), c);
    g.prim->execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    stream.wait();
  } catch (const dnnl::error &e) {
    if (threads > 1) omp_set_num_threads(threads);
    fail("oneDNN bf16 matmul failed (%s, status %d) on [%lld, %lld] x [%lld, %lld]", e.what(), (int)e.status,
         (long long)m, (long long)k, (long long)k, (long long)n);
  }
  if (threads > 1) omp_set_num_threads(threads);
}

}  // namespace lmrt::kernels::detail
