/* Implements: predictions of seq2seq plans (see seq2seq_predictions.h). */
#include "runtime/train/seq2seq_predictions.h"

#include <algorithm>
#include <map>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "base/tensor.h"
#include "runtime/data/example_batches.h"
#include "runtime/exec/session.h"
#include "runtime/metrics/squad.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/generate_seq2seq.h"

namespace lmrt {

namespace {

/* A byte-data field as text (the seq2seq transform reads byte data). */
std::string bytesOf(const std::vector<int32_t> &ids) {
  std::string t;
  for (int32_t c : ids) t += (char)(unsigned char)c;
  return t;
}

const TensorRef &inputOf(const std::map<std::string, TensorRef> &all, const char *name) {
  auto it = all.find(name);
  if (it == all.end()) fail("--predictions: the seq2seq transform gave no '%s'", name);
  return it->second;
}

}  // namespace

Seq2SeqScores writeSeq2SeqPredictions(Session &s, const std::string &dataDir, uint64_t seed, const std::string &path,
                                      int64_t maxTokens, bool kvCache) {
  const std::string transform = s.plan().data().transform();
  if (transform != "seq2seq") fail("writeSeq2SeqPredictions: the plan's transform is '%s'", transform.c_str());
  if (!isSeq2SeqPlan(s))
    fail("--predictions: a seq2seq plan needs its model's forward program (ids, attention_mask, decoder_ids -> "
         "logits); compile the plan with this lmc");
  const Seq2SeqForward f = seq2seqForward(s);
  DataFeed data(s, dataDir, seed, /*evalOn=*/true);
  const ExampleBatcher &ex = *data.examples();
  ex.checkValidation();
  const int64_t rows = data.rows();
  if (rows != f.rows)
    fail("--predictions: the forward program reads %lld rows, the validation batches have %lld", (long long)f.rows,
         (long long)rows);
  Seq2SeqScores out;
  out.maxTokens = maxTokens > 0 ? maxTokens : f.targetSeq;
  out.cached = kvCache && s.hasProgram("encode") && s.hasProgram("decode");
  const ExampleShard &shard = ex.valShard();
  const std::vector<int> texts = shard.fieldsOf(FieldKind::Text);  // input, target (the transform checked them)
  out.records = shard.records();
  std::string lines;
  std::vector<int32_t> input, target;
  for (uint64_t b = 0; b < ex.valBatches(); ++b) {
    const std::map<std::string, TensorRef> &all = data.valInputs(b);
    const TensorRef &ids = inputOf(all, "ids"), &mask = inputOf(all, "attention_mask");
    auto same = [](const TensorType &a, const TensorType &b) { return a.dtype == b.dtype && a.shape == b.shape; };
    if (!same(ids.type, f.ids) || !same(mask.type, f.mask))
      fail("--predictions: the transform's ids %s and attention_mask %s differ from the forward program's %s and %s",
           ids.type.str().c_str(), mask.type.str().c_str(), f.ids.str().c_str(), f.mask.str().c_str());
    // Validation batch b holds records b * rows .. in order; the rows past the last repeat record 0.
    const int64_t used = (int64_t)std::min<uint64_t>((uint64_t)rows, out.records - b * (uint64_t)rows);
    std::vector<std::vector<int32_t>> generated;
    if (!out.cached)
      generated = greedySeq2SeqBatch(s, f, reinterpret_cast<const int32_t *>(ids.data), mask.data, used,
                                     out.maxTokens);
    for (int64_t r = 0; r < used; ++r) {
      const uint64_t rec = b * (uint64_t)rows + (uint64_t)r;
      shard.text(rec, texts[0], input);
      shard.text(rec, texts[1], target);
      if (out.cached) {
        // The record's input as the prompt: generateSeq2Seq builds the
        // encoder row as the transform does (cut to seq - 1 bytes, then EOS).
        SampleOptions o;
        o.prompt = bytesOf(input);
        o.tokens = out.maxTokens;
        o.temperature = 0;
        generated.emplace_back();
        generateSeq2Seq(s, o, [&](int32_t t) {
          generated.back().push_back(t);
          return true;
        });
      }
      const std::string in = bytesOf(input), gold = bytesOf(target), pred = bytesOf(generated[(size_t)r]);
      const bool eos = (int64_t)generated[(size_t)r].size() < std::min(out.maxTokens, f.targetSeq);
      out.exact += pred == gold;
      out.squadExactMatch += metrics::exactMatch(pred, gold);
      out.squadF1 += metrics::tokenF1(pred, gold);
      lines += "{\"record\": " + std::to_string(rec) + ", \"input\": " + json::quote(in) +
               ", \"target\": " + json::quote(gold) + ", \"prediction\": " + json::quote(pred) +
               ", \"eos\": " + (eos ? "true" : "false") + ", \"answers\": [" + json::quote(gold) + "]}\n";
    }
  }
  if (!path.empty()) writeFileAtomic(path, "predictions", [&](std::ostream &o) { o << lines; });
  out.exactMatch = (double)out.exact / (double)out.records;
  out.squadExactMatch /= (double)out.records;
  out.squadF1 /= (double)out.records;
  return out;
}

}  // namespace lmrt
