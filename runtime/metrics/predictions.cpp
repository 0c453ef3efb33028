#include "runtime/metrics/predictions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "base/file_io.h"
#include "base/json.h"
#include "base/tensor.h"
#include "runtime/metrics/calibration.h"
#include "runtime/metrics/classification.h"
#include "runtime/metrics/correlation.h"
#include "runtime/metrics/rates.h"
#include "runtime/metrics/squad.h"

namespace lmrt::metrics {
namespace {

// A predictions file is text a person wrote or exported: 4 GiB bounds a path
// named by mistake (a disk image) without refusing any real evaluation set.
constexpr uint64_t kMaxPredictionBytes = uint64_t(4) << 30;

const char *const kTaskNames[] = {"auto", "classification", "regression", "squad", "calibration", "pass-at-k", "lm"};

/* What a record of each task looks like, for the errors. */
const char *recordShape(Task task) {
  switch (task) {
    case Task::Classification: return "{\"label\": 2, \"prediction\": 1} or {\"label\": 2, \"logits\": [0.1, -1.2, 2.0]}";
    case Task::Regression: return "{\"label\": 3.8, \"prediction\": 3.1}";
    case Task::Squad: return "{\"prediction\": \"text\", \"answers\": [\"gold\", \"other gold\"]}";
    case Task::Calibration: return "{\"label\": 1, \"logits\": [0.3, 2.1]}";
    case Task::PassAtK: return "{\"n\": 200, \"correct\": 13} or {\"results\": [true, false, ...]}";
    case Task::LanguageModel: return "{\"nll\": 4213.7, \"tokens\": 1024, \"bytes\": 2301}";
    case Task::Auto: break;
  }
  return "";
}

/* One line's record, and where it came from for errors. */
struct Record {
  const std::string *path;
  int64_t line;
  json::Value value;

