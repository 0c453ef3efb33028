#include "runtime/metrics/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/tensor.h"

namespace lmrt::metrics {

double pearson(const std::vector<double> &x, const std::vector<double> &y) {
  if (x.size() != y.size()) fail("Pearson correlation: %zu values against %zu", x.size(), y.size());
  if (x.size() < 2) fail("Pearson correlation of %zu values (needs at least 2)", x.size());
  double n = double(x.size()), mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  // Rounding can carry |r| a hair past 1 for perfectly (anti)correlated data.
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> averageRanks(const std::vector<double> &values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    // Positions start..end-1 hold equal values: each gets the mean of ranks start+1..end.
    double rank = (double(start + 1) + double(end)) / 2.0;
    for (size_t i = start; i < end; ++i) ranks[order[i]] = rank;
    start = end;
  }
  return ranks;
}

double spearman(const std::vector<double> &x, const std::vector<double> &y) {
  if (x.size() != y.size()) fail("Spearman correlation: %zu values against %zu", x.size(), y.size());
  if (x.size() < 2) fail("Spearman correlation of %zu values (needs at least 2)", x.size());
  return pearson(averageRanks(x), averageRanks(y));
}

}  // namespace lmrt::metrics
