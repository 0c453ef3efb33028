/* Implements: the classification metrics of `lmrt metrics` (docs/runtime.md,
   "lmrt metrics"): accuracy, F1 (binary, macro, micro) and Matthews correlation
   from integer labels and predictions, defined as scikit-learn 1.3 defines them
   so that a number here and one from sklearn on the same predictions agree.
   Every function throws lmrt::Error on empty input or on vectors of different
   lengths: a metric of nothing is a mistake upstream, not 0. */
#pragma once
#include <cstdint>
#include <vector>

namespace lmrt::metrics {

/* The fraction of predictions equal to their label. */
double accuracy(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions);

/* F1 of class `positive` (sklearn's average="binary", pos_label=1 by default):
   2·tp / (2·tp + fp + fn), 0 when that class is never predicted nor true. */
double f1Binary(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions,
                int64_t positive = 1);

/* The unweighted mean of each class's F1 over the classes that occur in the
   labels or the predictions (sklearn's average="macro"). A class never
   predicted has precision 0 by convention (sklearn's zero_division default),
   hence F1 0: it pulls the mean down rather than being left out. */
double f1Macro(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions);

/* F1 of the summed tp, fp, fn over all classes (average="micro"); with one
   label per example it equals the accuracy. */
double f1Micro(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions);

/* Matthews correlation, multiclass (Gorodkin's R_K, sklearn's
   matthews_corrcoef): from the confusion matrix C with t = row sums, p = column
   sums, s = n samples, c = trace: (c·s − t·p) / sqrt((s² − p·p)(s² − t·t));
   0 when a denominator factor is 0 (one class only predicted, or present). */
double matthews(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions);

/* The index of the largest logit, the first on ties (numpy's argmax). */
int64_t argmax(const std::vector<double> &logits);

}  // namespace lmrt::metrics
