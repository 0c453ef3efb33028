#include "runtime/metrics/classification.h"

#include <cmath>
#include <map>

#include "base/tensor.h"

namespace lmrt::metrics {
namespace {

void checkPair(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions, const char *metric) {
  if (labels.empty()) fail("%s of no examples", metric);
  if (labels.size() != predictions.size())
    fail("%s: %zu labels but %zu predictions", metric, labels.size(), predictions.size());
}

struct ClassCounts {
  int64_t tp = 0, fp = 0, fn = 0;
};

/* Per class (every class in the labels or the predictions, sorted as sklearn's
   unique_labels sorts them): true positives, false positives, false negatives. */
std::map<int64_t, ClassCounts> countByClass(const std::vector<int64_t> &labels,
                                            const std::vector<int64_t> &predictions) {
  std::map<int64_t, ClassCounts> counts;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == predictions[i]) {
      ++counts[labels[i]].tp;
    } else {
      ++counts[labels[i]].fn;
      ++counts[predictions[i]].fp;
    }
  }
  return counts;
}

double f1Of(const ClassCounts &c) {
  int64_t denom = 2 * c.tp + c.fp + c.fn;
  return denom ? 2.0 * c.tp / denom : 0.0;
}

}  // namespace

double accuracy(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions) {
  checkPair(labels, predictions, "accuracy");
  int64_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) right += labels[i] == predictions[i];
  return double(right) / labels.size();
}

double f1Binary(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions, int64_t positive) {
  checkPair(labels, predictions, "binary F1");
  ClassCounts c;
  for (size_t i = 0; i < labels.size(); ++i) {
    bool truePos = labels[i] == positive, predPos = predictions[i] == positive;
    c.tp += truePos && predPos;
    c.fp += !truePos && predPos;
    c.fn += truePos && !predPos;
  }
  return f1Of(c);
}

double f1Macro(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions) {
  checkPair(labels, predictions, "macro F1");
  std::map<int64_t, ClassCounts> counts = countByClass(labels, predictions);
  double sum = 0;
  for (const auto &[cls, c] : counts) sum += f1Of(c);
  return sum / counts.size();
}

double f1Micro(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions) {
  checkPair(labels, predictions, "micro F1");
  ClassCounts total;
  for (const auto &[cls, c] : countByClass(labels, predictions)) {
    total.tp += c.tp;
    total.fp += c.fp;
    total.fn += c.fn;
  }
  return f1Of(total);
}

double matthews(const std::vector<int64_t> &labels, const std::vector<int64_t> &predictions) {
  checkPair(labels, predictions, "Matthews correlation");
  std::map<int64_t, double> truth, predicted;  // t and p: the confusion matrix's row and column sums
  double correct = 0, n = double(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    truth[labels[i]] += 1;
    predicted[predictions[i]] += 1;
    correct += labels[i] == predictions[i];
  }
  double tp = 0, pp = 0, tt = 0;
  for (const auto &[cls, t] : truth) {
    tt += t * t;
    auto p = predicted.find(cls);
    if (p != predicted.end()) tp += t * p->second;
  }
  for (const auto &[cls, p] : predicted) pp += p * p;
  double cov = correct * n - tp, varPred = n * n - pp, varTrue = n * n - tt;
  if (varPred == 0 || varTrue == 0) return 0.0;
  return cov / std::sqrt(varTrue * varPred);
}

int64_t argmax(const std::vector<double> &logits) {
  if (logits.empty()) fail("argmax of no logits");
  int64_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = int64_t(i);
  return best;
}

}  // namespace lmrt::metrics
