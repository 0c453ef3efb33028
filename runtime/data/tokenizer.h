/* Implements: the tokenizers of `lmrt data` and `lmrt sample`: bytes (one token
   per byte, vocabulary 256) or a SentencePiece model (BPE or unigram) through
   Debian's libsentencepiece, and training SentencePiece models on text.

   Trained models are lossless on any UTF-8 text: no normalization, no dummy
   prefix, whitespace kept as written, and byte fallback (the 256 byte pieces
   <0x00>..<0xFF> are in every vocabulary, so characters never seen in
   training, or too rare for the 0.9995 character coverage, are spelled in
   bytes instead of <unk>). Special tokens are declared
   once, when the model is trained, and read back from the model by everything
   after it (`data build` records them in meta.json):

     unk 0 (SentencePiece requires it), then in this order those declared of
     pad, bos, eos (SentencePiece's own ids) and cls, sep, mask (control
     symbols "<cls>", "<sep>", "<mask>"). */
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lmrt {

/* The special tokens a tokenizer can declare, in id order after unk. */
extern const char *const kSpecialTokenNames[6];  // pad bos eos cls sep mask

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  /* "bytes" or "sentencepiece". */
  virtual const char *kind() const = 0;
  virtual int64_t vocab() const = 0;
  virtual std::vector<int32_t> encode(const std::string &text) const = 0;
  /* Text of the ids; control tokens (bos, eos, ...) decode to nothing. */
  virtual std::string decode(const std::vector<int32_t> &ids) const = 0;
  /* The text of one id as the tokenizer spells it: a byte; a SentencePiece
     piece with its U+2581 for a space, a byte piece as its byte, "" for control
     and unknown tokens. Throws for an id outside the vocabulary. */
  virtual std::string piece(int32_t id) const = 0;
  /* (name, id) of every special token the tokenizer has, unk included, by id. */
  virtual std::vector<std::pair<std::string, int32_t>> specialTokens() const = 0;
  /* The id of special token `name`, or -1. */
  int32_t specialId(const std::string &name) const {
    for (const auto &[n, id] : specialTokens())
      if (n == name) return id;
    return -1;
  }
};

std::unique_ptr<Tokenizer> byteTokenizer();
/* Loads a SentencePiece model file; throws naming the file if it is not one. */
std::unique_ptr<Tokenizer> loadSentencePiece(const std::string &modelPath);

struct TokenizerTrainOptions {
  std::vector<std::string> texts;  // training text, split into lines by the trainer
  std::string modelType = "bpe";   // bpe | unigram
  int64_t vocab = 0;
  std::vector<std::string> specials = {"pad", "bos", "eos", "cls", "sep", "mask"};
  std::string outPath;             // the .model file (written atomically)
  int threads = 1;
};

/* Bounds of `--vocab` and `--threads`: no tokenizer in use has more than 2^24
   ids (the largest, Gemma's, has 262,144), and the trainer's threads are
   lmrt's own bound. */
constexpr int64_t kMaxTokenizerVocab = int64_t(1) << 24;
constexpr int kMaxTokenizerThreads = 1024;

/* Throws naming the flag when an option is out of bounds: an unknown model type
   or special token, a special token named twice, a vocabulary too small for the
   byte pieces and the specials (or over kMaxTokenizerVocab), threads outside
   [1, kMaxTokenizerThreads]. */
void checkTokenizerTrainOptions(const TokenizerTrainOptions &options);

/* Before any text is read: the options, then outPath by the output rules
   (base/paths.h): its missing folders created, not one of `inputFiles`, and an
   existing file replaced only when it is a SentencePiece model (an earlier
   training's) or with `overwrite`. A stale outPath.tmp is removed, said on `log`. */
void prepareTokenizerOutput(const TokenizerTrainOptions &options, const std::vector<std::string> &inputFiles,
                            bool overwrite, FILE *log);

/* True when `path` loads as a SentencePiece model. */
bool isSentencePieceModel(const std::string &path);

/* Trains a model and writes it to outPath; returns the vocabulary size. Throws
   with SentencePiece's message (e.g. a vocabulary too large for the text); the
   options are checked first (checkTokenizerTrainOptions), outPath is the
   caller's to check (prepareTokenizerOutput). */
int64_t trainTokenizer(const TokenizerTrainOptions &options);

}  // namespace lmrt
