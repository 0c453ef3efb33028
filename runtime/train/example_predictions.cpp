/* Implements: predictions of the example transforms (see example_predictions.h). */
#include "runtime/train/example_predictions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "base/tensor.h"
#include "contract/contract.h"
#include "runtime/data/example_batches.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/program_io.h"
#include "runtime/train/sequence_predictions.h"

namespace lmrt {

std::string predictionProgram(const Session &s) {
  if (s.hasProgram("forward")) return "forward";
  std::string found;
  int n = 0;
  for (const plan::Program &p : s.plan().programs())
    if (p.name().rfind("forward:", 0) == 0) found = p.name(), ++n;
  if (n != 1)
    fail("--predictions needs a plan with one model (its forward program gives the logits); this plan has %d", n);
  return found;
}

const plan::Program &predictionForward(const Session &s, const std::string &name, std::string &output) {
  const plan::Program &program = findProgram(s, name);
  if (program.outputs_size() != 1)
    fail("--predictions: program '%s' has %d outputs; the model must return one tensor (the logits)", name.c_str(),
         program.outputs_size());
  output = program.outputs(0).name();
  return program;
}

double valueAt(const TensorRef &t, size_t i) {
  if (t.type.dtype == DType::F32) return reinterpret_cast<const float *>(t.data)[i];
  if (t.type.dtype == DType::F64) return reinterpret_cast<const double *>(t.data)[i];
  fail("the forward program's output is %s, not a float tensor", t.type.str().c_str());
}

namespace {

/* A span record's best answer over its windows. */
struct SpanBest {
  double score = -INFINITY;
  int64_t window = 0, start = 0, end = 0;  // the window's gold row positions (start_positions, end_positions)
  int64_t predStart = -1, predEnd = -1;    // row positions of the answer in that window (-1: none)
  int64_t first = 0, last = -1;            // the answer's context tokens
  double null = INFINITY;                  // SQuAD v2: the least [CLS] start + end logit over the windows
};

/* Weighs window `window` of record `rec` (logits y from cell `base` on:
   the window's row, or its part of a packed row; `positions` of them, the
   row's or the packed example's): the positions s <= e of its context
   maximizing start_logit[s] + end_logit[e]. Without a doc stride every pair
   of the kept context, with no length limit (one window, as before windows
   existed); with one, HF's postprocess_qa_predictions: pairs among the 20
   largest start and the 20 largest end logits of the row (of a packed
   example: of its own positions), e - s + 1 <= 30, the best over the
   windows. `gold`: the window's start and end positions, as its padded row
   has them. */
void weighSpanWindow(const ExampleBatcher &ex, uint64_t rec, int64_t window, const TensorRef &y, int64_t base,
                     int64_t positions, const int32_t gold[2], SpanBest &best) {
  constexpr int64_t kNBest = 20, kMaxAnswer = 30;
  const int64_t seq = positions;
  int64_t contextStart, kept, windowStart;
  ex.spanRow(ex.valShard(), rec, contextStart, kept, window, &windowStart);
  auto logit = [&](int64_t t, int k) { return valueAt(y, (size_t)((base + t) * 2 + k)); };
  best.null = std::min(best.null, logit(0, 0) + logit(0, 1));
  auto consider = [&](int64_t s, int64_t e) {
    if (double v = logit(s, 0) + logit(e, 1); v > best.score) {
      const double null = best.null;
      best = SpanBest{v, window, gold[0], gold[1], s, e, s - contextStart + windowStart, e - contextStart + windowStart};
      best.null = null;
    }
  };
  const int64_t lo = contextStart, hi = contextStart + kept;  // the window's context positions [lo, hi)
  if (!ex.docStride()) {
    for (int64_t s = lo; s < hi; ++s)
      for (int64_t e = s; e < hi; ++e) consider(s, e);
    return;
  }
  auto top = [&](int k) {  // the row's kNBest positions by logit k, largest first
    std::vector<int64_t> idx((size_t)seq);
    for (int64_t t = 0; t < seq; ++t) idx[(size_t)t] = t;
    const int64_t n = std::min(kNBest, seq);
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(),
                      [&](int64_t a, int64_t b) { return logit(a, k) > logit(b, k); });
    idx.resize((size_t)n);
    return idx;
  };
  for (int64_t s : top(0))
    for (int64_t e : top(1))
      if (s >= lo && s < hi && e >= lo && e < hi && e >= s && e - s + 1 <= kMaxAnswer) consider(s, e);
}

/* A span record's line: its best answer as text, and the gold answer. With
   `v2` (SQuAD v2: the split has unanswerable records) the answer is "no
   answer" (empty, at [CLS]) when the null score minus the best answer's
   exceeds `threshold` (HF's null_score_diff_threshold), and an unanswerable
   record's gold answers are []. */
std::string spanLine(const ExampleBatcher &ex, uint64_t rec, SpanBest best, bool v2, double threshold) {
  const ExampleShard &shard = ex.valShard();
  int64_t first, last;
  shard.span(rec, ex.spanField(), first, last);
  std::string diff;
  if (v2) {
    const double d = best.null - best.score;  // +inf without any answer
    char buf[64];
    std::snprintf(buf, sizeof buf, ", \"null_score_diff\": %.9g", std::isfinite(d) ? d : 1e300);
    diff = buf;
    if (d > threshold) best.predStart = best.predEnd = 0, best.first = 0, best.last = -1;
  }
  std::vector<int32_t> context;
  shard.text(rec, ex.contextField(), context);
  auto bytes = [&](int64_t a, int64_t b) {  // context tokens [a, b] as text (byte data)
    std::string t;
    for (int64_t i = a; i <= b; ++i) t += (char)context[(size_t)i];
    return t;
  };
  return "{\"record\": " + std::to_string(rec) +
         (ex.docStride() ? ", \"window\": " + std::to_string(best.window) : std::string()) +
         ", \"start\": " + std::to_string(best.start) + ", \"end\": " + std::to_string(best.end) +
         ", \"pred_start\": " + std::to_string(best.predStart) + ", \"pred_end\": " + std::to_string(best.predEnd) +
         ", \"prediction\": " + json::quote(bytes(best.first, best.last)) + ", \"answers\": [" +
         (first < 0 ? std::string() : json::quote(bytes(first, last))) + "]" + diff + "}";
}

}  // namespace

