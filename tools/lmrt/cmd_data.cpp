/* Implements: `lmrt data build --input PATH... --out DIR`: text (fortune files,
   plain text, or directories of them) -> byte-level train/val token shards and
   meta.json. Prints what it read, skipped and wrote. */
#include <cstdio>
#include <map>
#include <memory>

#include "runtime/data/dataset_builder.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  double valFraction = 0.05;
  uint64_t seed = 1;
  std::string format = "auto";
};

void build(const Options &o) {
  DatasetBuildOptions b;
  b.inputs = o.inputs;
  b.outDir = o.out;
  b.valFraction = o.valFraction;
  b.seed = o.seed;
  b.format = parseTextFormat(o.format);
  DatasetBuildStats s = buildDataset(b);
  // Fortune directories hold an index (*.dat) and a *.u8 link per file: count
  // those by reason instead of listing dozens of lines.
  std::map<std::string, int> reasons;
  for (const std::string &skip : s.skipped) {
    size_t open = skip.rfind(" (");
    std::string reason = open == std::string::npos ? "" : skip.substr(open + 2, skip.size() - open - 3);
    if (reason == "fortune index" || reason == "same file as an earlier input")
      ++reasons[reason];
    else
      std::printf("skipped %s\n", skip.c_str());
  }
  for (const auto &[reason, n] : reasons)
    std::printf("skipped %d file%s: %s\n", n, n == 1 ? "" : "s", reason.c_str());
  std::printf("read %zu file%s: %llu documents\n", s.files.size(), s.files.size() == 1 ? "" : "s",
              (unsigned long long)(s.trainDocs + s.valDocs));
  std::printf("train: %llu documents, %llu tokens -> %s/train.bin\n", (unsigned long long)s.trainDocs,
              (unsigned long long)s.trainTokens, o.out.c_str());
  std::printf("val:   %llu documents, %llu tokens -> %s/val.bin\n", (unsigned long long)s.valDocs,
              (unsigned long long)s.valTokens, o.out.c_str());
  std::printf("tokenizer: bytes (vocab %lld) -> %s/meta.json\n", (long long)kByteVocab, o.out.c_str());
}

void add(CLI::App &app) {
  auto *data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto *cmd = data->add_subcommand("build", "Text files -> byte-level token shards (train.bin, val.bin)");
  auto o = std::make_shared<Options>();
  cmd->add_option("--input", o->inputs,
                  "Text or fortune files, or directories of them (every regular file, sorted; "
                  "*.dat index files and binaries skipped)")
      ->required();
  cmd->add_option("--out", o->out, "Output directory")->required();
  cmd->add_option("--val-fraction", o->valFraction, "Fraction of documents held out for validation");
  cmd->add_option("--seed", o->seed, "Seed of the train/validation split");
  cmd->add_option("--format", o->format, "auto | fortune (split on '%' lines) | text (paragraphs)");
  cmd->callback([o] { build(*o); });
}

RegisterCommand reg("data", add);

}  // namespace
}  // namespace lmrt
