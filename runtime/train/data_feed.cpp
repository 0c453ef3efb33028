/* Implements: the batch transforms' feed of train_step and eval (see data_feed.h). */
#include "runtime/train/data_feed.h"

#include <cstring>

#include "runtime/data/batches.h"
#include "runtime/data/example_batches.h"
#include "runtime/data/counter_rng.h"
#include "runtime/data/mlm.h"
#include "runtime/data/span_mlm.h"
#include "runtime/data/span_corruption.h"
#include "runtime/exec/session.h"
#include "contract/contract.h"
#include "runtime/train/program_io.h"
#include "runtime/train/signals.h"

namespace lmrt {

namespace {

/* The program's inputs by name and type. */
std::map<std::string, TensorType> inputTypes(const plan::Program &p) {
  std::map<std::string, TensorType> t;
  for (const plan::Input &in : p.inputs()) t[in.name()] = inputType(in);
  return t;
}

template <typename T>
void copyAs(const std::vector<T> &src, const TensorType &type, std::vector<char> &dst) {
  if (type.dtype == DType::I32) {
    for (size_t i = 0; i < src.size(); ++i) reinterpret_cast<int32_t *>(dst.data())[i] = (int32_t)src[i];
  } else if (type.dtype == DType::F32) {
    for (size_t i = 0; i < src.size(); ++i) reinterpret_cast<float *>(dst.data())[i] = (float)src[i];
  } else {
    for (size_t i = 0; i < src.size(); ++i) reinterpret_cast<double *>(dst.data())[i] = (double)src[i];
  }
}

}  // namespace

DataFeed::DataFeed(const Session &s, const std::string &dir, uint64_t seed, bool evalOn) : seed_(seed) {
  const plan::DataConfig &dc = s.plan().data();
  transform_ = dc.transform();
  if (transform_.empty())
    fail("plan has no data pipeline: its objective takes no batch transform's inputs (neither one "
         "token window i32[batch, seq + 1] nor `data = mlm(...)`), so lmrt run cannot feed it "
         "(lmrt gradcheck and inspect still work)");
  const plan::Program &train = findProgram(s, "train_step");
  types_ = inputTypes(train);
  types_.erase(contract::kLossScaleInput);  // fp16's loss scale: TrainStep feeds it, not the data
  auto same = [](const std::map<std::string, TensorType> &a, const std::map<std::string, TensorType> &b) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (i->first != j->first || i->second.dtype != j->second.dtype || i->second.shape != j->second.shape)
        return false;
    return true;
  };
  if (evalOn && !same(inputTypes(findProgram(s, "eval")), types_))
    fail("the eval program's inputs differ from train_step's; one data pipeline feeds both");

