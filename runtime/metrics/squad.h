/* Implements: SQuAD v1.1's answer scoring (the official evaluate-v1.1.py) for
   `lmrt metrics --task squad`: exact match and token F1 of a predicted answer
   against the gold answers, each the best over the gold answers.

   Normalisation, as normalize_answer: lowercase, remove punctuation (Python's
   string.punctuation, the 32 ASCII marks), replace the words a, an, the by a
   space, then collapse whitespace runs to one space and trim. Text is UTF-8;
   what differs from Python on non-ASCII text: lowercasing covers ASCII,
   Latin-1, Greek and Cyrillic capitals (not every Unicode case pair), only ASCII
   whitespace separates words, and every non-ASCII character counts as a word
   character for the article rule (Python's \b treats non-ASCII punctuation as
   a boundary). On ASCII text the result is the official script's. */
#pragma once
#include <string>
#include <vector>

namespace lmrt::metrics {

std::string normalizeAnswer(const std::string &text);

/* 1 when the normalised texts are equal, else 0. */
double exactMatch(const std::string &prediction, const std::string &gold);

/* F1 over the multiset of whitespace tokens of the normalised texts:
   common = Σ_token min(count in prediction, count in gold); 0 when nothing is
   common (so also when either side normalises to nothing, as in v1.1; v2.0
   scores two empty answers 1), else 2·P·R / (P + R) with P = common/|pred|,
   R = common/|gold|. */
double tokenF1(const std::string &prediction, const std::string &gold);

/* SQuAD v2.0's F1 (evaluate-v2.0.py's compute_f1): tokenF1, except that
   when either side normalises to nothing it is 1 if both do, else 0. */
double tokenF1V2(const std::string &prediction, const std::string &gold);

/* SQuAD v2.0's gold answers of a record (get_raw_scores): those that
   normalise to something; none left (an unanswerable question) gives {""}. */
std::vector<std::string> goldAnswersV2(const std::vector<std::string> &answers);

/* The maximum of a metric over the gold answers (at least one). */
double bestExactMatch(const std::string &prediction, const std::vector<std::string> &answers);
double bestTokenF1(const std::string &prediction, const std::vector<std::string> &answers);

}  // namespace lmrt::metrics
