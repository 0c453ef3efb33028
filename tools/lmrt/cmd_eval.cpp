/* Implements: `lmrt eval X.plan --weights W.safetensors --data DIR`: the loss of
   trained weights on a whole split (see runtime/train/evaluate.h), printed as
   nats per token, perplexity and bits per byte. */
#include <cstdio>
#include <memory>

#include "contract/plan.pb.h"
#include "runtime/exec/session.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/distributed.h"
#include "runtime/weights/weights.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/example_predictions.h"
#include "runtime/train/seq2seq_predictions.h"
#include "base/paths.h"
#include "runtime/train/threads.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/device_flags.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  std::string plan, weights;
  EvalOptions eval;
  std::string predictions;  // classify, regression, span, seq2seq: one JSON line per validation record
  int64_t maxNewTokens = 0; // seq2seq: the generation limit (0: the decoder's length)
  bool noKvCache = false;   // seq2seq: generate over the forward program (every token re-runs the model)
  bool overwrite = false;
  double nullScoreDiffThreshold = 0.0;  // span plans on SQuAD v2 data: HF's default
  bool thresholdGiven = false;
  int threads = 0;  // 0: not given
  DeviceOptions device;
};

void run(const Options &o) {
  if (o.threads) setThreadCount(o.threads);
  if (o.thresholdGiven && o.predictions.empty())
    fail("--null-score-diff-threshold chooses the 'no answer' predictions of a span plan: give --predictions FILE");
  if (!o.predictions.empty()) {
    if (o.eval.split != "val") fail("--predictions scores the validation split (drop --split %s)", o.eval.split.c_str());
    checkOutputs({{"--predictions", o.predictions, false, IfExists::NeedsOverwrite}},
                 {{"the plan", o.plan}, {"--weights", o.weights}}, o.overwrite, stdout);
  }
  std::unique_ptr<Session> session = Session::load(o.plan, o.device);
  // On a tensor-parallel or ZeRO-3 plan's ranks every rank scores, rank 0 prints.
  const RankInfo ranks = joinCommandRanks(*session, o.plan, "eval",
                                          o.eval.split + '\n' + std::to_string(o.eval.maxBatches) + '\n' +
                                              std::to_string(o.eval.seed));
  // --predictions on several processes: every rank runs the prediction batches (a
  // tensor-parallel or ZeRO-3 plan's programs gather or reduce over the ranks, and a
  // rank of another plan that went on to the scores would wait in their collective while
  // rank 0 predicts), and rank 0 alone writes the file: every record, in one process's
  // order.
  const std::string predictionsPath = ranks.writer() ? o.predictions : std::string();
  EvalOptions eval = o.eval;
  eval.dataRank = ranks.rank, eval.dataRanks = ranks.ranks;
  loadWeightsOrCheckpoint(*session, o.weights);
  const bool seq2seq = session->plan().data().transform() == "seq2seq";
  if (o.maxNewTokens && (!seq2seq || o.predictions.empty()))
    fail("--max-new-tokens limits the generation of --predictions on a seq2seq plan");
  if (o.noKvCache && (!seq2seq || o.predictions.empty()))
    fail("--no-kv-cache chooses how --predictions generates on a seq2seq plan");
  if (o.thresholdGiven && session->plan().data().transform() != "span")
    fail("--null-score-diff-threshold is for span plans (SQuAD v2); this plan's transform is '%s'",
         session->plan().data().transform().c_str());
  Seq2SeqScores generated;
  if (!o.predictions.empty() && seq2seq) {
    generated = writeSeq2SeqPredictions(*session, o.eval.dataDir, o.eval.seed, predictionsPath, o.maxNewTokens,
                                        !o.noKvCache);
    if (ranks.writer())
      std::printf("wrote %s: %llu predictions (greedy, at most %lld tokens; score them with lmrt metrics "
                  "--predictions %s)%s\n", o.predictions.c_str(), (unsigned long long)generated.records,
                  (long long)generated.maxTokens, o.predictions.c_str(),
                  generated.cached ? " over the KV cache" : " re-running the model for every token");
  } else if (!o.predictions.empty()) {
    uint64_t n =
        writeExamplePredictions(*session, o.eval.dataDir, o.eval.seed, predictionsPath, o.nullScoreDiffThreshold);
    if (ranks.writer())
      std::printf("wrote %s: %llu predictions (score them with lmrt metrics --predictions %s)\n",
                  o.predictions.c_str(), (unsigned long long)n, o.predictions.c_str());
  }
  EvalResult r = evaluateSplit(*session, eval);
  if (!ranks.writer()) return;
  if (r.transform != "causal") {
    std::printf("data: %s (%s), %llu tokens; %lld %s batches of %lld x %lld (seed %llu)\n", r.file.c_str(),
                r.format.c_str(), (unsigned long long)r.tokens, (long long)r.batches, r.transform.c_str(),
                (long long)r.rows, (long long)r.seq, (unsigned long long)o.eval.seed);
    if (eval.dataRanks > 1)  // scoreEvalOverRanks: whole batches, round robin
      std::printf("split over %d data ranks: batch b on rank b mod %d (rank 0 scored %lld of %lld)\n",
                  eval.dataRanks, eval.dataRanks, (long long)((r.batches + eval.dataRanks - 1) / eval.dataRanks),
                  (long long)r.batches);
    std::printf("%s loss: %.6f\n", o.eval.split.c_str(), r.loss);
    for (const auto &[name, v] : r.metrics) std::printf("%s: %.6f\n", name.c_str(), v);
    if (generated.records) {  // the generated targets against the gold ones
      std::printf("exact_match: %.6f (%llu of %llu generated targets equal to theirs)\n", generated.exactMatch,
                  (unsigned long long)generated.exact, (unsigned long long)generated.records);
      std::printf("squad_exact_match: %.6f\n", generated.squadExactMatch);
      std::printf("squad_f1: %.6f\n", generated.squadF1);
    }
    return;
  }
  std::printf("data: %s (%s), %llu tokens; %lld batches of %lld x %lld predictions (%llu tokens "
              "scored, %llu left out)\n", r.file.c_str(), r.format.c_str(),
              (unsigned long long)r.tokens, (long long)r.batches, (long long)r.rows,
              (long long)r.seq, (unsigned long long)r.tokensScored,
              (unsigned long long)(r.tokens - 1 - r.tokensScored));
  std::printf("%s loss: %.6f nats/token\n", o.eval.split.c_str(), r.loss);
  std::printf("perplexity: %.4f\n", r.perplexity);
  if (r.bitsPerByte)
    std::printf("bits per byte: %.6f (%.4f bytes per token)\n", *r.bitsPerByte, *r.bytesPerToken);
  else
    std::printf("bits per byte: unknown (no byte count in DIR/meta.json; give --bytes-per-token)\n");
  for (const auto &[name, v] : r.metrics) std::printf("%s: %.6f\n", name.c_str(), v);
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("eval", "Validation loss, perplexity and bits per byte of weights");
  auto o = std::make_shared<Options>();
  EvalOptions &e = o->eval;
  cmd->add_option("plan", o->plan, "Plan written by `lmc compile` (uses its \"eval\" program)")
      ->required();
  cmd->add_option("--weights", o->weights, "Weights written by `lmrt run`, or one of its checkpoint directories (step-N)")->required();
  cmd->add_option("--data", e.dataDir, "Data directory (as lmrt run --data)")->required();
  cmd->add_option("--split", e.split, "val | train");
  addIntOption(cmd, "--batches", e.maxBatches, 0, int64_t(1) << 30, "Score at most N batches (0: the whole split)");
  addU64Option(cmd, "--seed", e.seed,
               "Seed of a non-causal batch transform (masking); the run's --seed scores its own validation batches");
  // A token is at least a part of a byte and at most a long word: outside this a value is a typo.
  addRealOption(cmd, "--bytes-per-token", e.bytesPerToken, 0.01, 1000,
                "Text bytes per token for bits per byte (default: from DIR/meta.json)");
  cmd->add_option("--predictions", o->predictions,
                  "classify / regression / span / seq2seq plans: write one JSON line per validation record (label "
                  "and logits, the answer, or the generated target) for lmrt metrics");
  addIntOption(cmd, "--max-new-tokens", o->maxNewTokens, 1, int64_t(1) << 30,
               "seq2seq --predictions: generate at most N tokens a record (default: the decoder's length)");
  cmd->add_flag("--no-kv-cache", o->noKvCache,
                "seq2seq --predictions: re-run the whole model for every token, a batch of records at a time, "
                "rather than the encoder once and the decoder over its key/value cache, a record at a time");
  cmd->add_flag("--overwrite", o->overwrite, "Replace an existing --predictions file");
  addRealOption(cmd, "--null-score-diff-threshold", o->nullScoreDiffThreshold, -1e300, 1e300,
                "span plans on SQuAD v2 data: answer 'no answer' when a record's null score minus its best answer's "
                "exceeds this (HF's null_score_diff_threshold; default 0)");
  addIntOption(cmd, "--threads", o->threads, 1, kMaxThreads, "OpenMP and OpenBLAS threads (1 to 1024)");
  addDeviceOptions(cmd, o->device);
  cmd->callback([o, cmd] {
    o->thresholdGiven = cmd->count("--null-score-diff-threshold") > 0;
    run(*o);
  });
}

RegisterCommand reg("eval", add);

}  // namespace
}  // namespace lmrt
