/* Implements: the table of batch transforms, what each one's parameters are
   and which named inputs it produces (docs/runtime.md, "Batch transforms").
   Header-only plain C++, shared by the three places that must agree: the
   frontend (`data = mlm(...)` in a train section, and the bounds it puts on
   the objective's inputs), the plan contract (lmc and lmrt check a plan's
   DataConfig against it) and the runtime's transforms that fill the inputs.

   Special tokens take the ids just above the 256 bytes of the byte vocabulary,
   so a model with vocab >= 260 can read byte data with BERT's four specials. */
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lmrt {
namespace data {

constexpr int32_t kPad = 256, kCls = 257, kSep = 258, kMask = 259;
constexpr int32_t kFirstSpecial = 256;  // random replacements are drawn from [0, kFirstSpecial)
constexpr int64_t kMinMlmVocab = 260;   // the specials must be ids of the model
constexpr int64_t kIgnoreIndex = -100;  // labels of positions that carry no loss (as PyTorch)
// The span_corruption transform's ids are T5's (its SentencePiece vocabulary):
// pad 0, which is also the decoder's start id, and EOS 1; sentinel k (k = 0, 1,
// ...) is vocab - 1 - k, counting down from the top of the vocabulary.
constexpr int32_t kT5Pad = 0, kT5Eos = 1;

/* Python's round() and NumPy's np.round: to the nearest integer, halves to even. */
inline int64_t roundHalfEven(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return (int64_t)r;
}

/* The noise of a span-corrupted row of `tokens` raw tokens, as HF's
   random_spans_noise_mask (run_t5_mlm_flax.py): noise tokens round(tokens x
   density) kept in [1, tokens - 1], and noise spans round(min(noise, non-noise)
   / mean_span) at least 1. */
struct SpanNoise {
  int64_t noise, spans;
};
inline SpanNoise spanNoise(int64_t tokens, double density, double meanSpan) {
  int64_t noise = roundHalfEven((double)tokens * density);
  noise = std::min(std::max(noise, (int64_t)1), tokens - 1);
  int64_t spans = roundHalfEven((double)std::min(noise, tokens - noise) / meanSpan);
  return {noise, std::max(spans, (int64_t)1)};
}

/* HF's compute_input_and_target_lengths (run_t5_mlm_flax.py): the raw tokens a
   row reads and the targets' length, for inputs of exactly `inputs` ids (the
   kept tokens, one sentinel a span, EOS). -1, -1 when no raw length fits. */
struct SpanCorruptionLengths {
  int64_t raw, targets;
};
inline SpanCorruptionLengths spanCorruptionLengths(int64_t inputs, double density, double meanSpan) {
  auto lengths = [&](int64_t tokens) {
    int64_t noise = roundHalfEven((double)tokens * density);
    int64_t spans = roundHalfEven((double)noise / meanSpan);
    return std::pair<int64_t, int64_t>{tokens - noise + spans + 1, noise + spans + 1};
  };
  int64_t tokens = inputs;
  while (lengths(tokens + 1).first <= inputs) tokens += 1;
  std::pair<int64_t, int64_t> l = lengths(tokens);
  // HF's "minor hack" so that targets are no longer than inputs at density 0.5.
  if (density == 0.5 && l.second > l.first) {
    tokens -= 1;
    l.second -= 1;
  }
  if (l.first != inputs || tokens < 2) return {-1, -1};
  return {tokens, l.second};
}

/* Which bound an output's ids have: none (a float mask), the vocabulary, or 2
   (segment ids and pair labels); Rows: batch * seq (row indices into the
   batch's hidden states flattened to [batch * seq, d]); Param: the value of
   the transform parameter named by boundParam; Seq: seq (positions in a row). */
enum class Bound { None, Vocab, Two, Rows, Param, Seq };

/* Outputs of a transform with a `pack` parameter (several examples a row,
   runtime/data/packing.h) exist in both layouts, only packed or only padded. */
enum class Packing { Any, Only, Never };

struct TransformOutput {
  const char *name;
  bool isFloat;      // f32 (or the plan's float type); else i32
  bool perRow;       // shape [batch]; else [batch, seq]
  Bound bound;
  bool ignoreIndex;  // accepts kIgnoreIndex besides [0, bound)
  bool needsNsp;     // produced only with nsp = 1
  const char *what;  // for docs and error messages
  const char *boundParam = nullptr;  // Bound::Param: the parameter whose value bounds the ids
  bool needsSop = false;  // produced only with sop = 1
  bool targetSeq = false;  // shape [batch, target_seq] (the decoder's side, targetSeqLength); else [batch, seq]
  Packing packing = Packing::Any;  // whether the output exists with pack = 1, without it, or both
};

struct TransformParam {
  const char *name;
  double defaultValue;
  double lo, hi;      // inclusive bounds
  bool isBool;        // 0 or 1 (the language's false / true)
  const char *what;
  bool isInt = false;  // a whole number
  // A choice among names ("word|token"): written as a string in the language,
  // stored in the plan as its index (params are numbers), default index first.
  const char *choices = nullptr;
};

/* The names of a choice parameter, in index order. */
inline std::vector<std::string> choiceNames(const TransformParam &p) {
  std::vector<std::string> out;
  if (!p.choices) return out;
  std::string all = p.choices;
  for (size_t at = 0;;) {
    size_t bar = all.find('|', at);
    out.push_back(all.substr(at, bar - at));
    if (bar == std::string::npos) return out;
    at = bar + 1;
  }
}

/* The index of `name` among a choice's names, or -1. */
inline int choiceIndex(const TransformParam &p, const std::string &name) {
  std::vector<std::string> names = choiceNames(p);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return (int)i;
  return -1;
}

/* "\"word\" (0) or \"token\" (1)": a choice's values, for messages. */
inline std::string choiceList(const TransformParam &p) {
  std::vector<std::string> names = choiceNames(p);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + "\"" + names[i] + "\" (" +
         std::to_string(i) + ")";
  return s;
}

struct TransformSpec {
  const char *name;
  std::vector<TransformOutput> outputs;  // empty for "causal": one window input of any name
  std::vector<TransformParam> params;
};

inline const std::vector<TransformSpec> &transformSpecs() {
  // The outputs and the parameter of every transform that packs
  // (runtime/data/packing.h).
  const TransformOutput docIds{
      "doc_ids", false, false, Bound::Seq, false, false,
      "k on the tokens of the row's k-th example (0, 1, ...), the row's count of examples on its padding: "
      "attention(..., segments = doc_ids) keeps each example to itself",
      nullptr, false, false, Packing::Only};
  const TransformOutput positions{
      "positions", false, false, Bound::Seq, false, false,
      "a token's position in its example (0 at its first token; the padding counts on from 0)", nullptr, false,
      false, Packing::Only};
  // Pooling a packed example (classify, regression): slot k of row b names
  // the row of the flattened hidden states [batch * seq, d] it reads.
  const TransformOutput clsIndex{
      "cls_index", false, false, Bound::Rows, false, false,
      "row b * seq + i of the [CLS] of the row's k-th example at [b, k] (b * seq past the row's examples)",
      nullptr, false, false, Packing::Only};
  const TransformOutput lastIndex{
      "last_index", false, false, Bound::Rows, false, false,
      "row b * seq + i of the last token of the row's k-th example at [b, k] (last-token pooling; b * seq past "
      "the row's examples)",
      nullptr, false, false, Packing::Only};
  const TransformParam pack{"pack", 0.0, 0.0, 1.0, true,
                            "several examples a row (in the epoch's order, a row closed when the next example "
                            "does not fit), attention kept within each by doc_ids"};
  static const std::vector<TransformSpec> specs = {
      {"causal", {}, {}},
      {"mlm",
       {
           {"ids", false, false, Bound::Vocab, false, false,
            "[CLS] A [SEP] (B [SEP]) [PAD]..., 15 % of A and B corrupted 80/10/10"},
           {"labels", false, false, Bound::Vocab, true, false,
            "the original id at the selected positions, -100 elsewhere"},
           {"segments", false, false, Bound::Two, false, false, "0 up to the first [SEP], 1 after, 0 on padding"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"nsp_labels", false, true, Bound::Two, false, true, "0: B follows A, 1: B is random (nsp = true)"},
           {"random_bits", false, false, Bound::None, false, false,
            "32 random bits a position (any i32), keyed by (seed, step, sample): the draws of sample()"},
           {"sop_labels", false, true, Bound::Two, false, false,
            "0: A then B in document order, 1: swapped (sop = true)", nullptr, true},
       },
       {
           {"mask_prob", 0.15, 0.0, 1.0, false, "probability that a non-special token is selected"},
           {"nsp", 0.0, 0.0, 1.0, true, "form sentence pairs A, B with 50 % random B"},
           {"short_seq_prob", 0.0, 0.0, 1.0, false, "probability that a row is shorter than seq (padded)"},
           {"sop", 0.0, 0.0, 1.0, true,
            "form sentence pairs A, B of consecutive text of one document, swapped with probability 1/2 "
            "(ALBERT's sentence-order prediction)"},
       }},
      // SpanBERT's (runtime/data/span_mlm.h): contiguous spans masked, and for
      // the span boundary objective each masked token's boundary rows and
      // its offset in its span.
      {"span_mlm",
       {
           {"ids", false, false, Bound::Vocab, false, false,
            "[CLS] text [SEP], spans covering 15 % of the text corrupted 80/10/10 per span"},
           {"labels", false, false, Bound::Vocab, true, false,
            "the original id at the masked positions, -100 elsewhere"},
           {"attention_mask", true, false, Bound::None, false, false, "1 everywhere (rows are never padded)"},
           {"span_left", false, false, Bound::Rows, false, false,
            "row b * seq + s - 1 of a masked token's span [s, e] (the token before it); b * seq + i elsewhere"},
           {"span_right", false, false, Bound::Rows, false, false,
            "row b * seq + e + 1 of a masked token's span [s, e] (the token after it); b * seq + i elsewhere"},
           {"span_pos", false, false, Bound::Param, false, false,
            "i - s, a masked token's offset in its span, in tokens (0 elsewhere)", "max_span_tokens"},
       },
       {
           {"mask_prob", 0.15, 0.0, 0.5, false, "fraction of the text tokens masked (the budget: ceil of it)"},
           {"geometric_p", 0.2, 0.01, 1.0, false, "span lengths ~ Geometric(geometric_p) truncated to [1, max_span]"},
           {"max_span", 10, 1, 512, false, "the longest span, in units (words or tokens)", true},
           {"unit", 0, 0, 1, false,
            "what a span's length counts: \"word\" (whole words, as the paper) or \"token\"", true,
            "word|token"},
           {"max_span_tokens", 15, 1, 512, false,
            "the most tokens a span has (bounds span_pos: the SBO's position table); longer word spans "
            "keep fewer words", true},
       }},
      // T5's pretraining rows (runtime/data/span_corruption.h): noise spans of
      // the raw text replaced by sentinels in the inputs, the targets the
      // spans after their sentinels; the decoder reads the targets shifted right.
      {"span_corruption",
       {
           {"ids", false, false, Bound::Vocab, false, false,
            "the raw text with each noise span replaced by its sentinel, then EOS (exactly seq ids)"},
           {"attention_mask", true, false, Bound::None, false, false,
            "1 on real tokens, 0 on padding (all 1: the rows have their exact lengths)"},
           {"decoder_ids", false, false, Bound::Vocab, false, false,
            "the targets shifted right, starting with the start id 0 (T5's pad)", nullptr, false, true},
           {"labels", false, false, Bound::Vocab, true, false,
            "each noise span after its sentinel, then EOS; -100 on padding", nullptr, false, true},
       },
       {
           {"noise_density", 0.15, 0.01, 0.5, false, "the share of the raw tokens that are noise"},
           {"mean_noise_span_length", 3.0, 1.0, 100.0, false, "the mean length of a noise span, in tokens"},
       }},
      // Example datasets (runtime/data/example_batches.h): one or two texts
      // of a record in a padded row, and its label or target.
      {"classify",
       {
           {"ids", false, false, Bound::Vocab, false, false, "[CLS] text [SEP] (text_b [SEP]) [PAD]..."},
           {"segments", false, false, Bound::Two, false, false, "0 up to the first [SEP], 1 after, 0 on padding"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"labels", false, true, Bound::Param, true, false,
            "the record's label; -100 on validation rows past the last record", "classes", false, false,
            Packing::Never},
           {"last", false, true, Bound::Rows, false, false,
            "row b * seq + i of the row's last real token (last-token pooling)", nullptr, false, false,
            Packing::Never},
           docIds,
           positions,
           clsIndex,
           lastIndex,
           {"example_labels", false, false, Bound::Param, true, false,
            "the label of the row's k-th example at [b, k]; -100 past the row's examples", "classes", false, false,
            Packing::Only},
       },
       {
           {"classes", 2, 1, 1 << 20, false, "the number of classes (labels are 0 .. classes - 1)", true},
           pack,
       }},
      {"regression",
       {
           {"ids", false, false, Bound::Vocab, false, false, "[CLS] text [SEP] (text_b [SEP]) [PAD]..."},
           {"segments", false, false, Bound::Two, false, false, "0 up to the first [SEP], 1 after, 0 on padding"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"targets", true, true, Bound::None, false, false, "the record's target", nullptr, false, false,
            Packing::Never},
           {"last", false, true, Bound::Rows, false, false,
            "row b * seq + i of the row's last real token (last-token pooling)", nullptr, false, false,
            Packing::Never},
           docIds,
           positions,
           clsIndex,
           lastIndex,
           {"example_targets", true, false, Bound::None, false, false,
            "the target of the row's k-th example at [b, k]; 0 past the row's examples", nullptr, false, false,
            Packing::Only},
           {"example_mask", true, false, Bound::None, false, false,
            "1 at [b, k] where the row has a k-th example (0 past them and on validation rows past the last "
            "record): the mean squared error is sum(err * err * example_mask) / sum(example_mask)",
            nullptr, false, false, Packing::Only},
       },
       {
           pack,
       }},
      // Token classification (example_batches.h): a word's tag on its first token.
      {"tokens",
       {
           {"ids", false, false, Bound::Vocab, false, false, "[CLS] text [SEP] [PAD]..."},
           {"segments", false, false, Bound::Two, false, false, "0 everywhere (one text)"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"labels", false, false, Bound::Param, true, false,
            "a word's tag on its first token, -100 elsewhere", "classes"},
           docIds,
           positions,
       },
       {
           {"classes", 2, 1, 1 << 20, false, "the number of tags (tags are 0 .. classes - 1)", true},
           pack,
       }},
      // Span extraction (example_batches.h, SQuAD-style): a question and the
      // context holding its answer; the answer's first and last token in the row.
      {"span",
       {
           {"ids", false, false, Bound::Vocab, false, false, "[CLS] question [SEP] context [SEP] [PAD]..."},
           {"segments", false, false, Bound::Two, false, false, "0 up to the first [SEP], 1 after, 0 on padding"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"start_positions", false, true, Bound::Seq, true, false,
            "the row position of the answer's first token; 0 ([CLS]) when the answer is cut off; -100 on "
            "validation rows past the last record", nullptr, false, false, Packing::Never},
           {"end_positions", false, true, Bound::Seq, true, false,
            "the row position of the answer's last token; 0 ([CLS]) when the answer is cut off; -100 on "
            "validation rows past the last record", nullptr, false, false, Packing::Never},
           docIds,
           positions,
           // Packed: slot k of row b is the row's k-th example (a record, or
           // with doc_stride a window), its positions counted in the row.
           {"example_start_positions", false, false, Bound::Seq, true, false,
            "the row position of the answer's first token of the row's k-th example at [b, k]; its own [CLS] "
            "when the answer is cut off; -100 past the row's examples",
            nullptr, false, false, Packing::Only},
           {"example_end_positions", false, false, Bound::Seq, true, false,
            "the row position of the answer's last token of the row's k-th example at [b, k]; its own [CLS] "
            "when the answer is cut off; -100 past the row's examples",
            nullptr, false, false, Packing::Only},
       },
       {
           {"max_question", 64, 1, 1 << 20, false,
            "the most tokens a question keeps (BERT's max_query_length); the context fills the rest", true},
           {"doc_stride", 0, 0, 1 << 20, false,
            "0: one window of the context; S > 0: a long context in windows overlapping by S tokens (HF's "
            "doc_stride, 128 in run_qa), each a row", true},
           pack,
       }},
      // Encoder-decoder rows of an input and a target (example_batches.h), as
      // HF's T5 fine-tuning (run_summarization.py): both end with EOS, the
      // decoder reads the labels shifted right after the start id 0.
      {"seq2seq",
       {
           {"ids", false, false, Bound::Vocab, false, false, "input EOS [PAD]... (T5's ids: EOS 1, pad 0)"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on the input and its EOS, 0 on padding"},
           {"decoder_ids", false, false, Bound::Vocab, false, false,
            "the labels shifted right after the start id 0, padding 0", nullptr, false, true},
           {"labels", false, false, Bound::Vocab, true, false,
            "target EOS, -100 on padding (and on validation rows past the last record)", nullptr, false, true},
           docIds,
           positions,
           {"decoder_doc_ids", false, false, Bound::Seq, false, false,
            "k on the decoder tokens of the row's k-th example (the same k as its input's doc_ids), the row's count "
            "of examples on its padding: self-attention keeps to it, cross-attention to equal ids",
            nullptr, false, true, Packing::Only},
       },
       {
           {"target_seq", 0, 0, 1 << 20, false,
            "the decoder rows' length (0: the length of the objective's decoder_ids and labels)", true},
           pack,
       }},
      // Causal rows of a prompt and a response (example_batches.h): the loss
      // on the response only (SFT), and a chosen and a rejected response
      // (reward models, DPO).
      {"sft",
       {
           {"ids", false, false, Bound::Vocab, false, false, "prompt response [SEP] [PAD]..."},
           {"labels", false, false, Bound::Vocab, true, false,
            "the next token where it is the response's or the final [SEP], -100 elsewhere"},
           {"attention_mask", true, false, Bound::None, false, false, "1 on real tokens, 0 on padding"},
           {"last", false, true, Bound::Rows, false, false, "row b * seq + i of the row's final [SEP]", nullptr,
            false, false, Packing::Never},
           docIds,
           positions,
       },
       {
           pack,
       }},
      // Packed (pack = true): the chosen rows hold the chosen examples of some
      // records and the rejected rows the rejected examples of the same
      // records in the same order, so slot k of both sides is one pair.
      {"preference",
       {
           {"chosen_ids", false, false, Bound::Vocab, false, false, "prompt chosen [SEP] [PAD]..."},
           {"chosen_labels", false, false, Bound::Vocab, true, false,
            "the next token where it is the chosen response's or the final [SEP], -100 elsewhere"},
           {"chosen_mask", true, false, Bound::None, false, false, "1 on the chosen row's real tokens"},
           {"chosen_last", false, true, Bound::Rows, false, false, "row b * seq + i of the chosen row's final [SEP]",
            nullptr, false, false, Packing::Never},
           {"rejected_ids", false, false, Bound::Vocab, false, false, "prompt rejected [SEP] [PAD]..."},
           {"rejected_labels", false, false, Bound::Vocab, true, false,
            "the next token where it is the rejected response's or the final [SEP], -100 elsewhere"},
           {"rejected_mask", true, false, Bound::None, false, false, "1 on the rejected row's real tokens"},
           {"rejected_last", false, true, Bound::Rows, false, false,
            "row b * seq + i of the rejected row's final [SEP]", nullptr, false, false, Packing::Never},
           {"chosen_doc_ids", false, false, Bound::Seq, false, false,
            "doc_ids of the chosen rows: k on the k-th pair's chosen example, the row's count of pairs on its "
            "padding", nullptr, false, false, Packing::Only},
           {"chosen_positions", false, false, Bound::Seq, false, false,
            "a chosen token's position in its example", nullptr, false, false, Packing::Only},
           {"chosen_last_index", false, false, Bound::Rows, false, false,
            "row b * seq + i of the final [SEP] of the k-th chosen example at [b, k] (b * seq past the pairs)",
            nullptr, false, false, Packing::Only},
           {"rejected_doc_ids", false, false, Bound::Seq, false, false,
            "doc_ids of the rejected rows (the same pairs in the same order as the chosen rows)", nullptr, false,
            false, Packing::Only},
           {"rejected_positions", false, false, Bound::Seq, false, false,
            "a rejected token's position in its example", nullptr, false, false, Packing::Only},
           {"rejected_last_index", false, false, Bound::Rows, false, false,
            "row b * seq + i of the final [SEP] of the k-th rejected example at [b, k] (b * seq past the pairs)",
            nullptr, false, false, Packing::Only},
           {"example_mask", true, false, Bound::None, false, false,
            "1 at [b, k] where the row has a k-th pair (0 past them and on validation rows past the last "
            "record): means over pairs are sum(x * example_mask) / sum(example_mask)",
            nullptr, false, false, Packing::Only},
       },
       {
           pack,
       }},
  };
  return specs;
}

inline const TransformSpec *findTransform(const std::string &name) {
  for (const TransformSpec &s : transformSpecs())
    if (name == s.name) return &s;
  return nullptr;
}

inline const TransformOutput *findOutput(const TransformSpec &spec, const std::string &name) {
  for (const TransformOutput &o : spec.outputs)
    if (name == o.name) return &o;
  return nullptr;
}

inline std::string transformNames() {
  std::string s;
  for (const TransformSpec &t : transformSpecs()) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

/* Whether the transform produces output `o` with these pair and packing options. */
inline bool produces(const TransformOutput &o, bool nsp, bool sop = false, bool pack = false) {
  return (nsp || !o.needsNsp) && (sop || !o.needsSop) && o.packing != (pack ? Packing::Never : Packing::Only);
}

inline std::string outputNames(const TransformSpec &spec, bool nsp, bool sop = false, bool pack = false) {
  std::string s;
  for (const TransformOutput &o : spec.outputs)
    if (produces(o, nsp, sop, pack)) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

/* Why `o` is not produced with these options, for errors ("" if it is). */
inline std::string notProducedBecause(const TransformOutput &o, bool nsp, bool sop, bool pack) {
  if (o.needsNsp && !nsp) return " without nsp = true";
  if (o.needsSop && !sop) return " without sop = true";
  if (o.packing == Packing::Only && !pack) return " without pack = true";
  if (o.packing == Packing::Never && pack) return " with pack = true";
  return "";
}

/* The length of the targetSeq outputs of `transform` for inputs of `seq` ids:
   span_corruption's computed targets length, seq2seq's target_seq; -1 when none fits (or the
   transform has none). `param(name)` gives a transform parameter's value. */
template <typename ParamFn>
inline int64_t targetSeqLength(const std::string &transform, int64_t seq, ParamFn param) {
  if (transform == "seq2seq") return (int64_t)param("target_seq");
  if (transform != "span_corruption") return -1;
  return spanCorruptionLengths(seq, param("noise_density"), param("mean_noise_span_length")).targets;
}

/* The exclusive bound of an output's values (0: none); `param(name)` gives a
   transform parameter's value (Bound::Param). */
template <typename ParamFn>
inline int64_t outputBound(const TransformOutput &o, int64_t vocab, int64_t batch, int64_t seq, ParamFn param) {
  switch (o.bound) {
  case Bound::Vocab: return vocab;
  case Bound::Two: return 2;
  case Bound::Rows: return batch * seq;
  case Bound::Param: return (int64_t)param(o.boundParam);
  case Bound::Seq: return seq;
  case Bound::None: break;
  }
  return 0;
}

}  // namespace data
}  // namespace lmrt
