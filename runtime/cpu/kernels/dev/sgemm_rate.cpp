/* Implements: lmrt_sgemm_rate, the GEMM roofline of bench/roofline.sh: times the f32
   GEMM lmrt's f32 matmuls run on, oneDNN's sgemm, on square matrices with all threads of
   its OpenMP pool, and prints one JSON object with the best rate (2 n^3 FLOPs per call)
   and the rate per size. `--openblas` times OpenBLAS's sgemm instead (lmrt runs only f64
   on OpenBLAS) and adds the core OpenBLAS picked for this CPU: OpenBLAS 0.3.21 does not
   know newer Intel models (an Emerald Rapids Xeon, family 6 model 207, runs its generic
   "Prescott" SSE kernels, 20-58 GFLOP/s on 2 cores against oneDNN's 165-287), so it
   was no roofline for lmrt on such hosts.
   Usage: lmrt_sgemm_rate [--threads N] [--seconds S] [--openblas] [sizes...]   (default 1024 1536 2048) */
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  int threads = (int)std::thread::hardware_concurrency();
  double seconds = 1.0;  // per size, after one untimed call
  bool openblas = false;
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--openblas"))
      openblas = true;
    else if (std::atoi(argv[i]) > 0)
      sizes.push_back(std::atoi(argv[i]));
    else {
      std::fprintf(stderr, "usage: lmrt_sgemm_rate [--threads N] [--seconds S] [--openblas] [sizes...]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 1536, 2048};
  if (threads < 1) threads = 1;
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
