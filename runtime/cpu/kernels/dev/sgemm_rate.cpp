/* Implements: lmrt_sgemm_rate, the GEMM roofline of bench/roofline.sh: times the f32
   GEMM lmrt's f32 matmuls run on, oneDNN's sgemm, on square matrices with all threads of
   its OpenMP pool, and prints one JSON object with the best rate (2 n^3 FLOPs per call)
   and the rate per size. `--openblas` times OpenBLAS's sgemm instead (lmrt runs only f64
   on OpenBLAS) and adds the core OpenBLAS picked for this CPU: OpenBLAS 0.3.21 does not
   know newer Intel models (an Emerald Rapids Xeon, family 6 model 207, runs its generic
   "Prescott" SSE kernels, 20-58 GFLOP/s on 2 cores against oneDNN's 165-287), so it
   was no roofline for lmrt on such hosts.
   `--matmul M,N,K[,TT]` (repeatable; TT one of NN, NT, TN: which operand is stored
   transposed) times lmrt's own f32 lm.matmul kernel on that GEMM instead, the calls
   interleaved with one oneDNN sgemm call over all threads on the same operands, and
   prints one JSON line per shape: the two rates (fastest call of each) and the largest
   difference of their results. lm.matmul splits a GEMM into blocks that it hands one
   per thread, each block a one-thread sgemm (matmul.cpp, for results that do not depend
   on the thread count); this says what that split costs against oneDNN's own.
   Usage: lmrt_sgemm_rate [--threads N] [--seconds S] [--openblas] [sizes...]   (default 1024 1536 2048)
          lmrt_sgemm_rate [--threads N] [--seconds S] --matmul M,N,K[,TT] [--matmul ...] */
#include <cblas.h>
#include <cmath>
#include <functional>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "contract/attrs.h"
#include "runtime/cpu/kernels/registry.h"

