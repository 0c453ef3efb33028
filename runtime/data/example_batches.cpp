/* Implements: the batch transforms over example datasets (see example_batches.h). */
#include "runtime/data/example_batches.h"

#include <algorithm>
#include <sys/stat.h>

#include "base/tensor.h"
#include "contract/transform_spec.h"
#include "runtime/data/counter_rng.h"
#include "runtime/data/dataset_meta.h"

namespace lmrt {

namespace {

const char *taskName(ExampleTask t) {
  switch (t) {
  case ExampleTask::Classify: return "classify";
  case ExampleTask::Regression: return "regression";
  case ExampleTask::Sft: return "sft";
  case ExampleTask::Preference: return "preference";
  case ExampleTask::Tokens: return "tokens";
  case ExampleTask::Span: return "span";
  case ExampleTask::Seq2Seq: return "seq2seq";
  }
  return "?";
}

std::string fieldList(const ExampleShard &s) {
  std::string out;
  for (const ExampleField &f : s.fields())
    out += (out.empty() ? "" : ", ") + f.name + ":" + fieldKindName(f.kind);
  return out;
}

}  // namespace

bool exampleTask(const std::string &transform, ExampleTask &task) {
  for (ExampleTask t :
       {ExampleTask::Classify, ExampleTask::Regression, ExampleTask::Sft, ExampleTask::Preference, ExampleTask::Tokens,
        ExampleTask::Span, ExampleTask::Seq2Seq})
    if (transform == taskName(t)) {
      task = t;
      return true;
    }
  return false;
}

ExampleBatcher::ExampleBatcher(const std::string &dirIn, ExampleTask task, int64_t rows, int64_t seq,
                               int64_t classes, uint64_t seed)
    : task_(task), rows_(rows), seq_(seq), classes_(classes), seed_(seed), stepRows_((uint64_t)rows) {
  const std::string dir = dirIn.empty() || dirIn.back() == '/' ? dirIn : dirIn + "/";
  const char *name = taskName(task);
  struct stat st;
  if (::stat((dir + "train.examples").c_str(), &st) != 0)
    fail("data directory '%s' has no train.examples: the %s transform reads example shards; build them from "
         "JSON Lines with `lmrt data build --format jsonl --fields ... --input FILE.jsonl --out %s`",
         dirIn.c_str(), name, dirIn.c_str());
  if (std::optional<DatasetMeta> meta = readDatasetMeta(dirIn); meta && meta->tokenizer != "bytes")
    fail("data '%s' was tokenized with %s; the %s transform reads byte data for now (its [CLS] [SEP] [PAD] "
         "are ids %d.. after the 256 bytes): build the directory without --tokenizer",
         meta->path.c_str(), meta->tokenizer.c_str(), name, data::kFirstSpecial);
  train_ = std::make_unique<ExampleShard>(dir + "train.examples");
  val_ = std::make_unique<ExampleShard>(dir + "val.examples");
  if (train_->records() == 0) fail("%s holds no record", train_->path().c_str());
  if (fieldList(*val_) != fieldList(*train_))
    fail("%s has fields %s, but %s has %s (rebuild the directory)", val_->path().c_str(), fieldList(*val_).c_str(),
         train_->path().c_str(), fieldList(*train_).c_str());
  std::vector<int> texts = train_->fieldsOf(FieldKind::Text);
  // How many texts each task reads, and what they are called in its errors.
  const bool two = task == ExampleTask::Sft || task == ExampleTask::Span || task == ExampleTask::Seq2Seq;
  const size_t lo = two ? 2 : task == ExampleTask::Preference ? 3 : 1;
  const size_t hi = two ? 2 : task == ExampleTask::Preference ? 3
                    : task == ExampleTask::Tokens                              ? 1
                                                                               : 2;
  const char *roles = task == ExampleTask::Sft           ? "prompt, response"
                      : task == ExampleTask::Preference ? "prompt, chosen, rejected"
                      : task == ExampleTask::Tokens     ? "words (--fields tokens:words,tags:tags)"
                      : task == ExampleTask::Span       ? "question, context (--fields question,context,answers:span)"
                      : task == ExampleTask::Seq2Seq    ? "input, target (--fields input,target)"
                                                        : "text [, text_b]";
  if (texts.size() < lo || texts.size() > hi)
    fail("%s has %zu text field%s (%s); %s reads %s", train_->path().c_str(), texts.size(),
         texts.size() == 1 ? "" : "s", fieldList(*train_).c_str(), name, roles);
  textA_ = texts[0];
  textB_ = texts.size() >= 2 ? texts[1] : -1;
  textC_ = texts.size() >= 3 ? texts[2] : -1;
  if (task == ExampleTask::Classify) {
    std::vector<int> labels = train_->fieldsOf(FieldKind::Label);
    if (labels.empty())
      fail("%s has no label field (%s); classify needs one (--fields text,label:label)", train_->path().c_str(),
           fieldList(*train_).c_str());
    label_ = labels[0];
  } else if (task == ExampleTask::Tokens) {
    std::vector<int> tags = train_->fieldsOf(FieldKind::Tags);
    if (tags.empty() || train_->alignedText(tags[0]) != textA_)
      fail("%s has no tags field for its text (%s); tokens needs one (--fields tokens:words,ner_tags:tags)",
           train_->path().c_str(), fieldList(*train_).c_str());
    tags_ = tags[0];
  } else if (task == ExampleTask::Span) {
    // The span marks the answer in the text field before it: the context;
    // the other text field is the question.
    std::vector<int> spans = train_->fieldsOf(FieldKind::Span);
    if (spans.empty())
      fail("%s has no span field (%s); span needs one after the context (--fields question,context,answers:span)",
           train_->path().c_str(), fieldList(*train_).c_str());
    span_ = spans[0];
    const int context = train_->alignedText(span_);
    textA_ = context == texts[0] ? texts[1] : texts[0];  // the question
    textB_ = context;
  } else if (task == ExampleTask::Regression) {
    std::vector<int> targets = train_->fieldsOf(FieldKind::Target);
    if (targets.empty())
      fail("%s has no target field (%s); regression needs one (--fields text,score:target)",
           train_->path().c_str(), fieldList(*train_).c_str());
    target_ = targets[0];
  }
  for (const ExampleShard *s : {train_.get(), val_.get()}) {
    std::vector<int32_t> ids;
    for (uint64_t r = 0; r < s->records(); ++r) {
      for (int f : {textA_, textB_, textC_}) {
        if (f < 0) continue;
        s->text(r, f, ids);
        for (int32_t t : ids)
          if (t < 0 || t >= data::kFirstSpecial)
            fail("%s: record %llu: token %d of '%s' is not a byte (the %s transform reads byte data)",
                 s->path().c_str(), (unsigned long long)r, t, s->fields()[f].name.c_str(), name);
          else if (task == ExampleTask::Seq2Seq && (t == data::kT5Pad || t == data::kT5Eos))
            fail("%s: record %llu: '%s' holds byte %d, which is T5's %s id in the seq2seq transform's rows",
                 s->path().c_str(), (unsigned long long)r, s->fields()[f].name.c_str(), t,
                 t == data::kT5Pad ? "pad (and decoder start)" : "EOS");
      }
      if (tags_ >= 0) {
        s->text(r, tags_, ids);
        for (int32_t t : ids)
          if (t >= classes_)
            fail("%s: record %llu: tag %d is not below classes = %lld (the plan's tokens(classes = ...))",
                 s->path().c_str(), (unsigned long long)r, t, (long long)classes_);
      }
      if (label_ >= 0 && s->label(r, label_) >= classes_)
        fail("%s: record %llu: label %lld is not below classes = %lld (the plan's classify(classes = ...))",
             s->path().c_str(), (unsigned long long)r, (long long)s->label(r, label_), (long long)classes_);
    }
  }
  trainTokens_ = train_->tokenSource();
  valTokens_ = val_->tokenSource();
}

ExampleBatcher::~ExampleBatcher() = default;

void ExampleBatcher::epochOrder(uint64_t epoch, std::vector<uint64_t> &order) const {
  // Fisher-Yates, each swap drawn from (seed, epoch, position).
  const uint64_t n = trainUnits();
  order.resize(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  for (uint64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[uniformBelow(counterRandom(seed_, RngStream::Epochs, epoch, i), i + 1)]);
}

uint64_t ExampleBatcher::trainRecord(uint64_t g) const {
  const uint64_t n = trainUnits(), epoch = g / n;
  if (epoch != permEpoch_) {
    epochOrder(epoch, perm_);
    permEpoch_ = epoch;
  }
  return perm_[g % n];
}

int64_t ExampleBatcher::exampleLength(const ExampleShard &s, uint64_t record) const {
  if (task_ == ExampleTask::Span) return spanLength(s, record, 0);
  const int64_t a = (int64_t)s.textLength(record, textA_), b = textB_ >= 0 ? (int64_t)s.textLength(record, textB_) : 0;
  // preference: the longer of prompt chosen [SEP] and prompt rejected [SEP],
  // so that a pair's two examples fit the same slot of both sides' rows.
  if (task_ == ExampleTask::Preference)
    return std::min(a + std::max(b, (int64_t)s.textLength(record, textC_)) + 1, seq_);
  if (task_ == ExampleTask::Seq2Seq) return std::min(a, seq_ - 1) + 1;  // input EOS
  // sft: prompt response [SEP]; classify, regression: [CLS] A [SEP] (B [SEP]);
  // tokens: [CLS] A [SEP].
  const int64_t n = task_ == ExampleTask::Sft ? a + b + 1 : 2 + a + (textB_ >= 0 ? b + 1 : 0);
  return std::min(n, seq_);
}

int64_t ExampleBatcher::spanLength(const ExampleShard &s, uint64_t record, int64_t window) const {
  int64_t contextStart, kept;
  spanRow(s, record, contextStart, kept, window);
  return contextStart + kept + 1;  // [CLS] question [SEP] context [SEP]
}

void ExampleBatcher::spanAnswer(const ExampleShard &s, uint64_t record, int64_t window, int32_t &start,
                                int32_t &end) const {
  // HF's run_qa: an answer not wholly in the window's context points at [CLS].
  int64_t contextStart, kept, windowStart, first, last;
  spanRow(s, record, contextStart, kept, window, &windowStart);
  s.span(record, span_, first, last);
  const bool inside = first >= windowStart && last < windowStart + kept;
  start = (int32_t)(inside ? contextStart + first - windowStart : 0);
  end = (int32_t)(inside ? contextStart + last - windowStart : 0);
}

void ExampleBatcher::setPack(bool on) {
  if (on && task_ != ExampleTask::Classify && task_ != ExampleTask::Sft && task_ != ExampleTask::Tokens &&
      task_ != ExampleTask::Regression && task_ != ExampleTask::Preference && task_ != ExampleTask::Seq2Seq &&
      task_ != ExampleTask::Span)
    fail("pack = true is an option of the classify, regression, tokens, span, sft, preference and seq2seq "
         "transforms, not of %s", taskName(task_));
  pack_ = on;
  epochRowsEnd_.clear();
  packEpoch_ = UINT64_MAX;
  valRows_ = PackedRows();
  if (!on) return;
  std::vector<uint64_t> order(valUnits());
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  valRows_ = pack(*val_, order);
}

int64_t ExampleBatcher::targetLength(const ExampleShard &s, uint64_t record) const {
  return std::min((int64_t)s.textLength(record, textB_), targetSeq_ - 1) + 1;  // target EOS
}

ExampleBatcher::Feature ExampleBatcher::feature(const ExampleShard &s, uint64_t u) const {
  if (!docStride_) return Feature{u, 0};
  return (&s == train_.get() ? trainFeatures_ : valFeatures_)[u];
}

PackedRows ExampleBatcher::pack(const ExampleShard &s, const std::vector<uint64_t> &order) const {
  auto length = [&](uint64_t u) {
    if (task_ != ExampleTask::Span) return exampleLength(s, u);
    const Feature f = feature(s, u);  // span: a unit is a record, or with a doc stride a window
    return spanLength(s, f.record, f.window);
  };
  if (task_ != ExampleTask::Seq2Seq) return packRows(order, seq_, length);
  // seq2seq: an example's input and target share a slot of the encoder's and the decoder's rows.
  return packRows(order, seq_, length, [&](uint64_t r) { return targetLength(s, r); }, targetSeq_);
}

const PackedRows &ExampleBatcher::trainRows(uint64_t epoch) const {
  if (epoch != packEpoch_) {
    std::vector<uint64_t> order;
    epochOrder(epoch, order);
    packRows_ = pack(*train_, order);
    packEpoch_ = epoch;
  }
  return packRows_;
}

uint64_t ExampleBatcher::trainRowsOfEpochs(uint64_t epochs) const {
  while (epochRowsEnd_.size() < epochs)
    epochRowsEnd_.push_back((epochRowsEnd_.empty() ? 0 : epochRowsEnd_.back()) +
                            trainRows(epochRowsEnd_.size()).rows());
  return epochs == 0 ? 0 : epochRowsEnd_[epochs - 1];
}

void ExampleBatcher::resize(ExampleBatch &out) const {
  const size_t cells = (size_t)(rows_ * seq_);
  out.ints.clear();
  out.floats.clear();
  auto causalRows = [&](const std::string &p, const char *mask) {
    out.ints[p + "ids"].assign(cells, data::kPad);
    out.ints[p + "labels"].assign(cells, (int32_t)data::kIgnoreIndex);
    out.floats[mask].assign(cells, 0.0f);
    if (!pack_) out.ints[p + "last"].assign(rows_, 0);
  };
  if (pack_) {
    for (const char *p : task_ == ExampleTask::Preference ? std::vector<const char *>{"chosen_", "rejected_"}
                                                           : std::vector<const char *>{""}) {
      out.ints[std::string(p) + "doc_ids"].assign(cells, 0);
      out.ints[std::string(p) + "positions"].assign(cells, 0);
    }
  }
  if (task_ == ExampleTask::Sft) return causalRows("", "attention_mask");
  if (task_ == ExampleTask::Seq2Seq) {
    const size_t targetCells = (size_t)(rows_ * targetSeq_);
    out.ints["ids"].assign(cells, data::kT5Pad);
    out.floats["attention_mask"].assign(cells, 0.0f);
    out.ints["decoder_ids"].assign(targetCells, data::kT5Pad);
    out.ints["labels"].assign(targetCells, (int32_t)data::kIgnoreIndex);
    if (pack_) out.ints["decoder_doc_ids"].assign(targetCells, 0);
    return;
  }
  if (task_ == ExampleTask::Preference) {
    causalRows("chosen_", "chosen_mask");
    causalRows("rejected_", "rejected_mask");
    if (pack_) {
      // Slots past a row's pairs read its first token and weigh nothing.
      for (const char *name : {"chosen_last_index", "rejected_last_index"}) {
        std::vector<int32_t> &index = out.ints[name];
        index.resize(cells);
        for (int64_t r = 0; r < rows_; ++r) std::fill_n(&index[r * seq_], seq_, (int32_t)(r * seq_));
      }
      out.floats["example_mask"].assign(cells, 0.0f);
    }
    return;
  }
  out.ints["ids"].assign(cells, data::kPad);
  out.ints["segments"].assign(cells, 0);
  out.floats["attention_mask"].assign(cells, 0.0f);
  if (task_ == ExampleTask::Tokens) {
    out.ints["labels"].assign(cells, (int32_t)data::kIgnoreIndex);
    return;
  }
  if (task_ == ExampleTask::Span) {
    if (pack_) {
      out.ints["example_start_positions"].assign(cells, (int32_t)data::kIgnoreIndex);
      out.ints["example_end_positions"].assign(cells, (int32_t)data::kIgnoreIndex);
      return;
    }
    out.ints["start_positions"].assign(rows_, 0);
    out.ints["end_positions"].assign(rows_, 0);
    return;
  }
  if (pack_) {
    // Slots past a row's examples read its first token and carry no label
    // (classify) or no weight (regression).
    for (const char *name : {"cls_index", "last_index"}) {
      std::vector<int32_t> &index = out.ints[name];
      index.resize(cells);
      for (int64_t r = 0; r < rows_; ++r) std::fill_n(&index[r * seq_], seq_, (int32_t)(r * seq_));
    }
    if (task_ == ExampleTask::Classify) {
      out.ints["example_labels"].assign(cells, (int32_t)data::kIgnoreIndex);
    } else {
      out.floats["example_targets"].assign(cells, 0.0f);
      out.floats["example_mask"].assign(cells, 0.0f);
    }
    return;
  }
  out.ints["last"].assign(rows_, 0);
  if (task_ == ExampleTask::Classify) out.ints["labels"].assign(rows_, 0);
  else out.floats["targets"].assign(rows_, 0.0f);
}

void ExampleBatcher::fillCausal(const std::vector<int32_t> &prompt, const std::vector<int32_t> &response,
                                int64_t row, bool ignore, const std::string &prefix, ExampleBatch &out,
                                int64_t offset) const {
  const char *mask = prefix.empty() ? "attention_mask" : prefix == "chosen_" ? "chosen_mask" : "rejected_mask";
  const int64_t base = row * seq_ + offset;
  int32_t *ids = &out.ints[prefix + "ids"][base], *labels = &out.ints[prefix + "labels"][base];
  float *att = &out.floats[mask][base];
  std::vector<int32_t> row_(prompt);
  row_.insert(row_.end(), response.begin(), response.end());
  row_.push_back(data::kSep);  // the end of the response, which the model learns to predict
  const int64_t n = std::min<int64_t>((int64_t)row_.size(), seq_ - offset);
  for (int64_t t = 0; t < n; ++t) {
    ids[t] = row_[t];
    att[t] = 1.0f;
    // Position t predicts token t + 1: a loss only where that token is the response's.
    if (!ignore && t + 1 < n && t + 1 >= (int64_t)prompt.size()) labels[t] = row_[t + 1];
  }
  if (!pack_) out.ints[prefix + "last"][row] = (int32_t)(base + n - 1);
}

void ExampleBatcher::fillSeq2Seq(const std::vector<int32_t> &input, const std::vector<int32_t> &target, int64_t row,
                                 bool ignore, ExampleBatch &out, int64_t offset, int64_t targetOffset) const {
  // HF's tokenizer(..., truncation=True, max_length=L) keeps L - 1 tokens and EOS.
  const int64_t n = std::min<int64_t>((int64_t)input.size(), seq_ - 1);
  int32_t *ids = &out.ints["ids"][row * seq_ + offset];
  float *att = &out.floats["attention_mask"][row * seq_ + offset];
  for (int64_t t = 0; t <= n; ++t) {
    ids[t] = t < n ? input[t] : data::kT5Eos;
    att[t] = 1.0f;
  }
  const int64_t m = std::min<int64_t>((int64_t)target.size(), targetSeq_ - 1);
  const int64_t at = row * targetSeq_ + targetOffset;
  int32_t *dec = &out.ints["decoder_ids"][at], *labels = &out.ints["labels"][at];
  for (int64_t t = 0; t <= m; ++t) {
    const int32_t label = t < m ? target[t] : data::kT5Eos;
    if (!ignore) labels[t] = label;
    // The decoder reads the label before (the start id 0 first), even on
    // ignored rows, so their forward stays that of a real record. A padded
    // row's EOS shifts onto its padding (HF's _shift_right); a packed
    // example's decoder ids end before its EOS, where the next example's
    // start id 0 is.
    const bool spill = !pack_ && t + 1 < targetSeq_;
    if (t < m || spill) dec[t + 1] = label;
  }
}

void ExampleBatcher::fillUnit(const ExampleShard &s, const std::vector<Feature> &features, uint64_t u, int64_t row,
                              bool ignore, ExampleBatch &out) const {
  if (docStride_) fillRow(s, features[u].record, row, ignore, out, 0, features[u].window);
  else fillRow(s, u, row, ignore, out);
}

void ExampleBatcher::fillRow(const ExampleShard &s, uint64_t record, int64_t row, bool ignore, ExampleBatch &out,
                             int64_t offset, int64_t window) const {
  std::vector<int32_t> a, b;
  s.text(record, textA_, a);
  if (textB_ >= 0) s.text(record, textB_, b);
  if (task_ == ExampleTask::Sft) return fillCausal(a, b, row, ignore, "", out, offset);
  if (task_ == ExampleTask::Seq2Seq) return fillSeq2Seq(a, b, row, ignore, out);
  if (task_ == ExampleTask::Preference) {
    std::vector<int32_t> c;
    s.text(record, textC_, c);
    fillCausal(a, b, row, ignore, "chosen_", out);
    fillCausal(a, c, row, ignore, "rejected_", out);
    return;
  }
  if (task_ == ExampleTask::Tokens) {
    std::vector<int32_t> tags;
    s.text(record, tags_, tags);
    const int64_t n = std::min<int64_t>((int64_t)a.size(), seq_ - offset - 2), base = row * seq_ + offset;
    int32_t *ids = &out.ints["ids"][base], *labels = &out.ints["labels"][base];
    float *att = &out.floats["attention_mask"][base];
    ids[0] = data::kCls;
    for (int64_t t = 0; t < n; ++t) {
      ids[1 + t] = a[t];
      if (!ignore) labels[1 + t] = tags[t];
    }
    ids[n + 1] = data::kSep;
    for (int64_t t = 0; t < n + 2; ++t) att[t] = 1.0f;
    return;
  }
  if (task_ == ExampleTask::Span) {
    // [CLS] question [SEP] context [SEP]: the question cut to max_question
    // (and to leave the context a token), the context to the rest of the row.
    int64_t contextStart, kept, windowStart;
    spanRow(s, record, contextStart, kept, window, &windowStart);
    a.resize((size_t)(contextStart - 2));
    b.erase(b.begin(), b.begin() + windowStart);
    b.resize((size_t)kept);
  }
  // Room for the texts: the row less [CLS] and one [SEP] per text.
  const size_t room = (size_t)(seq_ - offset) - (textB_ >= 0 ? 3 : 2);
  while (a.size() + b.size() > room) (a.size() >= b.size() ? a : b).pop_back();
  int32_t *ids = &out.ints["ids"][row * seq_ + offset], *seg = &out.ints["segments"][row * seq_ + offset];
  float *att = &out.floats["attention_mask"][row * seq_ + offset];
  int64_t at = 0;
  auto put = [&](int32_t id, int32_t segment) {
    ids[at] = id;
    seg[at] = segment;
    att[at] = 1.0f;
    ++at;
  };
  put(data::kCls, 0);
  for (int32_t t : a) put(t, 0);
  put(data::kSep, 0);
  if (textB_ >= 0) {
    for (int32_t t : b) put(t, 1);
    put(data::kSep, 1);
  }
  if (task_ == ExampleTask::Span) {
    if (pack_) return;  // fillPacked writes the example's answer at its slot
    int32_t start, end;
    spanAnswer(s, record, window, start, end);
    out.ints["start_positions"][row] = ignore ? (int32_t)data::kIgnoreIndex : start;
    out.ints["end_positions"][row] = ignore ? (int32_t)data::kIgnoreIndex : end;
    return;
  }
  if (pack_) return;  // fillPacked writes the example's index and label
  out.ints["last"][row] = (int32_t)(row * seq_ + at - 1);
  if (label_ >= 0)
    out.ints["labels"][row] = ignore ? (int32_t)data::kIgnoreIndex : (int32_t)s.label(record, label_);
  if (target_ >= 0) out.floats["targets"][row] = (float)s.target(record, target_);
}

void ExampleBatcher::fillPackedPairs(const ExampleShard &s, const uint64_t *records, uint64_t n, int64_t row,
                                     bool ignore, ExampleBatch &out) const {
  for (const std::string side : {"chosen_", "rejected_"}) {
    int32_t *doc = &out.ints[side + "doc_ids"][row * seq_], *pos = &out.ints[side + "positions"][row * seq_];
    int64_t at = 0;
    for (uint64_t k = 0; k < n; ++k) {
      std::vector<int32_t> prompt, response;
      s.text(records[k], textA_, prompt);
      s.text(records[k], side == "chosen_" ? textB_ : textC_, response);
      const int64_t len = std::min<int64_t>((int64_t)(prompt.size() + response.size()) + 1, seq_ - at);
      fillCausal(prompt, response, row, ignore, side, out, at);
      for (int64_t t = 0; t < len; ++t) {
        doc[at + t] = (int32_t)k;
        pos[at + t] = (int32_t)t;
      }
      out.ints[side + "last_index"][row * seq_ + (int64_t)k] = (int32_t)(row * seq_ + at + len - 1);
      if (!ignore) out.floats["example_mask"][row * seq_ + (int64_t)k] = 1.0f;
      at += len;
    }
    for (int64_t t = at; t < seq_; ++t) {
      doc[t] = (int32_t)n;
      pos[t] = (int32_t)(t - at);
    }
  }
}

void ExampleBatcher::fillPacked(const ExampleShard &s, const uint64_t *records, uint64_t n, int64_t row, bool ignore,
                                ExampleBatch &out) const {
  if (task_ == ExampleTask::Preference) return fillPackedPairs(s, records, n, row, ignore, out);
  if (task_ == ExampleTask::Seq2Seq) {
    // The decoder's side: each example's target at its own offset, with its id.
    int32_t *doc = &out.ints["decoder_doc_ids"][row * targetSeq_];
    int64_t at = 0, atTarget = 0;
    for (uint64_t k = 0; k < n; ++k) {
      std::vector<int32_t> input, target;
      s.text(records[k], textA_, input);
      s.text(records[k], textB_, target);
      fillSeq2Seq(input, target, row, ignore, out, at, atTarget);
      const int64_t m = targetLength(s, records[k]);
      for (int64_t t = 0; t < m; ++t) doc[atTarget + t] = (int32_t)k;
      at += exampleLength(s, records[k]);
      atTarget += m;
    }
    for (int64_t t = atTarget; t < targetSeq_; ++t) doc[t] = (int32_t)n;
  }
  int32_t *doc = &out.ints["doc_ids"][row * seq_], *pos = &out.ints["positions"][row * seq_];
  int64_t at = 0;
  for (uint64_t k = 0; k < n; ++k) {
    const int64_t slot = row * seq_ + (int64_t)k;
    int64_t len;
    if (task_ == ExampleTask::Span) {
      // records[k] is a unit: a record, or with a doc stride a window.
      const Feature f = feature(s, records[k]);
      len = spanLength(s, f.record, f.window);
      fillRow(s, f.record, row, ignore, out, at, f.window);
      int32_t start, end;
      spanAnswer(s, f.record, f.window, start, end);
      out.ints["example_start_positions"][slot] = ignore ? (int32_t)data::kIgnoreIndex : (int32_t)(at + start);
      out.ints["example_end_positions"][slot] = ignore ? (int32_t)data::kIgnoreIndex : (int32_t)(at + end);
    } else {
      len = exampleLength(s, records[k]);
    }
    if (task_ != ExampleTask::Seq2Seq && task_ != ExampleTask::Span) fillRow(s, records[k], row, ignore, out, at);
    for (int64_t t = 0; t < len; ++t) {
      doc[at + t] = (int32_t)k;
      pos[at + t] = (int32_t)t;
    }
    if (task_ == ExampleTask::Classify || task_ == ExampleTask::Regression) {
      out.ints["cls_index"][slot] = (int32_t)(row * seq_ + at);
      out.ints["last_index"][slot] = (int32_t)(row * seq_ + at + len - 1);
    }
    if (task_ == ExampleTask::Classify)
      out.ints["example_labels"][slot] = ignore ? (int32_t)data::kIgnoreIndex : (int32_t)s.label(records[k], label_);
    if (task_ == ExampleTask::Regression && !ignore) {
      out.floats["example_targets"][slot] = (float)s.target(records[k], target_);
      out.floats["example_mask"][slot] = 1.0f;
    }
    at += len;
  }
  // The padding is one more document, which no example's token sees.
  for (int64_t t = at; t < seq_; ++t) {
    doc[t] = (int32_t)n;
    pos[t] = (int32_t)(t - at);
  }
}

void ExampleBatcher::trainBatch(uint64_t step, ExampleBatch &out, uint64_t firstRow) const {
  resize(out);
  if (pack_) {
    for (int64_t r = 0; r < rows_; ++r) {
      // Row g of the epochs' packed rows laid end to end.
      const uint64_t g = step * stepRows_ + firstRow + (uint64_t)r;
      uint64_t epoch = 0;
      while (trainRowsOfEpochs(epoch + 1) <= g) ++epoch;
      const uint64_t i = g - trainRowsOfEpochs(epoch);
      const PackedRows &p = trainRows(epoch);
      fillPacked(*train_, &p.records[p.start[i]], p.start[i + 1] - p.start[i], r, false, out);
    }
    return;
  }
  for (int64_t r = 0; r < rows_; ++r)
    fillUnit(*train_, trainFeatures_, trainRecord(step * stepRows_ + firstRow + (uint64_t)r), r, false, out);
}

void ExampleBatcher::valBatch(uint64_t index, ExampleBatch &out) const {
  checkValidation();
  resize(out);
  for (int64_t r = 0; r < rows_ && pack_; ++r) {
    const uint64_t g = index * (uint64_t)rows_ + (uint64_t)r, zero = 0;
    if (g < valRows_.rows())
      fillPacked(*val_, &valRows_.records[valRows_.start[g]], valRows_.start[g + 1] - valRows_.start[g], r, false,
                 out);
    else
      fillPacked(*val_, &zero, 1, r, true, out);
  }
  for (int64_t r = 0; r < rows_ && !pack_; ++r) {
    uint64_t g = index * (uint64_t)rows_ + (uint64_t)r;
    bool past = g >= valUnits();
    fillUnit(*val_, valFeatures_, past ? 0 : g, r, past, out);
  }
}

void ExampleBatcher::checkValidation() const {
  if (val_->records() == 0)
    fail("%s holds no record, so there is nothing to evaluate (rebuild with --val-fraction > 0 or --val-input, "
         "or run with --eval-batches 0)", val_->path().c_str());
}

void ExampleBatcher::spanRow(const ExampleShard &s, uint64_t record, int64_t &contextStart, int64_t &kept,
                             int64_t window, int64_t *windowStart) const {
  const int64_t question =
      std::min({(int64_t)s.textLength(record, textA_), maxQuestion_, seq_ - 4});
  contextStart = question + 2;
  const int64_t room = seq_ - question - 3, length = (int64_t)s.textLength(record, textB_);
  const int64_t start = window * (room - docStride_);
  kept = std::min<int64_t>(length - start, room);
  if (windowStart) *windowStart = start;
}

int64_t ExampleBatcher::spanWindows(const ExampleShard &s, uint64_t record) const {
  int64_t contextStart, kept;
  spanRow(s, record, contextStart, kept);
  const int64_t room = seq_ - contextStart - 1, length = (int64_t)s.textLength(record, textB_);
  if (!docStride_ || length <= room) return 1;
  const int64_t step = room - docStride_;
  return 1 + (length - room + step - 1) / step;
}

void ExampleBatcher::setDocStride(int64_t stride) {
  if (stride > 0 && task_ != ExampleTask::Span)
    fail("doc_stride is an option of the span transform, not of %s", taskName(task_));
  docStride_ = stride;
  trainFeatures_.clear();
  valFeatures_.clear();
  permEpoch_ = UINT64_MAX;
  if (!stride) return;
  for (const ExampleShard *s : {train_.get(), val_.get()}) {
    std::vector<Feature> &f = s == train_.get() ? trainFeatures_ : valFeatures_;
    for (uint64_t r = 0; r < s->records(); ++r) {
      int64_t contextStart, kept;
      spanRow(*s, r, contextStart, kept);
      const int64_t room = seq_ - contextStart - 1;
      if ((int64_t)s->textLength(r, textB_) > room && stride >= room)
        fail("%s: record %llu: doc_stride %lld leaves its windows no new context: the row of %lld has room for %lld "
             "context tokens after the question (doc_stride must be below it)",
             s->path().c_str(), (unsigned long long)r, (long long)stride, (long long)seq_, (long long)room);
      for (int64_t w = 0, n = spanWindows(*s, r); w < n; ++w) f.push_back({r, w});
    }
  }
  if (pack_) setPack(true);  // the units to pack are now the windows
}

uint64_t ExampleBatcher::valBatches() const {
  return ((pack_ ? valRows_.rows() : valUnits()) + rows_ - 1) / rows_;
}

}  // namespace lmrt
