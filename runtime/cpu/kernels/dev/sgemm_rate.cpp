/* Implements: lmrt_sgemm_rate, the GEMM roofline of bench/roofline.sh: times OpenBLAS
   sgemm on square matrices with all threads of OpenBLAS's own pool and prints one JSON
   object with the best rate (2 n^3 FLOPs per call) and the rate per size.
   Usage: lmrt_sgemm_rate [--threads N] [--seconds S] [sizes...]   (default 1024 1536 2048) */
#include <cblas.h>

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
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (std::atoi(argv[i]) > 0)
      sizes.push_back(std::atoi(argv[i]));
    else {
      std::fprintf(stderr, "usage: lmrt_sgemm_rate [--threads N] [--seconds S] [sizes...]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 1536, 2048};
  openblas_set_num_threads(threads < 1 ? 1 : threads);
  double best = 0;
  std::string per;
  for (int n : sizes) {
    std::vector<float> a((size_t)n * n), b((size_t)n * n), c((size_t)n * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.1f, b[i] = float(i % 5) * 0.2f;
    auto call = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                  c.data(), n);
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
  std::printf("{\"sgemm_gflops\": %.2f, \"threads\": %d, \"by_size\": {%s}}\n", best, threads, per.c_str());
  return 0;
}
