/* Implements: evaluation of a whole split (see evaluate.h). */
#include "runtime/train/evaluate.h"

#include <cmath>
#include <sys/stat.h>
#include <vector>

#include "runtime/data/batches.h"
#include "runtime/data/example_batches.h"
#include "runtime/data/dataset_meta.h"
#include "runtime/data/token_source.h"
#include "contract/contract.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/program_io.h"

namespace lmrt {
namespace {

void finish(EvalResult &r, const EvalScores &scores) {
  r.loss = scores.loss;
  r.metrics = scores.metrics;
}

EvalScores scoreEvalOverRanks(Session &s, int64_t batches,
                              const std::function<std::map<std::string, TensorRef>(int64_t)> &batch, int rank,
                              int ranks);

/* Non-causal transforms: the validation batches `lmrt run` scores (on D data ranks,
   split over them by whole batches: scoreEvalOverRanks). */
EvalResult evaluateTransform(Session &s, const EvalOptions &o) {
  struct stat st;
  if (::stat(o.dataDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("data directory '%s' does not exist or is not a directory", o.dataDir.c_str());
  DataFeed data(s, o.dataDir, o.seed, /*evalOn=*/o.split == "val");
  const TokenSource &src = o.split == "val" ? data.val() : data.train();
  EvalResult r;
  r.transform = s.plan().data().transform();
  r.file = src.path();
  r.format = src.format();
  r.tokens = src.size();
  r.rows = data.rows();
  r.seq = s.plan().data().seq();
  const uint64_t perBatch = (uint64_t)(r.rows * r.seq);
  r.batches = o.maxBatches > 0 ? o.maxBatches : (int64_t)std::max<uint64_t>(1, r.tokens / perBatch);
  // Example datasets: by default every validation record once (example_batches.h).
  if (data.examples() && o.maxBatches == 0 && o.split == "val") r.batches = (int64_t)data.examples()->valBatches();
  auto batch = [&](int64_t b) {
    return o.split == "val" ? data.valInputs((uint64_t)b) : data.trainInputs((uint64_t)b);
  };
  finish(r, o.dataRanks > 1 ? scoreEvalOverRanks(s, r.batches, batch, o.dataRank, o.dataRanks)
                            : scoreEval(s, r.batches, batch, /*requireFinite=*/true));
  return r;
}

/* A non-causal transform's batches on D data ranks: whole batches, rank q scoring
   batches q, q + D, q + 2D, ... (the plan's own, of its rows), then every batch's
   scores all-gathered over the data group and added in batch order: scoreEval's sums
   on one process, bit for bit. (Cutting each batch's rows over the ranks instead, as
   the causal split does, would not give one process's figures: a loss like mlm's is a
   mean over a batch's masked tokens, whose count differs from rank to rank.) Every
   rank makes the same number of calls, since a ZeRO-3 or tensor-parallel eval program
   gathers or reduces over the ranks in each; a rank past the last batch scores batch
   n - 1 again and drops it. */
EvalScores scoreEvalOverRanks(Session &s, int64_t batches,
                              const std::function<std::map<std::string, TensorRef>(int64_t)> &batch, int rank,
                              int ranks) {
  const std::vector<std::string> names = metricNames(findProgram(s, "eval"));
  const size_t width = names.size() + 1;  // the loss, then the metrics
  const int64_t calls = (batches + ranks - 1) / ranks;
  std::vector<double> mine((size_t)calls * width, 0.0), all((size_t)(calls * ranks) * width, 0.0);
  for (int64_t k = 0; k < calls; ++k) {
    const int64_t b = k * ranks + rank;
    s.run("eval", batch(std::min(b, batches - 1)));
    double *out = mine.data() + k * (int64_t)width;
    out[0] = scalarValue(s.output("eval", "loss"), "eval loss");
    for (size_t m = 0; m < names.size(); ++m)
      out[m + 1] = scalarValue(s.output("eval", "metric:" + names[m]), names[m].c_str());
  }
  comm::meshGroup(0).allGather(mine.data(), all.data(), (int64_t)mine.size(), DType::F64,
                               "the evaluation's batch scores over the data ranks");
  std::vector<double> sums(width, 0.0);
  for (int64_t b = 0; b < batches; ++b) {
    const double *in = all.data() + ((b % ranks) * calls + b / ranks) * (int64_t)width;  // rank b % D's call b / D
    if (!std::isfinite(in[0])) fail("eval batch %lld: loss is %g", (long long)b, in[0]);
    for (size_t m = 0; m < width; ++m) sums[m] += in[m];
  }
  EvalScores r;
  r.loss = sums[0] / double(batches);
  for (size_t m = 0; m < names.size(); ++m) r.metrics.push_back({names[m], sums[m + 1] / double(batches)});
  return r;
}

}  // namespace

EvalScores scoreEval(Session &s, int64_t batches,
                     const std::function<std::map<std::string, TensorRef>(int64_t)> &batch, bool requireFinite,
                     int dataRanks) {
  const std::vector<std::string> names = metricNames(findProgram(s, "eval"));
  std::vector<double> sums(names.size(), 0.0);
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    s.run("eval", batch(b));
    std::vector<double> scores{scalarValue(s.output("eval", "loss"), "eval loss")};
    for (size_t k = 0; k < names.size(); ++k)
      scores.push_back(scalarValue(s.output("eval", "metric:" + names[k]), names[k].c_str()));
    if (dataRanks > 1)  // the mean of the ranks' means of equal rows
      comm::meshGroup(0).allReduce(scores.data(), scores.data(), (int64_t)scores.size(), DType::F64,
                                   comm::Reduction::Mean, "the evaluation's losses over the data ranks");
    if (requireFinite && !std::isfinite(scores[0])) fail("eval batch %lld: loss is %g", (long long)b, scores[0]);
    sum += scores[0];
    for (size_t k = 0; k < names.size(); ++k) sums[k] += scores[k + 1];
  }
  EvalScores r;
  r.loss = sum / double(batches);
  for (size_t k = 0; k < names.size(); ++k) r.metrics.push_back({names[k], sums[k] / double(batches)});
  return r;
}

EvalResult evaluateSplit(Session &s, const EvalOptions &o) {
  if (o.split != "val" && o.split != "train")
    fail("--split must be val or train (got '%s')", o.split.c_str());
  if (o.maxBatches < 0) fail("--batches must be >= 0 (got %lld)", (long long)o.maxBatches);
  if (o.bytesPerToken < 0 || !std::isfinite(o.bytesPerToken))
    fail("--bytes-per-token must be > 0 (got %g)", o.bytesPerToken);
  const plan::Plan &plan = s.plan();
  if (plan.data().transform() != "causal") return evaluateTransform(s, o);
  const plan::Input &in = tokenInput(findProgram(s, "eval"));
  TensorType type = inputType(in);
  // The program's rows are the data rank's part of a global batch of B (EvalOptions).
  const int64_t rows = type.shape[0], window = type.shape[1], seq = window - 1, B = rows * o.dataRanks;
  const int64_t vocab = in.vocab() > 0 ? in.vocab() : plan.data().vocab();
  if (seq < 1) fail("eval input %s has no room for a target token", type.str().c_str());

  struct stat st;
  if (::stat(o.dataDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("data directory '%s' does not exist or is not a directory", o.dataDir.c_str());
  std::unique_ptr<TokenSource> src = TokenSource::open(findSplitFiles(o.dataDir, o.split));
  std::optional<DatasetMeta> meta = readDatasetMeta(o.dataDir);
  const DatasetSplitMeta *splitMeta = meta ? (o.split == "val" ? &meta->val : &meta->train) : nullptr;
  if (splitMeta && splitMeta->tokens != src->size())
    fail("%s says %s holds %llu tokens, but %s has %llu (rebuild the directory with lmrt data "
         "build)", meta->path.c_str(), splitMeta->file.c_str(), (unsigned long long)splitMeta->tokens,
         src->path().c_str(), (unsigned long long)src->size());
  if (meta && meta->tokenizer != "bytes" && meta->vocab > vocab)
    fail("data '%s' was tokenized with a vocabulary of %lld (%s), larger than the plan's %lld",
         meta->path.c_str(), (long long)meta->vocab, meta->tokenizerModel.c_str(), (long long)vocab);
  checkTokenRange(*src, vocab);

  EvalResult r;
  r.transform = "causal";
  r.file = src->path();
  r.format = src->format();
  r.tokens = src->size();
  r.rows = B;
  r.seq = seq;
  const uint64_t windows = r.tokens > 0 ? (r.tokens - 1) / (uint64_t)seq : 0;
  r.batches = (int64_t)(windows / (uint64_t)B);
  if (o.maxBatches > 0) r.batches = std::min(r.batches, o.maxBatches);
  if (r.batches == 0)
    fail("%s has %llu tokens, fewer than one batch of %lld windows of %lld tokens (%lld tokens "
         "needed)", r.file.c_str(), (unsigned long long)r.tokens, (long long)B, (long long)window,
         (long long)(B * seq + 1));
  r.tokensScored = (uint64_t)r.batches * B * seq;

  std::vector<int32_t> buf(type.numel());
  // A plan with dropout declares its key in eval too; eval drops nothing, so any key does.
  std::vector<int32_t> key(2 * rows, 0);
  const plan::Program &eval = findProgram(s, "eval");
  const bool hasKey = contract::dataInputs(eval).size() != (size_t)eval.inputs_size();
  finish(r, scoreEval(s, r.batches, [&](int64_t b) {
    for (int64_t row = 0; row < rows; ++row)
      src->copyTokens((uint64_t)(b * B + o.dataRank * rows + row) * seq, window, buf.data() + row * window);
    std::map<std::string, TensorRef> inputs{{in.name(), TensorRef{buf.data(), type}}};
    if (hasKey) inputs[contract::kDropoutKeyInput] = TensorRef{key.data(), TensorType{DType::I32, {rows, 2}}};
    return inputs;
  }, /*requireFinite=*/true, o.dataRanks));
  r.perplexity = std::exp(r.loss);
  if (o.bytesPerToken > 0)
    r.bytesPerToken = o.bytesPerToken;
  else if (meta && splitMeta)
    r.bytesPerToken = meta->bytesPerToken(*splitMeta);
  if (r.bytesPerToken) r.bitsPerByte = r.loss / std::log(2.0) / *r.bytesPerToken;
  return r;
}

}  // namespace lmrt
