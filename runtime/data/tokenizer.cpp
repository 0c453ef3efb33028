/* Implements: the byte and SentencePiece tokenizers and SentencePiece training
   (see tokenizer.h). */
#include "runtime/data/tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "runtime/data/sentencepiece_plugin.h"

#include "base/file_io.h"
#include "base/paths.h"
#include "base/tensor.h"

namespace lmrt {

const char *const kSpecialTokenNames[6] = {"pad", "bos", "eos", "cls", "sep", "mask"};

namespace {

class ByteTokenizer final : public Tokenizer {
public:
  const char *kind() const override { return "bytes"; }
  int64_t vocab() const override { return 256; }
  std::vector<int32_t> encode(const std::string &text) const override {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string decode(const std::vector<int32_t> &ids) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id < 0 || id > 255) fail("token %d is not a byte (the byte tokenizer has 256 ids)", id);
      s.push_back((char)id);
    }
    return s;
  }
  std::string piece(int32_t id) const override { return decode({id}); }
  std::vector<std::pair<std::string, int32_t>> specialTokens() const override { return {}; }
};

/* Creates the output's missing parent folders (docs/runtime.md: `--out
   new/dir/tok.model` makes new/dir). */
void makeParentFolders(const std::string &out) {
  size_t slash = out.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  std::string dir = out.substr(0, slash);
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    std::string part = dir.substr(0, at);
    struct stat st;
    if (::stat(part.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) fail("--out '%s': '%s' is not a directory", out.c_str(), part.c_str());
    } else if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) {
      fail("--out '%s': cannot create directory '%s': %s", out.c_str(), part.c_str(), std::strerror(errno));
    }
  }
}

}  // namespace

std::unique_ptr<Tokenizer> byteTokenizer() { return std::make_unique<ByteTokenizer>(); }

namespace {

/* The SentencePiece plugin, loaded once and never unloaded. Debian's
   libsentencepiece carries its own copy of protobuf 3.14 and exports it; in one
   symbol scope with the protobuf 3.21 that plans use, the two copies bind to
   each other and the process aborts at startup. So lmrt does not link it: the
   plugin (sentencepiece_plugin.cpp) links it, and is opened with RTLD_LOCAL (its
   symbols stay out of lmrt's scope) and RTLD_DEEPBIND (it binds to its own
   copies first). It lives in the lib/ folder beside lmrt's bin/, as built and as
   installed. */
struct Plugin {
  decltype(&lmrtSentencePieceLoad) load = nullptr;
  decltype(&lmrtSentencePieceTrain) train = nullptr;
};

const Plugin &plugin() {
  static Plugin p = [] {
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string dir = n > 0 ? std::string(exe, (size_t)n) : std::string();
    dir = dir.substr(0, dir.rfind('/'));
    dir = dir.substr(0, dir.rfind('/'));
    std::string path = dir + "/lib/" + kSentencePiecePluginName;
    void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
      std::string first = ::dlerror();
      // Not beside us: let the dynamic loader's search path find it.
      h = ::dlopen(kSentencePiecePluginName, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (!h)
        fail("cannot load the SentencePiece plugin: %s (install libsentencepiece-dev with "
             "scripts/setup.sh and rebuild)", first.c_str());
    }
    Plugin q;
    q.load = reinterpret_cast<decltype(q.load)>(::dlsym(h, "lmrtSentencePieceLoad"));
    q.train = reinterpret_cast<decltype(q.train)>(::dlsym(h, "lmrtSentencePieceTrain"));
    if (!q.load || !q.train) fail("%s lacks the lmrt entry points", path.c_str());
    return q;
  }();
  return p;
}

}  // namespace

std::unique_ptr<Tokenizer> loadSentencePiece(const std::string &modelPath) {
  // Read it ourselves: a clear error for a missing or non-regular file, and
  // SentencePiece gets bytes rather than a path it reports tersely.
  std::string bytes = readWholeFile(modelPath, "tokenizer model");
  std::string error;
  Tokenizer *t = plugin().load(modelPath, bytes, error);
  if (!t) fail("%s is not a SentencePiece model: %s", modelPath.c_str(), error.c_str());
  return std::unique_ptr<Tokenizer>(t);
}

