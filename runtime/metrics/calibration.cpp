#include "runtime/metrics/calibration.h"

#include <algorithm>
#include <cmath>

#include "base/tensor.h"
#include "runtime/metrics/classification.h"

namespace lmrt::metrics {
namespace {

void checkExamples(const std::vector<Scored> &examples, const char *what) {
  if (examples.empty()) fail("%s of no examples", what);
  for (size_t i = 0; i < examples.size(); ++i) {
    const Scored &e = examples[i];
    if (e.logits.size() < 2) fail("%s: example %zu has %zu logits (needs 2 or more classes)", what, i + 1, e.logits.size());
    if (e.label < 0 || e.label >= int64_t(e.logits.size()))
      fail("%s: example %zu has label %lld outside its %zu classes", what, i + 1, (long long)e.label, e.logits.size());
  }
}

/* softmax(z·β) of one example, with log Σ exp taken around the largest term. */
std::vector<double> softmax(const std::vector<double> &z, double beta) {
  double top = *std::max_element(z.begin(), z.end()) * beta, sum = 0;
  std::vector<double> p(z.size());
  for (size_t c = 0; c < z.size(); ++c) sum += p[c] = std::exp(z[c] * beta - top);
  for (double &v : p) v /= sum;
  return p;
}

double nllAtBeta(const std::vector<Scored> &examples, double beta) {
  double total = 0;
  for (const Scored &e : examples) {
    double top = *std::max_element(e.logits.begin(), e.logits.end()) * beta, sum = 0;
    for (double z : e.logits) sum += std::exp(z * beta - top);
    total += top + std::log(sum) - e.logits[e.label] * beta;
  }
  return total / examples.size();
}

}  // namespace

double negativeLogLikelihood(const std::vector<Scored> &examples, double temperature) {
  checkExamples(examples, "negative log-likelihood");
  if (!(temperature > 0)) fail("temperature %g is not positive", temperature);
  return nllAtBeta(examples, 1.0 / temperature);
}

double expectedCalibrationError(const std::vector<Scored> &examples, double temperature, int bins) {
  checkExamples(examples, "expected calibration error");
  if (!(temperature > 0)) fail("temperature %g is not positive", temperature);
  if (bins < 1) fail("expected calibration error with %d bins", bins);
  std::vector<double> count(bins), correct(bins), confidence(bins);
  for (const Scored &e : examples) {
    std::vector<double> p = softmax(e.logits, 1.0 / temperature);
    int64_t predicted = argmax(p);
    double conf = p[predicted];
    // The first bin whose upper edge (m+1)/bins is >= conf: bins are (lo, hi].
    int m = 0;
    while (m < bins - 1 && conf > double(m + 1) / bins) ++m;
    count[m] += 1;
    correct[m] += predicted == e.label;
    confidence[m] += conf;
  }
  double ece = 0;
  for (int m = 0; m < bins; ++m)
    if (count[m] > 0) ece += std::fabs(correct[m] - confidence[m]) / examples.size();
  return ece;
}

double fitTemperature(const std::vector<Scored> &validation) {
  checkExamples(validation, "temperature scaling");
  auto nllAtLogT = [&](double logT) { return nllAtBeta(validation, std::exp(-logT)); };
  // Golden-section search over log T: the NLL is unimodal there (convex in β = e^{−log T}).
  const double invPhi = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(kMinTemperature), b = std::log(kMaxTemperature);
  double c = b - invPhi * (b - a), d = a + invPhi * (b - a);
  double fc = nllAtLogT(c), fd = nllAtLogT(d);
  while (b - a > 1e-7) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - invPhi * (b - a), fc = nllAtLogT(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + invPhi * (b - a), fd = nllAtLogT(d);
    }
  }
  double beta = std::exp(-(a + b) / 2);
  // Newton on β: g = mean(E_p[z] − z_label), h = mean(Var_p[z]) > 0. Accepted only
  // while it stays within the bounds and lowers the NLL (a minimum on a bound stays there).
  for (int step = 0; step < 8; ++step) {
    double g = 0, h = 0;
    for (const Scored &e : validation) {
      std::vector<double> p = softmax(e.logits, beta);
      double mean = 0, var = 0;
      for (size_t k = 0; k < p.size(); ++k) mean += p[k] * e.logits[k];
      for (size_t k = 0; k < p.size(); ++k) var += p[k] * (e.logits[k] - mean) * (e.logits[k] - mean);
      g += mean - e.logits[e.label];
      h += var;
    }
    if (!(h > 0)) break;
    double next = beta - g / h;
    if (!(next >= 1 / kMaxTemperature && next <= 1 / kMinTemperature)) break;
    if (nllAtBeta(validation, next) > nllAtBeta(validation, beta)) break;
    if (next == beta) break;
    beta = next;
  }
  return 1 / beta;
}

}  // namespace lmrt::metrics
