/* Implements: `lmrt sample X.plan --weights W.safetensors [--data DIR |
   --tokenizer tok.model]`: prints the prompt followed by generated text. With
   no tokenizer (or byte-level data) it generates bytes, written as they come
   (invalid UTF-8 included); with a SentencePiece tokenizer (the one recorded in
   DIR/meta.json, or given) it encodes the prompt after the end-of-document
   token, generates ids until --tokens or an end-of-document token, and prints
   their decoded text as it grows. */
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/data/dataset_meta.h"
#include "runtime/data/tokenizer.h"
#include "runtime/exec/session.h"
#include "base/tensor.h"
#include "runtime/weights/weights.h"
#include "runtime/train/generate.h"
#include "runtime/train/program_io.h"
#include "runtime/train/threads.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/device_flags.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  std::string plan, weights, data, tokenizer;
  SampleOptions sample;
  std::string threads, seed, checkKvCache;
  bool noKvCache = false;
  DeviceOptions device;
};

/* Bounds of --tokens and --top-k. A million tokens is hours of generation on
   the CPU; 2^31 - 1 is the largest token id a plan's i32 inputs hold, so no
   vocabulary (and no useful k) is larger. */
constexpr int64_t kMaxSampleTokens = 1000000;
constexpr int64_t kMaxTopK = 2147483647;

/* Text goes out as it is generated; a stdout that takes no more (a full disk, a
   closed pipe) stops the generation instead of running it to the end unseen. */
void print(const std::string &s) {
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0)
    fail("cannot write the sample to standard output: %s", std::strerror(errno));
}

/* Generation through a SentencePiece tokenizer. */
void sampleTokens(Session &session, const Tokenizer &tok, const SampleOptions &o) {
  const plan::Input &in = tokenInput(findProgram(session, "forward"));
  int64_t vocab = in.vocab() > 0 ? in.vocab() : session.plan().data().vocab();
  if (vocab > 0 && tok.vocab() > vocab)
    fail("the tokenizer has a vocabulary of %lld, larger than the plan's %lld; compile the plan "
         "with -D vocab=%lld", (long long)tok.vocab(), (long long)vocab, (long long)tok.vocab());
  // Documents in the shards end with eos, so eos is what precedes a document's start.
  const int32_t eos = tok.specialId("eos");
  std::vector<int32_t> context;
  if (eos >= 0) context.push_back(eos);
  for (int32_t id : tok.encode(o.prompt)) context.push_back(id);
  if (context.empty()) context = tok.encode("\n");
  print(o.prompt);
  std::vector<int32_t> generated;
  std::string shown;
  // Text is printed as it grows; a byte-fallback character still incomplete
  // decodes to U+FFFD and is held back until its last byte arrives.
  const std::string replacement = "\xEF\xBF\xBD";
  auto flush = [&](bool last) {
    std::string text = tok.decode(generated);
    if (!last && text.size() >= 3 && text.compare(text.size() - 3, 3, replacement) == 0)
      text.resize(text.size() - 3);
    if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
      print(text.substr(shown.size()));
      shown = text;
    }
  };
  generateIds(session, o, context, tok.vocab(), eos, [&](int32_t id) {
    if (id == eos) return;
    generated.push_back(id);
    flush(false);
  });
  flush(true);
}

void sample(Options &o) {
  if (!o.seed.empty()) o.sample.seed = parseU64Flag("--seed", o.seed);
  o.sample.kvCache = !o.noKvCache;
  if (!o.checkKvCache.empty()) {
    char *end = nullptr;
    o.sample.checkCache = std::strtod(o.checkKvCache.c_str(), &end);
    if (end == o.checkKvCache.c_str() || *end || !(o.sample.checkCache >= 0) || !std::isfinite(o.sample.checkCache))
      fail("--check-kv-cache needs a tolerance >= 0 (got %s)", o.checkKvCache.c_str());
  }
  if (!o.threads.empty()) setThreadCount((int)parseIntFlag("--threads", o.threads, 1, kMaxThreads));
  if (!o.data.empty() && !o.tokenizer.empty())
    fail("give --data or --tokenizer, not both (--data uses the tokenizer recorded there)");
  std::unique_ptr<Tokenizer> tok;
  if (!o.tokenizer.empty()) tok = loadSentencePiece(o.tokenizer);
  if (!o.data.empty()) {
    std::optional<DatasetMeta> meta = readDatasetMeta(o.data);
    if (!meta)
      fail("data directory '%s' has no meta.json recording its tokenizer (built by lmrt data "
           "build); give --tokenizer instead", o.data.c_str());
    tok = meta->loadTokenizer();
  }
  std::unique_ptr<Session> session = Session::load(o.plan, o.device);
  loadWeights(*session, o.weights);
  if (tok && std::string(tok->kind()) != "bytes") {
    sampleTokens(*session, *tok, o.sample);
  } else {
    print(o.sample.prompt);
    generate(*session, o.sample, [](unsigned char c) { print(std::string(1, (char)c)); });
  }
  print("\n");
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("sample", "Generate text with a trained plan");
  auto o = std::make_shared<Options>();
  SampleOptions &s = o->sample;
  cmd->add_option("plan", o->plan,
                  "Plan written by `lmc compile` (its \"prefill\" and \"decode\" programs, else \"forward\")")
      ->required();
  cmd->add_option("--weights", o->weights, "Weights written by `lmrt run`")->required();
  cmd->add_option("--data", o->data, "Decode with the tokenizer recorded in DIR/meta.json");
  cmd->add_option("--tokenizer", o->tokenizer, "Decode with this SentencePiece model");
  cmd->add_option("--prompt", s.prompt, "Text to continue (empty: start a new document)");
  addIntOption(cmd, "--tokens", s.tokens, 0, kMaxSampleTokens,
               "Tokens to generate (bytes for byte-level data; 0 to 1000000)");
  addRealOption(cmd, "--temperature", s.temperature, 0, 1e6, "Softmax temperature (0: greedy)");
  addIntOption(cmd, "--top-k", s.topK, 0, kMaxTopK, "Sample among the k most likely tokens (0: all)");
  cmd->add_option("--seed", o->seed, "Seed of the sampling draws (64 bits)");
  cmd->add_option("--threads", o->threads, "OpenMP and OpenBLAS threads (1 to 1024)");
  addDeviceOptions(cmd, o->device);
  cmd->add_flag("--no-kv-cache", o->noKvCache,
                "Re-run the forward program over the whole context for every token instead of decoding with the "
                "plan's prefill and decode programs (the same text, slower)");
  cmd->add_option("--check-kv-cache", o->checkKvCache,
                  "Also run the forward program for every token and fail when a logit of the cached path differs "
                  "by more than TOL (the largest difference is printed on stderr)");
  cmd->callback([o] { sample(*o); });
}

RegisterCommand reg("sample", add);

}  // namespace
}  // namespace lmrt
