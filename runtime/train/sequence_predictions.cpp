/* Implements: predictions of the tokens, sft and preference transforms (see
   sequence_predictions.h). */
#include "runtime/train/sequence_predictions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "base/file_io.h"
#include "base/tensor.h"
#include "contract/contract.h"
#include "runtime/data/example_batches.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/example_predictions.h"
#include "runtime/train/program_io.h"

namespace lmrt {

namespace {

/* What a record's example (one side of a preference pair) scored. */
struct Scores {
  std::vector<int64_t> gold, pred;  // tokens: the tag of each labelled position, and the argmax
  double nll = 0;                   // sft, DPO: minus the summed log-probs of the labelled tokens
  int64_t tokens = 0, right = 0;    // labelled tokens, and those whose argmax is the label
  double value = 0;                 // reward model: the example's reward
};

/* Swaps every parameter P with ref.P (DPO's frozen reference): the forward
   program of the policy then computes the reference. Returns how many. */
size_t swapReference(Session &s) {
  size_t n = 0;
  for (ParamState &p : s.params()) {
    if (p.name.rfind("ref.", 0) == 0) continue;
    for (ParamState &q : s.params())
      if (q.name == "ref." + p.name && q.value.size() == p.value.size()) {
        std::vector<char> tmp(p.value.begin(), p.value.end());
        std::memcpy(p.value.data(), q.value.data(), p.value.size());
        std::memcpy(q.value.data(), tmp.data(), tmp.size());
        ++n;
      }
  }
  if (n) s.pushParams();
  return n;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

uint64_t writeSequencePredictions(Session &s, const std::string &dataDir, uint64_t seed, const std::string &path) {
  const std::string transform = s.plan().data().transform();
  if (transform != "tokens" && transform != "sft" && transform != "preference")
    fail("internal: sequence predictions of a '%s' plan", transform.c_str());
  DataFeed data(s, dataDir, seed, /*evalOn=*/true);
  const ExampleBatcher &ex = *data.examples();
  ex.checkValidation();
  const std::string name = predictionProgram(s);
  std::string output;
  const plan::Program &program = predictionForward(s, name, output);
  const int64_t rows = data.rows(), seq = s.plan().data().seq();
  const bool packed = ex.packed(), pairs = transform == "preference";
  const uint64_t records = ex.valShard().records();
  const std::vector<std::string> sides = pairs ? std::vector<std::string>{"chosen_", "rejected_"}
                                               : std::vector<std::string>{""};
  // scores[pass][side][record]: pass 1 is DPO's reference.
  std::vector<std::vector<std::vector<Scores>>> scores;
  bool lm = false;  // the output is [rows, seq, V] (token scores), else one number an example

  auto pass = [&]() {
    std::vector<std::vector<Scores>> out(sides.size(), std::vector<Scores>(records));
    for (uint64_t b = 0; b < ex.valBatches(); ++b) {
      const std::map<std::string, TensorRef> &all = data.valInputs(b);
      for (size_t side = 0; side < sides.size(); ++side) {
        // A preference plan's model reads one side: its input `ids` is chosen_ids, and so on.
        std::map<std::string, TensorRef> feed;
        for (const plan::Input &in : program.inputs()) {
          auto it = all.find(sides[side] + in.name());
          if (it == all.end()) it = all.find(in.name());
          if (it == all.end())
            fail("--predictions: program '%s' reads '%s', which the %s transform does not produce%s", name.c_str(),
                 in.name().c_str(), transform.c_str(),
                 pairs ? (" (nor " + sides[side] + in.name() + ")").c_str() : "");
          feed[in.name()] = it->second;
        }
        s.run(name, feed);
        TensorRef y = s.output(name, output);
        const std::vector<int64_t> &shape = y.type.shape;
        lm = shape.size() == 3;
        const bool ok = shape.size() >= 1 && shape[0] == rows &&
                        (lm ? shape[1] == seq
                            : transform == "preference" &&
                                  (packed ? shape.size() == 2 && shape[1] == seq
                                          : shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)));
        if (!ok)
          fail("--predictions: output '%s' is %s; a %s plan%s needs [%lld, %lld, V]%s", output.c_str(),
               y.type.str().c_str(), transform.c_str(), packed ? " with pack = true" : "", (long long)rows,
               (long long)seq,
               pairs ? (packed ? (" (token scores) or [" + std::to_string(rows) + ", " + std::to_string(seq) +
                                  "] (a reward a slot)").c_str()
                               : (" (token scores) or [" + std::to_string(rows) + "] (a reward a row)").c_str())
                     : "");
        const int64_t width = lm ? shape[2] : 1;
        const int32_t *labels =
            lm ? reinterpret_cast<const int32_t *>(all.at(sides[side] + "labels").data) : nullptr;
        const int32_t *doc =
            packed ? reinterpret_cast<const int32_t *>(all.at(sides[side] + "doc_ids").data) : nullptr;
        // Scores the k-th example of row r (padded: k = 0, the whole row).
        auto score = [&](uint64_t rec, int64_t r, int64_t k) {
          Scores &sc = out[side][rec];
          if (!lm) {
            sc.value = valueAt(y, (size_t)(packed ? r * seq + k : r));
            return;
          }
          for (int64_t t = 0; t < seq; ++t) {
            const int64_t cell = r * seq + t;
            if ((packed && doc[cell] != k) || labels[cell] == -100) continue;
            // [SEP] (and any label past the table) is the newline of the byte models.
            const int64_t label = labels[cell] >= width ? 10 : labels[cell];
            double best = -INFINITY, m = -INFINITY, z = 0;
            int64_t arg = 0;
            for (int64_t c = 0; c < width; ++c) {
              const double v = valueAt(y, (size_t)(cell * width + c));
              if (v > best) best = v, arg = c;
            }
            m = best;
            for (int64_t c = 0; c < width; ++c) z += std::exp(valueAt(y, (size_t)(cell * width + c)) - m);
            sc.nll -= valueAt(y, (size_t)(cell * width + label)) - m - std::log(z);
            sc.gold.push_back(labels[cell]);
            sc.pred.push_back(arg);
            sc.tokens += 1;
            sc.right += arg == label;
          }
        };
        for (int64_t r = 0; r < rows; ++r) {
          const uint64_t g = b * (uint64_t)rows + (uint64_t)r;
          if (!packed) {
            if (g >= records) break;
            score(g, r, 0);
            continue;
          }
          const PackedRows &p = ex.valRows();
          if (g >= p.rows()) break;
          for (uint64_t k = 0; k < p.start[g + 1] - p.start[g]; ++k) score(p.records[p.start[g] + k], r, (int64_t)k);
        }
      }
    }
    scores.push_back(std::move(out));
  };
  pass();
  // DPO: the frozen reference's log-probs, from the same forward program on ref.* swapped in.
  if (pairs && lm && swapReference(s)) {
    pass();
    swapReference(s);
  }

  std::string out;
  for (uint64_t rec = 0; rec < records; ++rec) {
    out += "{\"record\": " + std::to_string(rec);
    const Scores &a = scores[0][0][rec];
    if (transform == "tokens") {
      auto list = [](const std::vector<int64_t> &v) {
        std::string l = "[";
        for (size_t i = 0; i < v.size(); ++i) l += (i ? ", " : "") + std::to_string(v[i]);
        return l + "]";
      };
      out += ", \"labels\": " + list(a.gold) + ", \"predictions\": " + list(a.pred);
    } else if (transform == "sft") {
      out += ", \"tokens\": " + std::to_string(a.tokens) +
             ", \"loss\": " + number(a.tokens ? a.nll / (double)a.tokens : 0.0) +
             ", \"token_accuracy\": " + number(a.tokens ? (double)a.right / (double)a.tokens : 0.0);
    } else if (!lm) {
      const double c = a.value, r = scores[0][1][rec].value;
      out += ", \"chosen_reward\": " + number(c) + ", \"rejected_reward\": " + number(r) +
             ", \"margin\": " + number(c - r) + ", \"correct\": " + (c > r ? "true" : "false");
    } else {
      const double c = -a.nll, r = -scores[0][1][rec].nll;
      out += ", \"chosen_logp\": " + number(c) + ", \"rejected_logp\": " + number(r);
      double rc = c, rr = r;  // without a reference: the policy's log-probs
      if (scores.size() == 2) {
        const double refc = -scores[1][0][rec].nll, refr = -scores[1][1][rec].nll;
        out += ", \"chosen_ref_logp\": " + number(refc) + ", \"rejected_ref_logp\": " + number(refr);
        rc -= refc;
        rr -= refr;
      }
      out += ", \"chosen_reward\": " + number(rc) + ", \"rejected_reward\": " + number(rr) +
             ", \"margin\": " + number(rc - rr) + ", \"correct\": " + (rc > rr ? "true" : "false");
    }
    out += "}\n";
  }
  if (!path.empty()) writeFileAtomic(path, "predictions", [&](std::ostream &f) { f << out; });
  return records;
}

}  // namespace lmrt