  [[noreturn]] void error(const std::string &what, Task task) const {
    std::string shape = task == Task::Auto ? "" : std::string(" (a ") + taskName(task) + " record is " + recordShape(task) + ")";
    fail("%s:%lld: %s%s", path->c_str(), (long long)line, what.c_str(), shape.c_str());
  }
  const json::Value &field(const char *name, Task task) const {
    const json::Value *v = value.find(name);
    if (!v) error(std::string("no '") + name + "' field", task);
    return *v;
  }
  void wrongKind(const char *name, const json::Value &v, const char *wanted, Task task) const {
    error(std::string("'") + name + "' is " + (v.kind == json::Value::Number ? "the number " + v.text : std::string("a ") + json::kindName(v.kind)) +
              ", not " + wanted, task);
  }
  int64_t integer(const char *name, Task task) const {
    const json::Value &v = field(name, task);
    int64_t x = 0;
    if (!v.asInt(x)) wrongKind(name, v, "an integer", task);
    return x;
  }
  double number(const json::Value &v, const char *name, Task task) const {
    if (v.kind != json::Value::Number) wrongKind(name, v, "a number", task);
    double x = std::strtod(v.text.c_str(), nullptr);
    if (!std::isfinite(x)) error(std::string("'") + name + "' " + v.text + " is out of a double's range", task);
    return x;
  }
  double number(const char *name, Task task) const { return number(field(name, task), name, task); }
  std::string string(const json::Value &v, const char *name, Task task) const {
    if (v.kind != json::Value::String) wrongKind(name, v, "a string", task);
    return v.text;
  }
  std::vector<double> numbers(const char *name, Task task) const {
    const json::Value &v = field(name, task);
    if (v.kind != json::Value::Array) wrongKind(name, v, "an array of numbers", task);
    std::vector<double> out;
    for (const json::Value &item : v.items) out.push_back(number(item, name, task));
    return out;
  }
};

std::vector<Record> readRecords(const std::string &path) {
  std::string text = readWholeFile(path, "predictions", kMaxPredictionBytes);
  std::vector<Record> records;
  int64_t line = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string body = text.substr(at, end - at);
    at = end + 1;
    ++line;
    if (body.find_first_not_of(" \t\r") == std::string::npos) continue;
    Record r{&path, line, {}};
    try {
      r.value = json::parse(body);
    } catch (const Error &e) {
      fail("%s:%lld: %s", path.c_str(), (long long)line, e.what());
    }
    if (r.value.kind != json::Value::Object)
      r.error(std::string("a record is a JSON object, not a ") + json::kindName(r.value.kind), Task::Auto);
    records.push_back(std::move(r));
  }
  if (records.empty()) fail("%s holds no records (one JSON object a line)", path.c_str());
  return records;
}

bool isIntegerField(const Record &r, const char *name) {
  const json::Value *v = r.value.find(name);
  int64_t x;
  return !v || v->asInt(x);
}

/* The task from the fields of the records, when --task is not given. */
Task inferTask(const std::vector<Record> &records, const MetricsOptions &options) {
  const Record &first = records.front();
  auto has = [&](const char *name) { return first.value.find(name) != nullptr; };
  if (has("answers")) return Task::Squad;
  if (has("nll")) return Task::LanguageModel;
  if (has("n") || has("results")) return Task::PassAtK;
  if (has("logits")) return options.calibrationPath.empty() ? Task::Classification : Task::Calibration;
  if (has("label") && has("prediction")) {
    // Integers everywhere are classes; a fraction anywhere makes it regression.
    for (const Record &r : records)
      if (!isIntegerField(r, "label") || !isIntegerField(r, "prediction")) return Task::Regression;
    return Task::Classification;
  }
  first.error("cannot tell the task from this record's fields; give --task (classification, regression, squad, "
              "calibration, pass-at-k or lm)", Task::Auto);
}

Scored scored(const Record &r, Task task) {
  Scored s{r.numbers("logits", task), r.integer("label", task)};
  if (s.logits.size() < 2) r.error("'logits' has " + std::to_string(s.logits.size()) + " values (2 or more classes)", task);
  if (s.label < 0 || s.label >= int64_t(s.logits.size()))
    r.error("'label' " + std::to_string(s.label) + " is not a class of its " + std::to_string(s.logits.size()) + " logits", task);
  return s;
}

std::vector<Scored> readScored(const std::vector<Record> &records, Task task) {
  std::vector<Scored> out;
  for (const Record &r : records) {
    out.push_back(scored(r, task));
    if (out.back().logits.size() != out.front().logits.size())
      r.error("'logits' has " + std::to_string(out.back().logits.size()) + " classes, the first record " +
                  std::to_string(out.front().logits.size()), task);
  }
  return out;
}

void classification(const std::vector<Record> &records, const MetricsOptions &options, MetricsReport &report) {
  Task task = Task::Classification;
  std::vector<int64_t> labels, predictions;
  std::vector<Scored> withLogits;
  for (const Record &r : records) {
    bool logits = r.value.find("logits"), prediction = r.value.find("prediction");
    if (logits == prediction) r.error(logits ? "both 'prediction' and 'logits' (give one)" : "no 'prediction' or 'logits'", task);
    if (logits) {
      withLogits.push_back(scored(r, task));
      labels.push_back(withLogits.back().label);
      predictions.push_back(argmax(withLogits.back().logits));
    } else {
      labels.push_back(r.integer("label", task));
      predictions.push_back(r.integer("prediction", task));
    }
  }
  std::set<int64_t> classes(labels.begin(), labels.end());
  classes.insert(predictions.begin(), predictions.end());
  report.summary = std::to_string(classes.size()) + " classes";
  auto &v = report.values;
  v.push_back({"accuracy", accuracy(labels, predictions), ""});
  bool binary = classes.size() <= 2 && *classes.begin() >= 0 && *classes.rbegin() <= 1;
  if (binary) v.push_back({"f1", f1Binary(labels, predictions), "binary: class 1 is the positive class"});
  v.push_back({"f1_macro", f1Macro(labels, predictions), "mean over the classes in labels or predictions"});
  v.push_back({"f1_micro", f1Micro(labels, predictions), ""});
  v.push_back({"mcc", matthews(labels, predictions), "Matthews correlation"});
  // Logits on every record give the calibration numbers too, at temperature 1.
  if (withLogits.size() == records.size()) {
    v.push_back({"nll", negativeLogLikelihood(withLogits), "nats per example"});
    v.push_back({"ece", expectedCalibrationError(withLogits, 1.0, options.bins), std::to_string(options.bins) + " bins"});
  }
}

void regression(const std::vector<Record> &records, MetricsReport &report) {
  std::vector<double> labels, predictions;
  for (const Record &r : records) {
    labels.push_back(r.number("label", Task::Regression));
    predictions.push_back(r.number("prediction", Task::Regression));
  }
  if (records.size() < 2) fail("%s: correlations need 2 or more records, it holds 1", report.path.c_str());
  const char *constant = "undefined (NaN): the labels or the predictions are constant";
  double r = pearson(labels, predictions), rho = spearman(labels, predictions);
  report.values.push_back({"pearson", r, std::isnan(r) ? constant : ""});
  report.values.push_back({"spearman", rho, std::isnan(rho) ? constant : "ties take their mean rank"});
}

/* evaluate-v2.0.py's find_best_thresh: the records in increasing no-answer
   score (`na`, a stable sort: file order among ties) each switched from "no
   answer" to its prediction in turn; the best total score on the way and the
   no-answer score at which it is reached (0 if never above answering none). */
std::pair<double, double> bestThreshold(const std::vector<double> &score, const std::vector<double> &na,
                                        const std::vector<int> &hasAnswer, const std::vector<bool> &answered) {
  double current = 0;
  for (int has : hasAnswer) current += has ? 0 : 1;
  double best = current, threshold = 0.0;
  std::vector<size_t> order(score.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return na[a] < na[b]; });
  for (size_t i : order) {
    current += hasAnswer[i] ? score[i] : answered[i] ? -1 : 0;
    if (current > best) best = current, threshold = na[i];
  }
  return {best / double(score.size()), threshold};
}

