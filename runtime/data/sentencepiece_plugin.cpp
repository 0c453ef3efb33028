/* Implements: liblmrt_sentencepiece.so, SentencePiece behind lmrt's Tokenizer
   interface (see sentencepiece_plugin.h and, for why it is a plugin,
   tokenizer.cpp). Links only libsentencepiece and the C++ runtime. */
#include "runtime/data/sentencepiece_plugin.h"

#include <algorithm>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <stdexcept>

namespace {

using lmrt::Tokenizer;

class SentencePieceTokenizer final : public Tokenizer {
public:
  explicit SentencePieceTokenizer(std::string path) : path_(std::move(path)) {}
  sentencepiece::util::Status load(const std::string &bytes) {
    return sp_.LoadFromSerializedProto(bytes);
  }
  const char *kind() const override { return "sentencepiece"; }
  int64_t vocab() const override { return sp_.GetPieceSize(); }
  std::vector<int32_t> encode(const std::string &text) const override {
    std::vector<int> ids;
    auto st = sp_.Encode(text, &ids);
    if (!st.ok()) throw std::runtime_error(path_ + ": cannot encode text: " + st.ToString());
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
  std::string decode(const std::vector<int32_t> &ids) const override {
    std::vector<int> v(ids.begin(), ids.end());
    for (int id : v)
      if (id < 0 || id >= sp_.GetPieceSize())
        throw std::runtime_error("token " + std::to_string(id) + " is outside the vocabulary of " +
                                 path_ + " (" + std::to_string(sp_.GetPieceSize()) + ")");
    std::string s;
    auto st = sp_.Decode(v, &s);
    if (!st.ok()) throw std::runtime_error(path_ + ": cannot decode: " + st.ToString());
    return s;
  }
  std::string piece(int32_t id) const override {
    if (id < 0 || id >= sp_.GetPieceSize())
      throw std::runtime_error("token " + std::to_string(id) + " is outside the vocabulary of " + path_ +
                               " (" + std::to_string(sp_.GetPieceSize()) + ")");
    if (sp_.IsControl(id) || sp_.IsUnknown(id)) return "";
    std::string p = sp_.IdToPiece(id);
    if (sp_.IsByte(id) && p.size() == 6)  // "<0xHH>"
      return std::string(1, (char)std::stoi(p.substr(3, 2), nullptr, 16));
    return p;
  }
  std::vector<std::pair<std::string, int32_t>> specialTokens() const override {
    std::vector<std::pair<std::string, int32_t>> out;
    auto add = [&](const char *name, int id) {
      if (id >= 0 && id < sp_.GetPieceSize()) out.push_back({name, id});
    };
    add("unk", sp_.unk_id());
    add("pad", sp_.pad_id());
    add("bos", sp_.bos_id());
    add("eos", sp_.eos_id());
    for (const char *name : {"cls", "sep", "mask"}) {
      int id = sp_.PieceToId(std::string("<") + name + ">");
      if (id != sp_.unk_id() && sp_.IsControl(id)) add(name, id);
    }
    std::sort(out.begin(), out.end(),
              [](const auto &a, const auto &b) { return a.second < b.second; });
    return out;
  }

private:
  std::string path_;
  sentencepiece::SentencePieceProcessor sp_;
};

/* Feeds the trainer one non-empty line at a time (SentencePiece trains on
   sentences; newlines themselves are spelled with the byte piece <0x0A>). */
class LineIterator final : public sentencepiece::SentenceIterator {
public:
  explicit LineIterator(const std::vector<std::string> &texts) : texts_(texts) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string &value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

private:
  void advance() {
    while (text_ < texts_.size()) {
      const std::string &t = texts_[text_];
      if (at_ >= t.size()) {
        ++text_;
        at_ = 0;
        continue;
      }
      size_t nl = t.find('\n', at_);
      size_t end = nl == std::string::npos ? t.size() : nl;
      line_ = t.substr(at_, end - at_);
      at_ = end + 1;
      if (!line_.empty()) return;
    }
    done_ = true;
  }
  const std::vector<std::string> &texts_;
  size_t text_ = 0, at_ = 0;
  bool done_ = false;
  std::string line_;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) lmrt::Tokenizer *
lmrtSentencePieceLoad(const std::string &path, const std::string &bytes, std::string &error) {
  auto t = std::make_unique<SentencePieceTokenizer>(path);
  auto st = t->load(bytes);
  if (!st.ok()) {
    error = st.ToString();
    return nullptr;
  }
  return t.release();
}

extern "C" __attribute__((visibility("default"))) bool
lmrtSentencePieceTrain(const std::unordered_map<std::string, std::string> &args,
                       const std::vector<std::string> &texts, std::string &model,
                       std::string &error) {
  LineIterator lines(texts);
  if (lines.done()) {
    error = "the inputs hold no text";
    return false;
  }
  auto st = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (!st.ok()) {
    error = "SentencePiece: " + st.ToString();
    return false;
  }
  return true;
}
