/* Implements: drawing one token from a row of logits (see token_sampler.h). */
#include "runtime/train/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/tensor.h"

namespace lmrt {

void penalizeRepeats(std::vector<double> &logits, const std::vector<int32_t> &seen, double penalty) {
  if (penalty == 1.0) return;
  std::vector<bool> done(logits.size(), false);
  for (int32_t id : seen) {
    if (id < 0 || (size_t)id >= logits.size() || done[id]) continue;
    done[id] = true;
    double &l = logits[id];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

int64_t sampleToken(const std::vector<double> &logits, double temperature, int64_t topK, double u, double topP) {
  const int64_t V = (int64_t)logits.size();
  if (V == 0) fail("sampling from an empty vocabulary");
  if (temperature <= 0)
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  int64_t k = (topK > 0 && topK < V) ? topK : V;
  // Ties broken by the lower id, so the candidate set is well defined.
  auto better = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (k < V) std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
  order.resize(k);
  std::sort(order.begin(), order.end());  // a fixed order for the cumulative sum
  double mx = -INFINITY;
  for (int64_t id : order) mx = std::max(mx, logits[id]);
  std::vector<double> p(k);
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += p[i] = std::exp((logits[order[i]] - mx) / temperature);
  if (topP < 1.0) {
    // The nucleus: candidates by falling probability (ties to the lower id) until
    // their mass reaches topP; the others are dropped, the rest keep id order.
    std::vector<int64_t> byMass(k);
    std::iota(byMass.begin(), byMass.end(), 0);
    std::stable_sort(byMass.begin(), byMass.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    std::vector<bool> keep(k, false);
    double mass = 0;
    for (int64_t i = 0; i < k && (i == 0 || mass < topP * sum); ++i) keep[byMass[i]] = true, mass += p[byMass[i]];
    std::vector<int64_t> kept;
    std::vector<double> keptP;
    for (int64_t i = 0; i < k; ++i)
      if (keep[i]) kept.push_back(order[i]), keptP.push_back(p[i]);
    order.swap(kept), p.swap(keptP);
    k = (int64_t)order.size();
    sum = 0;
    for (double x : p) sum += x;
  }
  double target = u * sum, acc = 0;
  for (int64_t i = 0; i < k; ++i) {
    acc += p[i];
    if (target < acc) return order[i];
  }
  return order[k - 1];  // u * sum rounded up to the total
}

}  // namespace lmrt
