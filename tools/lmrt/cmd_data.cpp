/* Implements: `lmrt data build --input PATH... --out DIR [--tokenizer M]`: text
   (fortune files, plain text, or directories of them) -> train/val token shards
   and meta.json, byte-level or through a SentencePiece model; and
   `lmrt data tokenizer train --input PATH... --model-type bpe|unigram --vocab N
   --out tok.model`. Each prints what it read, skipped and wrote.
   With --format jsonl --fields ..., JSON Lines records -> example shards
   (jsonl_builder.h). */
#include <cstdio>
#include <map>
#include <memory>

#include "runtime/data/dataset_builder.h"
#include "runtime/data/jsonl_builder.h"
#include "runtime/data/tokenizer.h"
#include "base/tensor.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  double valFraction = 0.05;
  uint64_t seed = 1;
  std::string format = "auto";
  std::string tokenizer;
  bool overwrite = false;
  std::vector<std::string> fields, valInputs;  // --format jsonl
};

/* Fortune directories hold an index (*.dat) and a *.u8 link per file: count
   those by reason instead of listing dozens of lines. */
void printSkipped(const std::vector<std::string> &skipped) {
  std::map<std::string, int> reasons;
  for (const std::string &skip : skipped) {
    size_t open = skip.rfind(" (");
    std::string reason = open == std::string::npos ? "" : skip.substr(open + 2, skip.size() - open - 3);
    if (reason == "fortune index" || reason == "same file as an earlier input")
      ++reasons[reason];
    else
      std::printf("skipped %s\n", skip.c_str());
  }
  for (const auto &[reason, n] : reasons)
    std::printf("skipped %d file%s: %s\n", n, n == 1 ? "" : "s", reason.c_str());
}

std::string specialList(const std::vector<std::pair<std::string, int32_t>> &specials) {
  std::string s;
  for (const auto &[name, id] : specials) s += (s.empty() ? "" : ", ") + name + " " + std::to_string(id);
  return s;
}

void buildJsonl(const Options &o) {
  JsonlBuildOptions b;
  b.inputs = o.inputs;
  b.valInputs = o.valInputs;
  b.outDir = o.out;
  b.fields = o.fields;
  b.valFraction = o.valFraction;
  b.seed = o.seed;
  b.tokenizer = o.tokenizer;
  b.overwrite = o.overwrite;
  b.log = stdout;
  JsonlBuildStats s = buildJsonlDataset(b);
  std::string fields;
  for (size_t i = 0; i < s.fields.size(); ++i) {
    fields += (i ? ", " : "") + s.fields[i].name + " (" + (s.fields[i].words ? "words" : fieldKindName(s.fields[i].kind));
    if (s.fields[i].kind == FieldKind::Label || s.fields[i].kind == FieldKind::Tags)
      fields += ", " + std::to_string(s.classes[i]) + " classes";
    fields += ")";
  }
  std::printf("fields: %s\n", fields.c_str());
  std::printf("train: %llu records, %llu tokens -> %s/train.examples\n", (unsigned long long)s.train.records,
              (unsigned long long)s.train.tokens, o.out.c_str());
  std::printf("val:   %llu records, %llu tokens -> %s/val.examples%s\n", (unsigned long long)s.val.records,
              (unsigned long long)s.val.tokens, o.out.c_str(),
              s.val.records ? "" : " (no validation split; run with --eval-batches 0)");
  std::printf("tokenizer: %s (vocab %lld) -> %s/meta.json\n", s.tokenizer.c_str(), (long long)s.vocab,
              o.out.c_str());
}

void build(const Options &o) {
  if (o.format == "jsonl") return buildJsonl(o);
  if (!o.fields.empty() || !o.valInputs.empty())
    fail("--fields and --val-input are for --format jsonl (JSON Lines records), not --format %s", o.format.c_str());
  DatasetBuildOptions b;
  b.inputs = o.inputs;
  b.outDir = o.out;
  b.valFraction = o.valFraction;
  b.seed = o.seed;
  b.format = parseTextFormat(o.format);
  b.tokenizer = o.tokenizer;
  b.overwrite = o.overwrite;
  b.log = stdout;
  DatasetBuildStats s = buildDataset(b);
  printSkipped(s.skipped);
  uint64_t docs = s.trainDocs + s.valDocs;
  std::printf("read %zu file%s: %llu documents\n", s.files.size(), s.files.size() == 1 ? "" : "s",
              (unsigned long long)docs);
  std::printf("train: %llu documents, %llu tokens -> %s/train.bin\n", (unsigned long long)s.trainDocs,
              (unsigned long long)s.trainTokens, o.out.c_str());
  std::printf("val:   %llu documents, %llu tokens -> %s/val.bin%s\n", (unsigned long long)s.valDocs,
              (unsigned long long)s.valTokens, o.out.c_str(),
              s.valDocs ? "" : " (--val-fraction 0: no validation split; run with --eval-batches 0)");
  if (s.tokenizer == "bytes") {
    std::printf("tokenizer: bytes (vocab %lld) -> %s/meta.json\n", (long long)s.vocab, o.out.c_str());
    return;
  }
  std::printf("tokenizer: sentencepiece (vocab %lld; %s) -> %s/tokenizer.model, %s/meta.json\n",
              (long long)s.vocab, specialList(s.specialTokens).c_str(), o.out.c_str(), o.out.c_str());
  std::printf("%.3f bytes per token; round trip: %llu of %llu documents decode to their exact text\n",
              double(s.trainBytes + s.valBytes) / double(s.trainTokens + s.valTokens),
              (unsigned long long)s.roundTripExact, (unsigned long long)docs);
}

