/* Implements: word boundaries in token ids, for the span_mlm transform's whole
   word spans (SpanBERT masks complete words; span_mlm.h).

   Every id of a tokenizer has a class, from its piece (Tokenizer::piece):
     Space      a piece of whitespace only (bytes 9-13 and 32, or U+2581, the
                SentencePiece space), or an empty one (control tokens): it
                separates words and belongs to none;
     WordStart  a piece that begins with whitespace or U+2581 and has more:
                SentencePiece's "\u2581the" begins a word (the space it carries is
                part of the word's first piece);
     Inner      any other piece: it continues the word before it, or begins one
                right after a Space.
   So on the byte vocabulary a word is a maximal run of non-whitespace bytes,
   punctuation included ("end." is one word, as SentencePiece keeps it: its
   pieces for "end." are "\u2581end" and "." with one word start), and with
   SentencePiece a word starts at a piece beginning with U+2581 or after a
   whitespace piece (a newline, spelled <0x0A>). */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmrt {

class Tokenizer;

enum class TokenClass : uint8_t { Inner, Space, WordStart };

/* The class of one piece's text (as above). */
TokenClass classOfPiece(const std::string &piece);

/* The class of every id of `tok`. Throws, naming the tokenizer, if no id
   separates or begins a word (then ids give no word boundaries: use
   span_mlm(unit = "token")). */
std::vector<TokenClass> tokenClasses(const Tokenizer &tok);

/* A word: the token positions [start, end) of a row. */
struct Word {
  int64_t start, end;
};

/* The complete words of text[0, n): `before` and `after` are the ids just
   outside it in the stream (-1 at its ends), so a word cut by either edge of
   the row is left out. Ids index `classes`. */
std::vector<Word> findWords(const int32_t *text, int64_t n, int64_t before, int64_t after,
                            const std::vector<TokenClass> &classes);

}  // namespace lmrt
