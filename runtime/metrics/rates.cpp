#include "runtime/metrics/rates.h"

#include <cmath>

#include "base/tensor.h"

namespace lmrt::metrics {

double passAtK(int64_t n, int64_t c, int64_t k) {
  if (n < 1) fail("pass@k of a problem with %lld samples", (long long)n);
  if (c < 0 || c > n) fail("pass@k: %lld passing of %lld samples", (long long)c, (long long)n);
  if (k < 1 || k > n)
    fail("pass@%lld of a problem with only %lld samples (k must be in [1, n])", (long long)k, (long long)n);
  if (n - c < k) return 1.0;
  double allFail = 1.0;  // C(n−c, k) / C(n, k)
  for (int64_t i = n - c + 1; i <= n; ++i) allFail *= 1.0 - double(k) / double(i);
  return 1.0 - allFail;
}

double perplexity(double nllNats, double tokens) {
  if (!(tokens > 0)) fail("perplexity over %g tokens", tokens);
  return std::exp(nllNats / tokens);
}

double bitsPerByte(double nllNats, double bytes) {
  if (!(bytes > 0)) fail("bits per byte over %g bytes", bytes);
  return nllNats / std::log(2.0) / bytes;
}

}  // namespace lmrt::metrics
