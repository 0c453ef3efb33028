/* Implements: `lmrt data build --format jsonl --fields ...`: JSON Lines (one
   JSON object a line, the format of Hugging Face `datasets` exports) -> example
   shards (examples.h) train.examples and val.examples, and meta.json.

   --fields lists the keys to keep, each NAME or NAME:KIND (KIND text, words,
   label, target, span or tags; text by default); other keys of a record are
   ignored. A text field is a string, tokenized with the dataset's tokenizer
   (bytes, or the SentencePiece model of --tokenizer); a words field an array of
   non-empty strings, stored as the text of the words joined by spaces; a label
   an integer >= 0; a target a finite number; a span the answer in the text field before it,
   as character offsets [start, end) (Python's text[start:end]) or SQuAD's
   answers object {"text": [...], "answer_start": [...]} (its first answer, which
   must be the text there), stored as the answer's first and last token (byte
   data only); a tags field an array of integers >= 0, one
   per word of the words field before it, stored per token (the tag on a word's
   first token, -100 on its other tokens and on the spaces). Every listed key must be in every record.
   A record goes to validation by the same counter-based hash of (seed, record
   index) as a text build's documents, or, with valInputs, the records of those
   files are the validation split (a dataset's own held-out file). Every error
   in a record names FILE:LINE. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/data/examples.h"

namespace lmrt {

struct JsonlBuildOptions {
  std::vector<std::string> inputs;     // JSON Lines files
  std::vector<std::string> valInputs;  // optional: the validation split's own files
  std::string outDir;
  std::vector<std::string> fields;     // NAME[:KIND]
  double valFraction = 0.05;
  uint64_t seed = 1;
  std::string tokenizer;  // SentencePiece model; "" = bytes
  bool overwrite = false;
  FILE *log = nullptr;
};

struct JsonlSplitStats {
  uint64_t records = 0, tokens = 0;
  std::vector<std::vector<uint64_t>> labelCounts;  // per label field, per class
};

struct JsonlBuildStats {
  std::vector<ExampleField> fields;
  std::vector<int64_t> classes;  // per field: a label field's largest label + 1, else 0
  JsonlSplitStats train, val;
  std::string tokenizer = "bytes";
  int64_t vocab = 256;
};

/* The fields of a --fields list; throws on an unknown kind, an empty or
   repeated name, or a list with no text field. */
std::vector<ExampleField> parseFieldList(const std::vector<std::string> &specs);

JsonlBuildStats buildJsonlDataset(const JsonlBuildOptions &options);

}  // namespace lmrt