/* SQuAD v2.0 (evaluate-v2.0.py): a record whose answers are empty (or
   normalise to nothing) is unanswerable, and an empty prediction is the answer
   "no answer"; exact and F1 over all records, then over the answerable
   (HasAns_*) and the unanswerable (NoAns_*) ones. With a no-answer score on
   every line (`null_score_diff`, as lmrt eval writes it, as HF's
   null_odds file is the script's --na-prob-file), also its best thresholds
   (best_exact, best_f1 and their thresholds). */
void squadV2(const std::vector<Record> &records, MetricsReport &report,
             const std::vector<std::pair<std::string, std::vector<std::string>>> &scored,
             const std::vector<double> &noAnswerScores) {
  double em[2] = {0, 0}, f1[2] = {0, 0};  // [unanswerable, answerable]
  int64_t n[2] = {0, 0};
  std::vector<double> exactRaw, f1Raw;
  std::vector<int> hasAnswer;
  std::vector<bool> answered;
  for (const auto &[prediction, answers] : scored) {
    const std::vector<std::string> gold = goldAnswersV2(answers);
    const int has = gold.size() > 1 || !gold[0].empty();
    double e = 0, f = 0;
    for (const std::string &g : gold) {
      e = std::max(e, exactMatch(prediction, g));
      f = std::max(f, tokenF1V2(prediction, g));
    }
    em[has] += e, f1[has] += f, ++n[has];
    exactRaw.push_back(e), f1Raw.push_back(f), hasAnswer.push_back(has), answered.push_back(!prediction.empty());
  }
  const double total = double(records.size());
  auto &v = report.values;
  report.summary = "SQuAD v2.0: " + std::to_string(n[1]) + " answerable, " + std::to_string(n[0]) + " unanswerable";
  v.push_back({"exact_match", (em[0] + em[1]) / total, "SQuAD v2.0's exact; x100 for the official script's scale"});
  v.push_back({"f1", (f1[0] + f1[1]) / total, "token F1, best over the gold answers; 'no answer' is the empty string"});
  const char *names[2] = {"NoAns", "HasAns"};
  for (int has : {1, 0}) {
    if (n[has] == 0) continue;  // as the official script, a group without records is left out
    v.push_back({std::string(names[has]) + "_exact", em[has] / double(n[has]), ""});
    v.push_back({std::string(names[has]) + "_f1", f1[has] / double(n[has]), ""});
    v.push_back({std::string(names[has]) + "_total", double(n[has]), "records"});
  }
  if (noAnswerScores.empty()) return;
  const auto [bestExact, exactThreshold] = bestThreshold(exactRaw, noAnswerScores, hasAnswer, answered);
  const auto [bestF1, f1Threshold] = bestThreshold(f1Raw, noAnswerScores, hasAnswer, answered);
  v.push_back({"best_exact", bestExact, "answering 'no answer' where null_score_diff > best_exact_thresh"});
  v.push_back({"best_exact_thresh", exactThreshold, "a null_score_diff"});
  v.push_back({"best_f1", bestF1, "answering 'no answer' where null_score_diff > best_f1_thresh"});
  v.push_back({"best_f1_thresh", f1Threshold, "a null_score_diff"});
}

