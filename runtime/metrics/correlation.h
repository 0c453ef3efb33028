/* Implements: Pearson and Spearman correlation for `lmrt metrics --task
   regression`, as scipy.stats.pearsonr and spearmanr compute them. Both throw
   lmrt::Error on empty input or vectors of different lengths. */
#pragma once
#include <vector>

namespace lmrt::metrics {

/* Pearson's r: cov(x, y) / (sd(x)·sd(y)), from centred sums (two passes, so a
   large common offset costs no precision). NaN when either vector is constant:
   the correlation is undefined there (0/0), and scipy returns NaN too, rather
   than a number a reader might take for "uncorrelated". Needs 2 or more values. */
double pearson(const std::vector<double> &x, const std::vector<double> &y);

/* Spearman's rho: Pearson's r of the ranks, tied values taking the mean of the
   ranks they span (scipy.stats.rankdata's "average"). NaN as for pearson when
   either vector is constant. */
double spearman(const std::vector<double> &x, const std::vector<double> &y);

/* 1-based ranks, ties averaged. */
std::vector<double> averageRanks(const std::vector<double> &values);

}  // namespace lmrt::metrics