  if (transform_ == "causal") {
    const plan::Input &in = tokenInput(train);
    TensorType t = inputType(in);
    int64_t vocab = in.vocab() > 0 ? in.vocab() : dc.vocab();
    if ((dc.batch() && dc.batch() != t.shape[0]) || (dc.seq() && dc.seq() != t.shape[1] - 1))
      fail("plan data config (batch %lld, seq %lld) disagrees with train_step input '%s' %s "
           "(expected [batch, seq + 1])", (long long)dc.batch(), (long long)dc.seq(),
           in.name().c_str(), t.str().c_str());
    if (vocab <= 0) fail("plan declares no vocabulary for input '%s'", in.name().c_str());
    causal_ = std::make_unique<CausalBatcher>(dir, t.shape[0], t.shape[1], seed);
    guardBusErrors("data '" + dir + "'", [&] { causal_->checkVocab(vocab); });
    tokensPerStep_ = double(t.shape[0]) * double(t.shape[1] - 1);
    rows_ = t.shape[0];
    tokenName_ = in.name();
  } else if (transform_ == "mlm") {
    // validatePlan has checked every input against the transform's table.
    MlmOptions o;
    o.maskProb = contract::transformParam(dc, "mask_prob");
    o.nsp = contract::transformParam(dc, "nsp") != 0;
    o.shortSeqProb = contract::transformParam(dc, "short_seq_prob");
    o.sop = contract::transformParam(dc, "sop") != 0;
    // The byte check reads every token: a file truncated under it raises SIGBUS.
    guardBusErrors("data '" + dir + "'",
                   [&] { mlm_ = std::make_unique<MlmBatcher>(dir, dc.batch(), dc.seq(), o, seed); });
    mlmBatch_ = std::make_unique<MlmBatch>();
    tokensPerStep_ = double(dc.batch()) * double(dc.seq());
    rows_ = dc.batch();
  } else if (transform_ == "span_mlm") {
    SpanMlmOptions o;
    o.maskProb = contract::transformParam(dc, "mask_prob");
    o.geometricP = contract::transformParam(dc, "geometric_p");
    o.maxSpan = (int64_t)contract::transformParam(dc, "max_span");
    o.unit = contract::transformParam(dc, "unit") == 1 ? SpanUnit::Token : SpanUnit::Word;
    o.maxSpanTokens = (int64_t)contract::transformParam(dc, "max_span_tokens");
    guardBusErrors("data '" + dir + "'",
                   [&] { span_ = std::make_unique<SpanMlmBatcher>(dir, dc.batch(), dc.seq(), o, seed); });
    spanBatch_ = std::make_unique<SpanMlmBatch>();
    tokensPerStep_ = double(dc.batch()) * double(dc.seq());
    rows_ = dc.batch();
  } else if (transform_ == "span_corruption") {
    SpanCorruptionOptions o;
    o.noiseDensity = contract::transformParam(dc, "noise_density");
    o.meanSpanLength = contract::transformParam(dc, "mean_noise_span_length");
    guardBusErrors("data '" + dir + "'", [&] {
      corrupt_ = std::make_unique<SpanCorruptionBatcher>(dir, dc.batch(), dc.seq(), dc.vocab(), o, seed);
    });
    corruptBatch_ = std::make_unique<SpanCorruptionBatch>();
    tokensPerStep_ = double(dc.batch()) * double(dc.seq());
    rows_ = dc.batch();
  } else if (ExampleTask task; exampleTask(transform_, task)) {
    int64_t classes = task == ExampleTask::Classify || task == ExampleTask::Tokens
                          ? (int64_t)contract::transformParam(dc, "classes")
                          : 0;
    guardBusErrors("data '" + dir + "'", [&] {
      examples_ = std::make_unique<ExampleBatcher>(dir, task, dc.batch(), dc.seq(), classes, seed);
    });
    if (task == ExampleTask::Span) examples_->setMaxQuestion((int64_t)contract::transformParam(dc, "max_question"));
    if (task == ExampleTask::Seq2Seq) examples_->setTargetSeq((int64_t)contract::transformParam(dc, "target_seq"));
    if (contract::transformParam(dc, "pack") != 0) examples_->setPack(true);
    if (task == ExampleTask::Span) examples_->setDocStride((int64_t)contract::transformParam(dc, "doc_stride"));
    exampleBatch_ = std::make_unique<ExampleBatch>();
    tokensPerStep_ = double(dc.batch()) * double(dc.seq());
    rows_ = dc.batch();
  } else {
    fail("plan data transform '%s' is not supported by lmrt run (it implements causal, mlm, span_mlm, "
         "span_corruption, classify, regression, sft, preference, tokens, span and seq2seq)",
         transform_.c_str());
  }
  for (const auto &[name, type] : types_) {
    bufs_[name].assign(type.bytes(), 0);
    refs_[name] = TensorRef{bufs_[name].data(), type};
  }
  // validatePlan has checked the key's type: i32[rows, 2].
  hasDropoutKey_ = types_.count(contract::kDropoutKeyInput) != 0;
}

void DataFeed::fillDropoutKeys(bool validation, uint64_t index, uint64_t firstRow) {
  if (!hasDropoutKey_) return;
  int32_t *key = reinterpret_cast<int32_t *>(bufs_[contract::kDropoutKeyInput].data());
  const RngStream stream = validation ? RngStream::ValDropout : RngStream::TrainDropout;
  for (int64_t r = 0; r < rows_; ++r) {
    uint64_t h = counterRandom(seed_, stream, index, firstRow + (uint64_t)r);
    key[2 * r] = (int32_t)(uint32_t)h;
    key[2 * r + 1] = (int32_t)(uint32_t)(h >> 32);
  }
}

DataFeed::~DataFeed() = default;

void DataFeed::convert(const MlmBatch &b) {
  for (const auto &[name, type] : types_) {
    std::vector<char> &dst = bufs_[name];
    if (name == "ids") copyAs(b.ids, type, dst);
    else if (name == "labels") copyAs(b.labels, type, dst);
    else if (name == "segments") copyAs(b.segments, type, dst);
    else if (name == "attention_mask") copyAs(b.attention, type, dst);
    else if (name == "nsp_labels") copyAs(b.nsp, type, dst);
    else if (name == "random_bits") copyAs(b.bits, type, dst);
    else if (name == "sop_labels") copyAs(b.sop, type, dst);
    else if (name == contract::kDropoutKeyInput) continue;  // fillDropoutKeys
    else fail("the mlm transform produces no input '%s'", name.c_str());
  }
}

void DataFeed::convert(const SpanMlmBatch &b) {
  for (const auto &[name, type] : types_) {
    std::vector<char> &dst = bufs_[name];
    if (name == "ids") copyAs(b.ids, type, dst);
    else if (name == "labels") copyAs(b.labels, type, dst);
    else if (name == "attention_mask") copyAs(b.attention, type, dst);
    else if (name == "span_left") copyAs(b.left, type, dst);
    else if (name == "span_right") copyAs(b.right, type, dst);
    else if (name == "span_pos") copyAs(b.pos, type, dst);
    else if (name == contract::kDropoutKeyInput) continue;  // fillDropoutKeys
    else fail("the span_mlm transform produces no input '%s'", name.c_str());
  }
}