namespace {

/* The fastest of repeated calls of each of a and b, interleaved call by call so that a
   shared machine's drift hits both alike (at least 3 calls each, `seconds` in all). */
std::pair<double, double> fastestInterleaved(const std::function<void()> &a, const std::function<void()> &b,
                                             double seconds) {
  using clock = std::chrono::steady_clock;
  double fa = 1e30, fb = 1e30, spent = 0;
  for (int reps = 0; spent < seconds || reps < 3; ++reps) {
    auto t0 = clock::now();
    a();
    auto t1 = clock::now();
    b();
    auto t2 = clock::now();
    fa = std::min(fa, std::chrono::duration<double>(t1 - t0).count());
    fb = std::min(fb, std::chrono::duration<double>(t2 - t1).count());
    spent += std::chrono::duration<double>(t2 - t0).count();
  }
  return {fa, fb};
}

/* One --matmul shape: lmrt's lm.matmul kernel against oneDNN's all-thread sgemm. */
int timeMatmul(const std::string &spec, double seconds, int threads) {
  long long m = 0, n = 0, k = 0;
  char form[3] = "NN";
  int got = std::sscanf(spec.c_str(), "%lld,%lld,%lld,%2s", &m, &n, &k, form);
  const std::string f = form;
  if (got < 3 || m < 1 || n < 1 || k < 1 || (f != "NN" && f != "NT" && f != "TN")) {
    std::fprintf(stderr, "lmrt_sgemm_rate: --matmul %s: expected M,N,K with an optional ,NN ,NT or ,TN\n",
                 spec.c_str());
    return 2;
  }
  const bool ta = f[0] == 'T', tb = f[1] == 'T';
  std::vector<float> a((size_t)(m * k)), b((size_t)(k * n)), mine((size_t)(m * n)), theirs((size_t)(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 13) - 6) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 7) - 3) * 0.2f;
  using lmrt::DType;
  lmrt::TensorRef ra{a.data(), {DType::F32, ta ? lmrt::Shape{k, m} : lmrt::Shape{m, k}}};
  lmrt::TensorRef rb{b.data(), {DType::F32, tb ? lmrt::Shape{n, k} : lmrt::Shape{k, n}}};
  lmrt::TensorRef rc{mine.data(), {DType::F32, {m, n}}};
  lmrt::kernels::Attrs attrs;
  attrs.set("transpose_lhs", ta);
  attrs.set("transpose_rhs", tb);
  const lmrt::kernels::KernelDef *matmul = lmrt::kernels::findKernel("matmul");
  std::string bad = matmul->check({ra.type, rb.type}, {rc.type}, attrs);
  if (!bad.empty()) {
    std::fprintf(stderr, "lmrt_sgemm_rate: --matmul %s: %s\n", spec.c_str(), bad.c_str());
    return 2;
  }
  lmrt::kernels::KernelCall call{{ra, rb}, {rc}, attrs};
  auto lmrtCall = [&] { matmul->run(call); };
  auto onednnCall = [&] {
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f,
                   theirs.data(), n) != dnnl_success) {
      std::fprintf(stderr, "lmrt_sgemm_rate: oneDNN's sgemm failed on --matmul %s\n", spec.c_str());
      std::exit(1);
    }
  };
  lmrtCall();
  onednnCall();
  // The two differ at most by the order of their f32 sums (oneDNN's all-thread call may
  // split K): |a| <= 0.6 and |b| <= 0.6 here, so a sum of k products is off by far less
  // than 1e-5 * k; a larger difference is a wrong result, not a timing.
  double diff = 0;
  for (size_t i = 0; i < mine.size(); ++i) diff = std::max(diff, (double)std::fabs(mine[i] - theirs[i]));
  if (!(diff <= 1e-5 * (double)k)) {
    std::fprintf(stderr, "lmrt_sgemm_rate: --matmul %s: lmrt's matmul and oneDNN's sgemm differ by %g\n",
                 spec.c_str(), diff);
    return 1;
  }
  auto [fastLmrt, fastOnednn] = fastestInterleaved(lmrtCall, onednnCall, seconds);
  const double flop = 2.0 * (double)m * (double)n * (double)k * 1e-9;
  std::printf("{\"matmul\": \"%lldx%lldx%lld %s\", \"threads\": %d, \"lmrt_matmul_gflops\": %.2f, "
              "\"onednn_all_threads_gflops\": %.2f, \"max_abs_diff\": %.3g}\n",
              m, n, k, f.c_str(), threads, flop / fastLmrt, flop / fastOnednn, diff);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  int threads = (int)std::thread::hardware_concurrency();
  double seconds = 1.0;  // per size, after one untimed call
  bool openblas = false;
  std::vector<int> sizes;
  std::vector<std::string> matmuls;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--matmul") && i + 1 < argc)
      matmuls.push_back(argv[++i]);
    else if (!std::strcmp(argv[i], "--openblas"))
      openblas = true;
    else if (std::atoi(argv[i]) > 0)
      sizes.push_back(std::atoi(argv[i]));
    else {
      std::fprintf(stderr, "usage: lmrt_sgemm_rate [--threads N] [--seconds S] [--openblas] [sizes...]\n"
                           "       lmrt_sgemm_rate [--threads N] [--seconds S] --matmul M,N,K[,NN|NT|TN] ...\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 1536, 2048};
  if (threads < 1) threads = 1;
  if (!matmuls.empty()) {
    if (openblas) {
      std::fprintf(stderr, "lmrt_sgemm_rate: --matmul times oneDNN's sgemm, not OpenBLAS's\n");
      return 2;
    }
    omp_set_num_threads(threads);
    for (const std::string &spec : matmuls)
      if (int rc = timeMatmul(spec, seconds, threads)) return rc;
    return 0;
  }
  if (openblas)
    openblas_set_num_threads(threads);
  else
    omp_set_num_threads(threads);  // oneDNN's sgemm threads over the calling thread's OpenMP pool
  double best = 0;
  std::string per;
  for (int n : sizes) {
    std::vector<float> a((size_t)n * n), b((size_t)n * n), c((size_t)n * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.1f, b[i] = float(i % 5) * 0.2f;
    auto call = [&] {
      if (openblas) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                    c.data(), n);
      } else if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) != dnnl_success) {
        std::fprintf(stderr, "lmrt_sgemm_rate: oneDNN's sgemm failed at n = %d\n", n);
        std::exit(1);
      }
    };
    call();
    // The fastest of repeated calls: on a shared machine the minimum is the least disturbed.
    double fastest = 1e30, spent = 0;
    int reps = 0;
    while (spent < seconds || reps < 3) {
      auto t0 = std::chrono::steady_clock::now();
      call();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fastest = std::min(fastest, s);
      spent += s;
      ++reps;
    }
    double rate = 2.0 * n * n * (double)n / fastest * 1e-9;
    best = std::max(best, rate);
    per += (per.empty() ? "" : ", ") + std::string("\"") + std::to_string(n) + "\": " + std::to_string(rate);
  }
  std::string library = openblas ? std::string("OpenBLAS ") + openblas_get_corename() : std::string("oneDNN");
  std::printf("{\"sgemm_gflops\": %.2f, \"library\": \"%s\", \"threads\": %d, \"by_size\": {%s}}\n", best,
              library.c_str(), threads, per.c_str());
  return 0;
}