uint64_t writeExamplePredictions(Session &s, const std::string &dataDir, uint64_t seed, const std::string &path,
                                 double nullScoreDiffThreshold) {
  const std::string transform = s.plan().data().transform();
  if (transform == "tokens" || transform == "sft" || transform == "preference")
    return writeSequencePredictions(s, dataDir, seed, path);
  if (transform != "classify" && transform != "regression" && transform != "span")
    fail("--predictions writes the predictions of a classify, regression, span, tokens, sft or preference plan "
         "(and lmrt eval those of a seq2seq plan; docs/finetuning.md); this plan's transform is '%s'",
         transform.c_str());
  DataFeed data(s, dataDir, seed, /*evalOn=*/true);
  const ExampleBatcher &ex = *data.examples();
  ex.checkValidation();
  const std::string name = predictionProgram(s);
  std::string output;
  const plan::Program &program = predictionForward(s, name, output);
  const int64_t rows = data.rows();
  const bool classify = transform == "classify", span = transform == "span";
  const uint64_t records = ex.valShard().records();
  const int labelField = span       ? -1
                         : classify ? ex.valShard().fieldsOf(FieldKind::Label)[0]
                                    : ex.valShard().fieldsOf(FieldKind::Target)[0];
  std::string out;
  char buf[64];
  SpanBest spanBest;
  // SQuAD v2: a validation record without an answer makes every record's
  // prediction weigh "no answer" too.
  bool v2 = false;
  for (uint64_t r = 0; span && r < records; ++r) {
    int64_t first, last;
    ex.valShard().span(r, ex.spanField(), first, last);
    v2 |= first < 0;
  }
  for (uint64_t b = 0; b < ex.valBatches(); ++b) {
    const std::map<std::string, TensorRef> &all = data.valInputs(b);
    std::map<std::string, TensorRef> feed;
    for (const plan::Input &in : program.inputs()) {
      auto it = all.find(in.name());
      if (it == all.end())
        fail("--predictions: program '%s' reads '%s', which the %s transform does not produce", name.c_str(),
             in.name().c_str(), transform.c_str());
      feed[in.name()] = it->second;
    }
    s.run(name, feed);
    TensorRef y = s.output(name, output);
    if (span) {
      const std::vector<int64_t> &shape = y.type.shape;
      if (shape.size() != 3 || shape[0] != rows || shape[1] != s.plan().data().seq() || shape[2] != 2)
        fail("--predictions: output '%s' is %s; span needs [%lld, %lld, 2] (each position's start and end logit)",
             output.c_str(), y.type.str().c_str(), (long long)rows, (long long)s.plan().data().seq());
      // Row u of validation is unit u: record u, or with a doc stride
      // feature u (a record's windows in order); packed, slot k of row g is
      // the row's k-th unit (validation packs them in file order). A
      // record's line follows its last window.
      const int64_t seq = s.plan().data().seq();
      auto input = [&](const char *name) {
        auto it = all.find(name);
        if (it == all.end())
          fail("--predictions: a span plan's objective must read '%s' (the gold answer's position)", name);
        return reinterpret_cast<const int32_t *>(it->second.data);
      };
      const bool packed = ex.packed();
      const int32_t *starts = input(packed ? "example_start_positions" : "start_positions");
      const int32_t *ends = input(packed ? "example_end_positions" : "end_positions");
      auto weigh = [&](uint64_t u, int64_t base, int64_t positions, int32_t start, int32_t end) {
        const uint64_t rec = ex.docStride() ? ex.valFeatures()[u].record : u;
        const int64_t window = ex.docStride() ? ex.valFeatures()[u].window : 0;
        if (window == 0) spanBest = SpanBest();
        const int32_t gold[2] = {start, end};
        weighSpanWindow(ex, rec, window, y, base, positions, gold, spanBest);
        const bool lastWindow = u + 1 == ex.valUnits() || !ex.docStride() || ex.valFeatures()[u + 1].window == 0;
        if (lastWindow) out += spanLine(ex, rec, spanBest, v2, nullScoreDiffThreshold) + "\n";
      };
      for (int64_t r = 0; r < rows; ++r) {
        const uint64_t g = b * (uint64_t)rows + (uint64_t)r;
        if (!packed) {
          if (g >= ex.valUnits()) break;
          weigh(g, r * seq, seq, starts[r], ends[r]);
          continue;
        }
        const PackedRows &p = ex.valRows();
        if (g >= p.rows()) break;
        int64_t at = 0;  // the example's first position in the row
        for (uint64_t k = 0; k < p.start[g + 1] - p.start[g]; ++k) {
          const uint64_t u = p.records[p.start[g] + k];
          const ExampleBatcher::Feature f =
              ex.docStride() ? ex.valFeatures()[u] : ExampleBatcher::Feature{u, 0};
          const int64_t len = ex.spanLength(ex.valShard(), f.record, f.window), slot = r * seq + (int64_t)k;
          weigh(u, r * seq + at, len, starts[slot] - (int32_t)at, ends[slot] - (int32_t)at);
          at += len;
        }
      }
      continue;
    }
    // Padded: [rows(, C)], row r is a record. Packed: [rows, seq(, C)],
    // slot k of row r is the row's k-th record (validation packs in file
    // order, so the lines come in record order as padded).
    const std::vector<int64_t> &shape = y.type.shape;
    const bool packed = ex.packed();
    const size_t lead = packed ? 2 : 1;
    const int64_t seq = s.plan().data().seq();
    const int64_t width = shape.size() == lead + 1 ? shape[lead] : 1;
    if (shape.size() < lead || shape[0] != rows || (packed && shape[1] != seq) || shape.size() > lead + 1 ||
        (!classify && width != 1))
      fail("--predictions: output '%s' is %s; %s%s needs [%lld%s%s]", output.c_str(), y.type.str().c_str(),
           transform.c_str(), packed ? " with pack = true" : "", (long long)rows,
           packed ? (", " + std::to_string(seq)).c_str() : "", classify ? ", classes" : "(, 1)");
    auto line = [&](uint64_t rec, size_t at) {  // `at`: the record's first output value
      out += "{\"record\": " + std::to_string(rec) + ", \"label\": ";
      if (classify) {
        out += std::to_string(ex.valShard().label(rec, labelField)) + ", \"logits\": [";
        for (int64_t c = 0; c < width; ++c) {
          std::snprintf(buf, sizeof buf, "%s%.9g", c ? ", " : "", valueAt(y, at + (size_t)c));
          out += buf;
        }
        out += "]}\n";
      } else {
        std::snprintf(buf, sizeof buf, "%.17g, \"prediction\": %.9g}\n", ex.valShard().target(rec, labelField),
                      valueAt(y, at));
        out += buf;
      }
    };
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t g = b * (uint64_t)rows + (uint64_t)r;
      if (!packed) {
        if (g >= records) break;
        line(g, (size_t)(r * width));
        continue;
      }
      const PackedRows &p = ex.valRows();
      if (g >= p.rows()) break;
      for (uint64_t k = 0; k < p.start[g + 1] - p.start[g]; ++k)
        line(p.records[p.start[g] + k], (size_t)((r * seq + (int64_t)k) * width));
    }
  }
  if (!path.empty()) writeFileAtomic(path, "predictions", [&](std::ostream &f) { f << out; });
  return records;
}

}  // namespace lmrt