struct TrainTokOptions {
  std::vector<std::string> inputs;
  std::string format = "auto";
  TokenizerTrainOptions t;
  bool overwrite = false;
};

void trainTok(TrainTokOptions &o) {
  std::vector<std::string> skipped;
  std::vector<std::string> files = collectInputFiles(o.inputs, &skipped);
  // Flags and --out before reading the text and before minutes of training.
  prepareTokenizerOutput(o.t, files, o.overwrite, stdout);
  printSkipped(skipped);
  TextFormat format = parseTextFormat(o.format);
  uint64_t docs = 0, bytes = 0;
  for (const std::string &file : files) {
    std::string text = readTextFile(file);
    size_t bad = firstBinaryByte(text);
    if (bad != std::string::npos)
      fail("input '%s' is not UTF-8 text (byte %zu); tokenizers train on text files only",
           file.c_str(), bad);
    for (std::string &doc : splitDocuments(text, format)) {
      bytes += doc.size();
      ++docs;
      o.t.texts.push_back(std::move(doc));
    }
  }
  std::printf("read %zu file%s: %llu documents, %llu bytes\n", files.size(),
              files.size() == 1 ? "" : "s", (unsigned long long)docs, (unsigned long long)bytes);
  int64_t vocab = trainTokenizer(o.t);
  std::unique_ptr<Tokenizer> tok = loadSentencePiece(o.t.outPath);
  std::printf("tokenizer: sentencepiece %s, vocab %lld (%s; 256 byte pieces) -> %s\n",
              o.t.modelType.c_str(), (long long)vocab, specialList(tok->specialTokens()).c_str(),
              o.t.outPath.c_str());
}

void add(CLI::App &app) {
  auto *data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto *cmd = data->add_subcommand(
      "build", "Text files -> token shards (train.bin, val.bin, meta.json); JSON Lines -> example shards");
  auto o = std::make_shared<Options>();
  cmd->add_option("--input", o->inputs,
                  "Text or fortune files, or directories of them (every regular file, sorted; "
                  "*.dat index files and binaries skipped)")
      ->required();
  cmd->add_option("--out", o->out, "Output directory")->required();
  addRealOption(cmd, "--val-fraction", o->valFraction, 0, 1,
                "Fraction of documents held out for validation, below 1 (0: no validation split)");
  addU64Option(cmd, "--seed", o->seed, "Seed of the train/validation split (64 bits)");
  cmd->add_option("--format", o->format,
                  "auto | fortune (split on '%' lines) | text (paragraphs) | jsonl (records -> example shards)");
  cmd->add_option("--fields", o->fields,
                  "jsonl: the keys to keep, NAME or NAME:KIND (KIND text, label, target, span; default text)")
      ->delimiter(',');
  cmd->add_option("--val-input", o->valInputs,
                  "jsonl: files whose records are the validation split (instead of --val-fraction)");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "SentencePiece model (`lmrt data tokenizer train`); default: bytes");
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace files in --out that are not an earlier build's (an earlier build is replaced without it)");
  cmd->callback([o] { build(*o); });

  auto *tok = data->add_subcommand("tokenizer", "Train tokenizers");
  tok->require_subcommand(1);
  auto *train = tok->add_subcommand("train", "Train a SentencePiece model on text files");
  auto t = std::make_shared<TrainTokOptions>();
  train->add_option("--input", t->inputs, "Text or fortune files, or directories of them (as data build)")
      ->required();
  train->add_option("--format", t->format, "auto | fortune | text (as data build)");
  train->add_option("--model-type", t->t.modelType, "bpe | unigram");
  addIntOption(train, "--vocab", t->t.vocab, 1, kMaxTokenizerVocab,
               "Vocabulary size (256 byte pieces and the specials included)")
      ->required();
  train->add_option("--special", t->t.specials,
                    "Special tokens to declare, of pad, bos, eos, cls, sep, mask (default: all)")
      ->delimiter(',');
  addIntOption(train, "--threads", t->t.threads, 1, kMaxTokenizerThreads, "Trainer threads (1 to 1024)");
  train->add_option("--out", t->t.outPath, "The model file to write (tok.model)")->required();
  train->add_flag("--overwrite", t->overwrite,
                  "Replace an existing --out that is not a SentencePiece model (a model is replaced without it)");
  train->callback([t] { trainTok(*t); });
}

RegisterCommand reg("data", add);

}  // namespace
}  // namespace lmrt
