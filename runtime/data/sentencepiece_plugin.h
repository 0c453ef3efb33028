/* Implements: the entry points of the SentencePiece plugin
   (liblmrt_sentencepiece.so, sentencepiece_plugin.cpp), which tokenizer.cpp
   opens with dlopen; see there for why SentencePiece lives in a plugin. Errors
   come back as strings: nothing is thrown across the boundary, except from the
   Tokenizer methods, which throw std::runtime_error. */
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/data/tokenizer.h"

namespace lmrt {
constexpr const char *kSentencePiecePluginName = "liblmrt_sentencepiece.so";
}

extern "C" {
/* A tokenizer for the serialized model `bytes` (read from `path`), or nullptr
   with `error` set. */
lmrt::Tokenizer *lmrtSentencePieceLoad(const std::string &path, const std::string &bytes,
                                       std::string &error);
/* Trains with SentencePiece's `args` on the lines of `texts`; false with `error`
   set on failure, else the serialized model in `model`. */
bool lmrtSentencePieceTrain(const std::unordered_map<std::string, std::string> &args,
                            const std::vector<std::string> &texts, std::string &model,
                            std::string &error);
}