void squad(const std::vector<Record> &records, MetricsReport &report) {
  Task task = Task::Squad;
  std::vector<std::pair<std::string, std::vector<std::string>>> scored;
  std::vector<double> noAnswer;  // null_score_diff: on every line or on none
  bool v2 = false;
  for (const Record &r : records) {
    if (const json::Value *d = r.value.find("null_score_diff")) {
      if (noAnswer.size() != scored.size())
        r.error("has a 'null_score_diff', and the lines before it have none (give it on every line or on none)",
                task);
      noAnswer.push_back(r.number(*d, "null_score_diff", task));
    } else if (!noAnswer.empty()) {
      r.error("has no 'null_score_diff', and the lines before it have one (give it on every line or on none)", task);
    }
    std::string prediction = r.string(r.field("prediction", task), "prediction", task);
    const json::Value &list = r.field("answers", task);
    if (list.kind != json::Value::Array) r.wrongKind("answers", list, "an array of strings", task);
    std::vector<std::string> answers;
    for (const json::Value &a : list.items) answers.push_back(r.string(a, "answers", task));
    v2 |= answers.empty();
    scored.push_back({prediction, answers});
  }
  // An unanswerable record (no gold answer) makes the file SQuAD v2.0's.
  if (v2) return squadV2(records, report, scored, noAnswer);
  double em = 0, f1 = 0;
  for (const auto &[prediction, answers] : scored) {
    em += bestExactMatch(prediction, answers);
    f1 += bestTokenF1(prediction, answers);
  }
  report.values.push_back({"exact_match", em / records.size(), "SQuAD v1.1 normalisation; x100 for the official script's scale"});
  report.values.push_back({"f1", f1 / records.size(), "token F1, best over the gold answers"});
}

void calibration(const std::vector<Record> &records, const MetricsOptions &options, MetricsReport &report) {
  std::vector<Scored> test = readScored(records, Task::Calibration);
  report.summary = std::to_string(test.front().logits.size()) + " classes";
  std::vector<int64_t> labels, predictions;
  for (const Scored &s : test) {
    labels.push_back(s.label);
    predictions.push_back(argmax(s.logits));
  }
  auto &v = report.values;
  v.push_back({"accuracy", accuracy(labels, predictions), ""});
  v.push_back({"nll", negativeLogLikelihood(test), "nats per example, temperature 1"});
  v.push_back({"ece", expectedCalibrationError(test, 1.0, options.bins), std::to_string(options.bins) + " bins, temperature 1"});
  if (options.calibrationPath.empty()) return;
  std::vector<Record> valRecords = readRecords(options.calibrationPath);
  std::vector<Scored> val = readScored(valRecords, Task::Calibration);
  if (val.front().logits.size() != test.front().logits.size())
    fail("%s has %zu classes, %s %zu", options.calibrationPath.c_str(), val.front().logits.size(), report.path.c_str(),
         test.front().logits.size());
  double t = fitTemperature(val);
  std::string fitted = "fitted on " + options.calibrationPath + " (" + std::to_string(val.size()) + " records)";
  if (t <= kMinTemperature * (1 + 1e-9) || t >= kMaxTemperature * (1 - 1e-9)) fitted += "; at the search's bound";
  v.push_back({"temperature", t, fitted});
  v.push_back({"nll_scaled", negativeLogLikelihood(test, t), "at the fitted temperature"});
  v.push_back({"ece_scaled", expectedCalibrationError(test, t, options.bins), "at the fitted temperature"});
}

void passAtKReport(const std::vector<Record> &records, const MetricsOptions &options, MetricsReport &report) {
  Task task = Task::PassAtK;
  std::vector<std::pair<int64_t, int64_t>> problems;  // (n, c)
  int64_t fewest = INT64_MAX;
  for (const Record &r : records) {
    int64_t n, c;
    if (const json::Value *results = r.value.find("results")) {
      if (results->kind != json::Value::Array) r.wrongKind("results", *results, "an array of booleans", task);
      n = int64_t(results->items.size());
      c = 0;
      for (const json::Value &item : results->items) {
        if (item.kind != json::Value::Bool) r.wrongKind("results", item, "a boolean", task);
        c += item.b;
      }
    } else {
      n = r.integer("n", task);
      c = r.integer("correct", task);
    }
    if (n < 1) r.error("a problem with " + std::to_string(n) + " samples", task);
    if (c < 0 || c > n) r.error(std::to_string(c) + " correct of " + std::to_string(n) + " samples", task);
    for (int64_t k : options.k)
      if (k > n)
        r.error("pass@" + std::to_string(k) + " needs at least " + std::to_string(k) + " samples a problem, this one has " +
                    std::to_string(n), task);
    problems.push_back({n, c});
    fewest = std::min(fewest, n);
  }
  std::vector<int64_t> ks = options.k;
  if (ks.empty())
    for (int64_t k : {1, 10, 100})
      if (k <= fewest) ks.push_back(k);
  report.summary = std::to_string(problems.size()) + " problems, at least " + std::to_string(fewest) + " samples each";
  for (int64_t k : ks) {
    double sum = 0;
    for (auto [n, c] : problems) sum += passAtK(n, c, k);
    report.values.push_back({"pass@" + std::to_string(k), sum / problems.size(), "unbiased estimator, mean over problems"});
  }
}

