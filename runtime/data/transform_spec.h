/* Implements: the table of batch transforms, what each one's parameters are
   and which named inputs it produces (docs/runtime.md, "Batch transforms").
   Header-only plain C++, shared by the three places that must agree: the
   frontend (`data = mlm(...)` in a train section, and the bounds it puts on
   the objective's inputs), the plan contract (lmc and lmrt check a plan's
   DataConfig against it) and the runtime's transforms that fill the inputs.

   Special tokens take the ids just above the 256 bytes of the byte vocabulary,
   so a model with vocab >= 260 can read byte data with BERT's four specials. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmrt {
namespace data {

constexpr int32_t kPad = 256, kCls = 257, kSep = 258, kMask = 259;
constexpr int32_t kFirstSpecial = 256;  // random replacements are drawn from [0, kFirstSpecial)
constexpr int64_t kMinMlmVocab = 260;   // the specials must be ids of the model
constexpr int64_t kIgnoreIndex = -100;  // labels of positions that carry no loss (as PyTorch)

/* Which bound an output's ids have: none (a float mask), the vocabulary, or 2
   (segment ids and pair labels). */
enum class Bound { None, Vocab, Two };

struct TransformOutput {
  const char *name;
  bool isFloat;      // f32 (or the plan's float type); else i32
  bool perRow;       // shape [batch]; else [batch, seq]
  Bound bound;
  bool ignoreIndex;  // accepts kIgnoreIndex besides [0, bound)
  bool needsNsp;     // produced only with nsp = 1
  const char *what;  // for docs and error messages
  bool needsSop = false;  // produced only with sop = 1
};

struct TransformParam {
  const char *name;
  double defaultValue;
  double lo, hi;      // inclusive bounds
  bool isBool;        // 0 or 1 (the language's false / true)
  const char *what;
};

struct TransformSpec {
  const char *name;
  std::vector<TransformOutput> outputs;  // empty for "causal": one window input of any name
  std::vector<TransformParam> params;
};

inline const std::vector<TransformSpec> &transformSpecs() {
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
           {"sop_labels", false, true, Bound::Two, false, false,
            "0: A then B in document order, 1: swapped (sop = true)", true},
       },
       {
           {"mask_prob", 0.15, 0.0, 1.0, false, "probability that a non-special token is selected"},
           {"nsp", 0.0, 0.0, 1.0, true, "form sentence pairs A, B with 50 % random B"},
           {"short_seq_prob", 0.0, 0.0, 1.0, false, "probability that a row is shorter than seq (padded)"},
           {"sop", 0.0, 0.0, 1.0, true,
            "form sentence pairs A, B of consecutive text of one document, swapped with probability 1/2 "
            "(ALBERT's sentence-order prediction)"},
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

/* Whether the transform produces output `o` with these pair options. */
inline bool produces(const TransformOutput &o, bool nsp, bool sop = false) {
  return (nsp || !o.needsNsp) && (sop || !o.needsSop);
}

inline std::string outputNames(const TransformSpec &spec, bool nsp, bool sop = false) {
  std::string s;
  for (const TransformOutput &o : spec.outputs)
    if (produces(o, nsp, sop)) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

/* The exclusive bound of an output's values (0: none). */
inline int64_t outputBound(const TransformOutput &o, int64_t vocab) {
  return o.bound == Bound::Vocab ? vocab : o.bound == Bound::Two ? 2 : 0;
}

}  // namespace data
}  // namespace lmrt