bool isSentencePieceModel(const std::string &path) {
  try {
    loadSentencePiece(path);
    return true;
  } catch (const Error &) {
    return false;
  }
}

void checkTokenizerTrainOptions(const TokenizerTrainOptions &o) {
  if (o.modelType != "bpe" && o.modelType != "unigram")
    fail("tokenizer train: --model-type must be bpe or unigram (got '%s')", o.modelType.c_str());
  if (o.outPath.empty()) fail("tokenizer train: no --out given");
  for (size_t i = 0; i < o.specials.size(); ++i) {
    const std::string &s = o.specials[i];
    if (std::find_if(std::begin(kSpecialTokenNames), std::end(kSpecialTokenNames),
                     [&](const char *n) { return s == n; }) == std::end(kSpecialTokenNames))
      fail("tokenizer train: unknown special token '%s' (known: pad, bos, eos, cls, sep, mask)",
           s.c_str());
    // A second 'pad' would reserve an id that no token ever gets.
    if (std::find(o.specials.begin(), o.specials.begin() + (ptrdiff_t)i, s) != o.specials.begin() + (ptrdiff_t)i)
      fail("tokenizer train: --special names '%s' twice; name each special token once", s.c_str());
  }
  if (o.threads < 1 || o.threads > kMaxTokenizerThreads)
    fail("tokenizer train: --threads %d is outside [1, %d]", o.threads, kMaxTokenizerThreads);
  const int64_t reserved = 1 + (int64_t)o.specials.size();
  if (o.vocab < reserved + 256 + 1)
    fail("tokenizer train: --vocab %lld is too small: the byte pieces take 256 ids and unk plus "
         "the %zu declared special tokens take %lld; use at least %lld", (long long)o.vocab,
         o.specials.size(), (long long)reserved, (long long)(reserved + 256 + 1));
  if (o.vocab > kMaxTokenizerVocab)
    fail("tokenizer train: --vocab %lld is larger than %lld", (long long)o.vocab, (long long)kMaxTokenizerVocab);
}

void prepareTokenizerOutput(const TokenizerTrainOptions &o, const std::vector<std::string> &inputFiles,
                            bool overwrite, FILE *log) {
  checkTokenizerTrainOptions(o);
  makeParentFolders(o.outPath);
  std::vector<NamedPath> inputs;
  for (const std::string &f : inputFiles) inputs.push_back({"--input", f});
  checkOutputs({{"--out", o.outPath, false, IfExists::ReplaceEarlier, isSentencePieceModel, "a SentencePiece model"}},
               inputs, overwrite, log);
}

int64_t trainTokenizer(const TokenizerTrainOptions &o) {
  checkTokenizerTrainOptions(o);
  auto declared = [&](const char *n) {
    return std::find(o.specials.begin(), o.specials.end(), n) != o.specials.end();
  };
  // unk 0, then the declared specials in a fixed order.
  std::unordered_map<std::string, std::string> args = {
      {"model_type", o.modelType},
      {"vocab_size", std::to_string(o.vocab)},
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"byte_fallback", "true"},
      {"character_coverage", "0.9995"},  // SentencePiece's default; rarer characters are spelled in bytes
      {"num_threads", std::to_string(o.threads)},
      {"minloglevel", "2"},
      {"unk_id", "0"}};
  int next = 1;
  for (const char *n : {"pad", "bos", "eos"})
    args[std::string(n) + "_id"] = declared(n) ? std::to_string(next++) : "-1";
  std::string controls;
  for (const char *n : {"cls", "sep", "mask"})
    if (declared(n)) controls += (controls.empty() ? "<" : ",<") + std::string(n) + ">";
  if (!controls.empty()) args["control_symbols"] = controls;

  std::string model, error;
  if (!plugin().train(args, o.texts, model, error)) fail("tokenizer train: %s", error.c_str());
  writeFileAtomic(o.outPath, "tokenizer model", [&](std::ostream &f) { f << model; });
  return loadSentencePiece(o.outPath)->vocab();
}

}  // namespace lmrt