void languageModel(const std::vector<Record> &records, MetricsReport &report) {
  Task task = Task::LanguageModel;
  double nll = 0, tokens = 0, bytes = 0;
  bool allBytes = true;
  for (const Record &r : records) {
    nll += r.number("nll", task);
    int64_t t = r.integer("tokens", task);
    if (t < 0) r.error("'tokens' is negative", task);
    tokens += double(t);
    if (r.value.find("bytes")) {
      int64_t b = r.integer("bytes", task);
      if (b < 0) r.error("'bytes' is negative", task);
      bytes += double(b);
    } else {
      allBytes = false;
    }
  }
  report.summary = std::to_string(int64_t(tokens)) + " tokens";
  report.values.push_back({"nll_per_token", nll / tokens, "nats"});
  report.values.push_back({"perplexity", perplexity(nll, tokens), "exp(nll / tokens)"});
  if (allBytes)
    report.values.push_back({"bits_per_byte", bitsPerByte(nll, bytes), "nll / ln 2 / bytes"});
}

std::string formatNumber(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

}  // namespace

Task parseTask(const std::string &name) {
  for (int t = 1; t < int(sizeof kTaskNames / sizeof *kTaskNames); ++t)
    if (name == kTaskNames[t]) return Task(t);
  fail("--task '%s' is not one of classification, regression, squad, calibration, pass-at-k, lm", name.c_str());
}

const char *taskName(Task task) { return kTaskNames[int(task)]; }

MetricsReport computeMetrics(const std::string &path, const MetricsOptions &options) {
  for (int64_t k : options.k)
    if (k < 1) fail("--k %lld: k is at least 1", (long long)k);
  std::vector<Record> records = readRecords(path);
  MetricsReport report;
  report.path = path;
  report.records = int64_t(records.size());
  report.task = options.task == Task::Auto ? inferTask(records, options) : options.task;
  if (!options.calibrationPath.empty() && report.task != Task::Calibration)
    fail("--calibrate fits a temperature for --task calibration, not %s", taskName(report.task));
  switch (report.task) {
    case Task::Classification: classification(records, options, report); break;
    case Task::Regression: regression(records, report); break;
    case Task::Squad: squad(records, report); break;
    case Task::Calibration: calibration(records, options, report); break;
    case Task::PassAtK: passAtKReport(records, options, report); break;
    case Task::LanguageModel: languageModel(records, report); break;
    case Task::Auto: break;
  }
  return report;
}

std::string formatTable(const MetricsReport &r) {
  std::string out = "predictions: " + r.path + ", " + std::to_string(r.records) + " records (" + taskName(r.task) +
                    (r.summary.empty() ? "" : ", " + r.summary) + ")\n";
  size_t width = 6;
  for (const MetricValue &m : r.values) width = std::max(width, m.name.size());
  for (const MetricValue &m : r.values) {
    std::string line = m.name + std::string(width - m.name.size() + 2, ' ') + formatNumber(m.value);
    if (!m.note.empty()) line += std::string(line.size() < width + 14 ? width + 14 - line.size() : 1, ' ') + "  " + m.note;
    out += line + "\n";
  }
  return out;
}

std::string formatJson(const MetricsReport &r) {
  // %.17g: every digit a double holds, so a reader recovers the value exactly.
  std::string out = "{\"task\": " + json::quote(taskName(r.task)) + ", \"predictions\": " + json::quote(r.path) +
                    ", \"records\": " + std::to_string(r.records) + ", \"metrics\": {";
  std::string notes;
  for (size_t i = 0; i < r.values.size(); ++i) {
    const MetricValue &m = r.values[i];
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", m.value);
    out += (i ? ", " : "") + json::quote(m.name) + ": " + (std::isfinite(m.value) ? std::string(buf) : "null");
    if (!m.note.empty()) notes += (notes.empty() ? "" : ", ") + json::quote(m.name) + ": " + json::quote(m.note);
  }
  return out + "}, \"notes\": {" + notes + "}}\n";
}

}  // namespace lmrt::metrics