void DataFeed::convert(const SpanCorruptionBatch &b) {
  for (const auto &[name, type] : types_) {
    std::vector<char> &dst = bufs_[name];
    if (name == "ids") copyAs(b.ids, type, dst);
    else if (name == "attention_mask") copyAs(b.attention, type, dst);
    else if (name == "decoder_ids") copyAs(b.decoder, type, dst);
    else if (name == "labels") copyAs(b.labels, type, dst);
    else if (name == contract::kDropoutKeyInput) continue;  // fillDropoutKeys
    else fail("the span_corruption transform produces no input '%s'", name.c_str());
  }
}

void DataFeed::convert(const ExampleBatch &b) {
  for (const auto &[name, type] : types_) {
    std::vector<char> &dst = bufs_[name];
    if (auto i = b.ints.find(name); i != b.ints.end()) copyAs(i->second, type, dst);
    else if (auto f = b.floats.find(name); f != b.floats.end()) copyAs(f->second, type, dst);
    else if (name == contract::kDropoutKeyInput) continue;  // fillDropoutKeys
    else fail("the %s transform produces no input '%s'", transform_.c_str(), name.c_str());
  }
}

void DataFeed::setAccumulate(int64_t micro) {
  if (examples_) examples_->setStepRows((uint64_t)(rows_ * micro));
}

const std::map<std::string, TensorRef> &DataFeed::trainInputs(uint64_t step, uint64_t firstRow) {
  if (examples_) {
    examples_->trainBatch(step, *exampleBatch_, firstRow);
    convert(*exampleBatch_);
  } else if (causal_) {
    causal_->trainBatch(step, reinterpret_cast<int32_t *>(refs_.at(tokenName_).data), firstRow);
  } else if (span_) {
    span_->trainBatch(step, *spanBatch_, firstRow);
    convert(*spanBatch_);
  } else if (corrupt_) {
    corrupt_->trainBatch(step, *corruptBatch_, firstRow);
    convert(*corruptBatch_);
  } else {
    mlm_->trainBatch(step, *mlmBatch_, firstRow);
    convert(*mlmBatch_);
  }
  fillDropoutKeys(false, step, firstRow);
  return refs_;
}

const TokenSource &DataFeed::train() const {
  if (examples_) return examples_->train();
  return causal_ ? causal_->train() : span_ ? span_->train() : corrupt_ ? corrupt_->train() : mlm_->train();
}
const TokenSource &DataFeed::val() const {
  if (examples_) return examples_->val();
  return causal_ ? causal_->val() : span_ ? span_->val() : corrupt_ ? corrupt_->val() : mlm_->val();
}

std::string DataFeed::describe() const {
  if (causal_) return causal_->describe();
  auto one = [](const char *name, const TokenSource &s) {
    return std::string(name) + " " + s.path() + " (" + s.format() + "), " +
           (s.files().size() == 1 && s.files()[0].documents >= 0 && s.format() == "LMC example shard"
                ? std::to_string(s.files()[0].documents) + " records, "
                : "") +
           std::to_string(s.size()) + " tokens";
  };
  std::string packing;
  if (examples_ && examples_->packed()) {
    // How much of the rows real tokens fill: padded (one record a row) against packed.
    const PackingEfficiency e = packingEfficiency(examples_->trainRows(0), examples_->seq());
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "\npacking: epoch 0: %llu %s in %llu rows of %lld; real tokens / row tokens %.4f packed, "
                  "%.4f padded (%.2fx fewer rows)",
                  (unsigned long long)e.records, examples_->docStride() ? "windows" : "records", (unsigned long long)e.packedRows, (long long)examples_->seq(),
                  e.packed, e.padded, e.packedRows ? double(e.records) / double(e.packedRows) : 0.0);
    packing = buf;
  }
  return "data: " + one("train", train()) + "; " + one("val", val()) + " (" + transform_ + ")" + packing;
}

const std::map<std::string, TensorRef> &DataFeed::valInputs(uint64_t index) {
  if (examples_) {
    examples_->valBatch(index, *exampleBatch_);
    convert(*exampleBatch_);
  } else if (causal_) {
    causal_->valBatch(index, reinterpret_cast<int32_t *>(refs_.at(tokenName_).data));
  } else if (span_) {
    span_->valBatch(index, *spanBatch_);
    convert(*spanBatch_);
  } else if (corrupt_) {
    corrupt_->valBatch(index, *corruptBatch_);
    convert(*corruptBatch_);
  } else {
    mlm_->valBatch(index, *mlmBatch_);
    convert(*mlmBatch_);
  }
  fillDropoutKeys(true, index, 0);
  return refs_;
}

void DataFeed::checkValidation() const {
  if (examples_) examples_->checkValidation();
  else if (causal_) causal_->checkValidationWindow();
  else if (span_) span_->checkValidation();
  else if (corrupt_) corrupt_->checkValidation();
  else mlm_->checkValidation();
}

std::vector<std::pair<std::string, TensorRef>> DataFeed::dumpInputs() const {
  std::vector<std::pair<std::string, TensorRef>> v;
  for (const auto &[name, ref] : refs_) v.push_back({causal_ && name == tokenName_ ? "tokens" : name, ref});
  return v;
}

}  // namespace lmrt
