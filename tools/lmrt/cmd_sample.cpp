/* Implements: `lmrt sample X.plan --weights W.safetensors [--data DIR |
   --tokenizer tok.model]`: prints the prompt followed by generated text. With
   no tokenizer (or byte-level data) it generates bytes, written as they come
   (invalid UTF-8 included); with a SentencePiece tokenizer (the one recorded in
   DIR/meta.json, or given) it encodes the prompt after the end-of-document
   token, generates ids until --tokens or an end-of-document token, and prints
   their decoded text as it grows. --stop strings end a completion (left out),
   --prompts completes a file's lines one after another, and --format json writes
   one JSON line per prompt instead. */
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/data/dataset_meta.h"
#include "runtime/data/tokenizer.h"
#include "runtime/exec/session.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/tensor.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/distributed.h"
#include "runtime/weights/weights.h"
#include "runtime/train/completion_text.h"
#include "runtime/train/generate.h"
#include "runtime/train/generate_seq2seq.h"
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
  bool promptGiven = false;
  std::string promptsFile, format = "text";
  std::vector<std::string> stops;
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
bool quiet = false;  // a rank other than 0 of a plan run on its mesh's processes
void print(const std::string &s) {
  if (quiet) return;
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0)
    fail("cannot write the sample to standard output: %s", std::strerror(errno));
}

/* One completion: its text (cut before a stop string), why it ended ("stop": a stop
   string, "eos": the end-of-document token, "length": --tokens) and the tokens drawn. */
struct Completion {
  std::string text, finish;
  int64_t tokens = 0;
};

/* Generates the completion of o.prompt, shown on stdout as it grows when `stream`. */
Completion complete(Session &session, const Tokenizer *tok, const SampleOptions &o,
                    const std::vector<std::string> &stops, bool stream) {
  CompletionText ct(stops);
  Completion c;
  bool eos = false;
  auto show = [&](bool final) {
    if (stream) print(ct.take(final));
  };
  if (isSeq2SeqPlan(session)) {  // an encoder-decoder model: the prompt is its input
    if (tok) fail("a seq2seq plan reads bytes (the seq2seq transform's): give no --tokenizer");
    std::string bytes;
    eos = generateSeq2Seq(session, o, [&](int32_t b) {
      ++c.tokens;
      bytes += (char)b;
      const bool more = ct.update(bytes);
      show(false);
      return more;
    });
    if (eos) ++c.tokens;
  } else if (!tok) {  // bytes
    std::string bytes;
    generate(session, o, [&](unsigned char b) {
      ++c.tokens;
      bytes += (char)b;
      const bool more = ct.update(bytes);
      show(false);
      return more;
    });
  } else {
    const plan::Input &in = tokenInput(findProgram(session, "forward"));
    int64_t vocab = in.vocab() > 0 ? in.vocab() : session.plan().data().vocab();
    if (vocab > 0 && tok->vocab() > vocab)
      fail("the tokenizer has a vocabulary of %lld, larger than the plan's %lld; compile the plan "
           "with -D vocab=%lld", (long long)tok->vocab(), (long long)vocab, (long long)tok->vocab());
    // Documents in the shards end with eos, so eos is what precedes a document's start.
    const int32_t eosId = tok->specialId("eos");
    std::vector<int32_t> context;
    if (eosId >= 0) context.push_back(eosId);
    for (int32_t id : tok->encode(o.prompt)) context.push_back(id);
    if (context.empty()) context = tok->encode("\n");
    std::vector<int32_t> generated;
    // A byte-fallback character still incomplete decodes to U+FFFD: it waits until
    // its last byte arrives.
    const std::string replacement = "\xEF\xBF\xBD";
    generateIds(session, o, context, tok->vocab(), eosId, [&](int32_t id) {
      ++c.tokens;
      if (id == eosId) {
        eos = true;
        return false;
      }
      generated.push_back(id);
      std::string text = tok->decode(generated);
      if (text.size() >= 3 && text.compare(text.size() - 3, 3, replacement) == 0) text.resize(text.size() - 3);
      const bool more = ct.update(text);
      show(false);
      return more;
    });
    if (!ct.stopped()) ct.update(tok->decode(generated));
  }
  show(true);
  c.text = ct.text();
  c.finish = ct.stopped() ? "stop" : eos ? "eos" : "length";
  return c;
}

/* The prompts of --prompts: one a line (a final newline ends the last; \r\n is read as \n). */
std::vector<std::string> readPrompts(const std::string &path) {
  const std::string text = readWholeFile(path, "prompts file", uint64_t(1) << 30);
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    begin = end + 1;
  }
  if (lines.empty()) fail("prompts file '%s' is empty: it holds one prompt a line", path.c_str());
  return lines;
}

/* What decides the programs every rank runs, and how often: the same on every rank. */
std::string settings(const Options &o, const std::vector<std::string> &prompts) {
  const SampleOptions &s = o.sample;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld %.17g %lld %.17g %.17g %llu %d %.17g|", (long long)s.tokens, s.temperature,
                (long long)s.topK, s.topP, s.repetitionPenalty, (unsigned long long)s.seed, (int)s.kvCache,
                s.checkCache);
  std::string all = buf + o.data + '|' + o.tokenizer + '|';
  for (const std::string &p : prompts) all += std::to_string(p.size()) + ':' + p;
  for (const std::string &t : o.stops) all += std::to_string(t.size()) + ':' + t;
  return all;
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
  if (!o.promptsFile.empty() && o.promptGiven)
    fail("give --prompt or --prompts, not both (--prompts reads one prompt a line)");
  CompletionText checkStops(o.stops);  // an empty --stop fails here, before any work
  std::unique_ptr<Tokenizer> tok;
  if (!o.tokenizer.empty()) tok = loadSentencePiece(o.tokenizer);
  if (!o.data.empty()) {
    std::optional<DatasetMeta> meta = readDatasetMeta(o.data);
    if (!meta)
      fail("data directory '%s' has no meta.json recording its tokenizer (built by lmrt data "
           "build); give --tokenizer instead", o.data.c_str());
    tok = meta->loadTokenizer();
  }
  if (tok && std::string(tok->kind()) == "bytes") tok.reset();
  const std::vector<std::string> prompts =
      o.promptsFile.empty() ? std::vector<std::string>{o.sample.prompt} : readPrompts(o.promptsFile);
  std::unique_ptr<Session> session = Session::load(o.plan, o.device);
  // On a tensor-parallel or ZeRO-3 plan's ranks every rank generates the same tokens
  // (the same logits, the same seeded draws), rank 0 prints.
  const RankInfo ranks = joinCommandRanks(*session, o.plan, "sample", settings(o, prompts));
  loadWeightsOrCheckpoint(*session, o.weights);
  quiet = !ranks.writer();
  const bool json = o.format == "json";
  for (const std::string &prompt : prompts) {
    SampleOptions so = o.sample;
    so.prompt = prompt;
    if (!json) {
      print(prompt);
      complete(*session, tok.get(), so, o.stops, true);
      print("\n");
      continue;
    }
    const Completion c = complete(*session, tok.get(), so, o.stops, false);
    print("{\"prompt\": " + json::quote(validUtf8(prompt)) + ", \"completion\": " + json::quote(validUtf8(c.text)) +
          ", \"finish_reason\": \"" + c.finish + "\", \"tokens\": " + std::to_string(c.tokens) + "}\n");
  }
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("sample", "Generate text with a trained plan");
  auto o = std::make_shared<Options>();
  SampleOptions &s = o->sample;
  cmd->add_option("plan", o->plan,
                  "Plan written by `lmc compile` (its \"prefill\" and \"decode\" programs, with \"encode\" for "
                  "an encoder-decoder model, else \"forward\")")
      ->required();
  cmd->add_option("--weights", o->weights, "Weights written by `lmrt run`, or one of its checkpoint directories (step-N)")->required();
  cmd->add_option("--data", o->data, "Decode with the tokenizer recorded in DIR/meta.json");
  cmd->add_option("--tokenizer", o->tokenizer, "Decode with this SentencePiece model");
  cmd->add_option("--prompt", s.prompt, "Text to continue (empty: start a new document)")
      ->each([o](const std::string &) { o->promptGiven = true; });
  cmd->add_option("--prompts", o->promptsFile,
                  "A file of prompts, one a line, each completed in turn with the same options and seed");
  cmd->add_option("--stop", o->stops,
                  "End a completion where this text appears, leaving it out (repeatable; the first to appear)");
  cmd->add_option("--format", o->format,
                  "text: the prompt and its completion as they grow; json: one line per prompt with prompt, "
                  "completion, finish_reason (stop, eos, length) and tokens")
      ->check(CLI::IsMember({"text", "json"}));
  addIntOption(cmd, "--tokens", s.tokens, 0, kMaxSampleTokens,
               "Tokens to generate (bytes for byte-level data; 0 to 1000000)");
  addRealOption(cmd, "--temperature", s.temperature, 0, 1e6, "Softmax temperature (0: greedy)");
  addIntOption(cmd, "--top-k", s.topK, 0, kMaxTopK, "Sample among the k most likely tokens (0: all)");
  addRealOption(cmd, "--top-p", s.topP, 0, 1,
                "Sample among the fewest most likely tokens whose probability adds up to P (nucleus; 1: all)");
  addRealOption(cmd, "--repetition-penalty", s.repetitionPenalty, 0, 1e6,
                "Divide (multiply, when negative) the logits of tokens already in the context by this (1: off)");
  cmd->add_option("--seed", o->seed, "Seed of the sampling draws (64 bits)");
  cmd->add_option("--threads", o->threads, "OpenMP and OpenBLAS threads (1 to 1024)");
  addDeviceOptions(cmd, o->device);
  cmd->add_flag("--no-kv-cache", o->noKvCache,
                "Re-run the forward program over the whole context for every token instead of decoding with the "
                "plan's prefill and decode programs (encode and decode for an encoder-decoder model; the same "
                "text, slower)");
  cmd->add_option("--check-kv-cache", o->checkKvCache,
                  "Also run the forward program for every token and fail when a logit of the cached path differs "
                  "by more than TOL (the largest difference is printed on stderr)");
  cmd->callback([o] { sample(*o); });
}

RegisterCommand reg("sample", add);

}  // namespace
}  // namespace lmrt
