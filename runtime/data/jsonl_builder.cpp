/* Implements: JSON Lines -> example shards + meta.json (see jsonl_builder.h). */
#include "runtime/data/jsonl_builder.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sys/stat.h>

#include "base/file_io.h"
#include "base/json.h"
#include "base/paths.h"
#include "base/tensor.h"
#include "runtime/data/dataset_builder.h"
#include "runtime/data/dataset_meta.h"
#include "runtime/data/tokenizer.h"

namespace lmrt {

std::vector<ExampleField> parseFieldList(const std::vector<std::string> &specs) {
  std::vector<ExampleField> fields;
  std::set<std::string> seen;
  bool text = false;
  for (const std::string &spec : specs) {
    size_t colon = spec.find(':');
    ExampleField f;
    f.name = spec.substr(0, colon);
    std::string kind = colon == std::string::npos ? "text" : spec.substr(colon + 1);
    if (kind == "text") f.kind = FieldKind::Text;
    else if (kind == "words") f.kind = FieldKind::Text, f.words = true;
    else if (kind == "label") f.kind = FieldKind::Label;
    else if (kind == "target") f.kind = FieldKind::Target;
    else if (kind == "span") f.kind = FieldKind::Span;
    else if (kind == "tags") f.kind = FieldKind::Tags;
    else
      fail("--fields '%s': unknown kind '%s' (expected NAME or NAME:KIND, KIND one of text, words, label, target, "
           "span, tags)", spec.c_str(), kind.c_str());
    if (f.kind == FieldKind::Span &&
        std::none_of(fields.begin(), fields.end(), [](const ExampleField &g) { return g.kind == FieldKind::Text; }))
      fail("--fields '%s': a span field marks the answer in the text field before it (e.g. "
           "--fields question,context,answers:span)", spec.c_str());
    if (f.kind == FieldKind::Tags) {
      const ExampleField *prev = nullptr;
      for (const ExampleField &g : fields)
        if (g.kind == FieldKind::Text) prev = &g;
      if (!prev || !prev->words)
        fail("--fields '%s': a tags field labels the words of the words field before it (e.g. "
             "--fields tokens:words,ner_tags:tags)", spec.c_str());
    }
    if (f.name.empty() || f.name.size() > 256)
      fail("--fields '%s': a field needs a name of 1 to 256 bytes (NAME or NAME:KIND)", spec.c_str());
    if (!seen.insert(f.name).second) fail("--fields: '%s' is listed twice", f.name.c_str());
    text |= f.kind == FieldKind::Text;
    fields.push_back(f);
  }
  if (fields.empty()) fail("--fields: no field given (e.g. --fields text,label:label)");
  if (!text) fail("--fields: no text field (a field without :KIND, or NAME:text or NAME:words, is one)");
  return fields;
}

namespace {

/* Characters are Unicode code points, as Python's str (and so HF's
   answer_start) counts them: every UTF-8 byte that does not continue one. */
size_t utf8Chars(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

/* The byte offset of character `k` (k <= utf8Chars(s)). */
size_t utf8Offset(const std::string &s, int64_t k) {
  size_t at = 0;
  for (; at < s.size(); ++at)
    if ((static_cast<unsigned char>(s[at]) & 0xc0) != 0x80 && k-- == 0) return at;
  return at;
}

struct Split {
  ExampleColumns columns;
  JsonlSplitStats stats;
  explicit Split(const std::vector<ExampleField> &f) : columns(f) {
    stats.labelCounts.resize(f.size());
  }
};

/* One record of line `where` ("FILE:LINE") into `split`. */
void addRecord(const json::Value &rec, const std::string &where, const Tokenizer &tok, Split &split,
               std::vector<int64_t> &classes) {
  ExampleColumns &c = split.columns;
  auto bad = [&](const ExampleField &f, const json::Value &v, const char *expected) {
    fail("%s: field '%s' is %s, expected %s (--fields ...,%s:%s)", where.c_str(), f.name.c_str(),
         json::kindName(v.kind), expected, f.name.c_str(), fieldKindName(f.kind));
  };
  auto integer = [&](const ExampleField &f, const json::Value &v, int64_t &out) {
    if (!v.asInt(out)) bad(f, v, "an integer");
  };
  // The first token of each word of the last words field (relative to its
  // start), for the tags field after it.
  std::vector<int64_t> wordStarts;
  uint64_t wordTokens = 0;
  // The last text field's string and name, for the span field after it.
  std::string lastText, lastTextName;
  for (size_t i = 0; i < c.fields.size(); ++i) {
    const ExampleField &f = c.fields[i];
    const json::Value *v = rec.find(f.name);
    if (!v) {
      std::string keys;
      for (const auto &[k, _] : rec.members) keys += (keys.empty() ? "" : ", ") + k;
      fail("%s: the record has no field '%s' (it has: %s)", where.c_str(), f.name.c_str(),
           keys.empty() ? "no fields" : keys.c_str());
    }
    switch (f.kind) {
    case FieldKind::Text: {
      if (!f.words) {
        if (v->kind != json::Value::String) bad(f, *v, "a string");
        lastText = v->text, lastTextName = f.name;
        for (int32_t id : tok.encode(v->text)) c.tokens.push_back((uint32_t)id);
        c.offsets.push_back(c.tokens.size());
        break;
      }
      // Words joined by single spaces, each word's first token remembered.
      if (v->kind != json::Value::Array) bad(f, *v, "an array of strings");
      const uint64_t start = c.tokens.size();
      wordStarts.clear();
      lastText.clear(), lastTextName = f.name;
      for (size_t w = 0; w < v->items.size(); ++w) {
        const json::Value &word = v->items[w];
        if (word.kind != json::Value::String || word.text.empty())
          fail("%s: word %zu of '%s' is %s, expected a non-empty string", where.c_str(), w, f.name.c_str(),
               word.kind == json::Value::String ? "empty" : json::kindName(word.kind));
        if (w)
          for (int32_t id : tok.encode(" ")) c.tokens.push_back((uint32_t)id);
        lastText += (w ? " " : "") + word.text;
        wordStarts.push_back((int64_t)(c.tokens.size() - start));
        for (int32_t id : tok.encode(word.text)) c.tokens.push_back((uint32_t)id);
      }
      wordTokens = c.tokens.size() - start;
      c.offsets.push_back(c.tokens.size());
      break;
    }
    case FieldKind::Tags: {
      if (v->kind != json::Value::Array) bad(f, *v, "an array of integers");
      if (v->items.size() != wordStarts.size())
        fail("%s: '%s' has %zu tags for %zu words", where.c_str(), f.name.c_str(), v->items.size(),
             wordStarts.size());
      std::vector<int32_t> labels(wordTokens, (int32_t)-100);
      for (size_t w = 0; w < v->items.size(); ++w) {
        int64_t t;
        if (!v->items[w].asInt(t) || t < 0 || t >= (int64_t(1) << 31))
          fail("%s: tag %zu of '%s' is %s; tags are class indices 0, 1, ... (below 2^31)", where.c_str(), w,
               f.name.c_str(), v->items[w].kind == json::Value::Number ? v->items[w].text.c_str()
                                                                       : json::kindName(v->items[w].kind));
        labels[wordStarts[w]] = (int32_t)t;
        classes[i] = std::max(classes[i], t + 1);
      }
      for (int32_t l : labels) c.tokens.push_back((uint32_t)l);
      c.offsets.push_back(c.tokens.size());
      break;
    }
    case FieldKind::Label: {
      int64_t l;
      integer(f, *v, l);
      if (l < 0 || l >= (int64_t(1) << 31))
        fail("%s: label '%s' is %lld; labels are class indices 0, 1, ... (below 2^31)", where.c_str(),
             f.name.c_str(), (long long)l);
      c.ints[i].push_back(l);
      classes[i] = std::max(classes[i], l + 1);
      auto &counts = split.stats.labelCounts[i];
      if ((int64_t)counts.size() <= l) counts.resize(l + 1, 0);
      ++counts[l];
      break;
    }
    case FieldKind::Target: {
      double x = v->kind == json::Value::Number ? std::strtod(v->text.c_str(), nullptr) : NAN;
      if (v->kind != json::Value::Number) bad(f, *v, "a number");
      if (!std::isfinite(x)) fail("%s: target '%s' is %s, not a finite number", where.c_str(), f.name.c_str(),
                                  v->text.c_str());
      c.floats[i].push_back(x);
      break;
    }
    case FieldKind::Span: {
      // The answer in the text field before it, as character offsets
      // [start, end) (Python's text[start:end]) or SQuAD's answers object
      // (its first answer), stored as the first and last token of the answer.
      if (std::string(tok.kind()) != "bytes")
        fail("%s: span '%s': spans are built from byte data for now (character offsets become token offsets "
             "exactly there); build without --tokenizer", where.c_str(), f.name.c_str());
      int64_t s = 0, e = 0;
      const std::string *answer = nullptr;
      if (v->kind == json::Value::Array) {
        if (v->items.size() != 2 || !v->items[0].asInt(s) || !v->items[1].asInt(e))
          bad(f, *v, "[start, end] (character offsets) or {\"text\": [...], \"answer_start\": [...]}");
      } else if (v->kind == json::Value::Object) {
        const json::Value *texts = v->find("text"), *starts = v->find("answer_start");
        if (!texts || !starts || texts->kind != json::Value::Array || starts->kind != json::Value::Array)
          fail("%s: span '%s' is an object without the arrays \"text\" and \"answer_start\" of SQuAD's answers",
               where.c_str(), f.name.c_str());
        if (texts->items.empty() && starts->items.empty()) {
          // SQuAD v2's unanswerable question: stored as the span [-1, -1].
          c.ints[i].push_back(-1);
          c.ints[i].push_back(-1);
          break;
        }
        if (texts->items.empty() || starts->items.empty())
          fail("%s: span '%s' has %zu answer texts and %zu answer starts (an unanswerable question has none of "
               "either)", where.c_str(), f.name.c_str(), texts->items.size(), starts->items.size());
        if (texts->items[0].kind != json::Value::String || !starts->items[0].asInt(s))
          fail("%s: span '%s': the first answer needs a string \"text\" and an integer \"answer_start\"",
               where.c_str(), f.name.c_str());
        answer = &texts->items[0].text;
        e = s + (int64_t)utf8Chars(*answer);
      } else {
        bad(f, *v, "[start, end] (character offsets) or {\"text\": [...], \"answer_start\": [...]}");
      }
      const size_t chars = utf8Chars(lastText);
      if (s < 0 || e <= s || e > (int64_t)chars)
        fail("%s: span '%s' is [%lld, %lld); expected 0 <= start < end <= %zu (the characters of '%s')",
             where.c_str(), f.name.c_str(), (long long)s, (long long)e, chars, lastTextName.c_str());
      const size_t bs = utf8Offset(lastText, s), be = utf8Offset(lastText, e);
      if (answer && lastText.compare(bs, be - bs, *answer) != 0)
        fail("%s: span '%s': the answer %s is not at character %lld of '%s' (which has %s there)", where.c_str(),
             f.name.c_str(), json::quote(*answer).c_str(), (long long)s, lastTextName.c_str(),
             json::quote(lastText.substr(bs, be - bs)).c_str());
      c.ints[i].push_back((int64_t)bs);  // bytes: one token a byte
      c.ints[i].push_back((int64_t)be - 1);
      break;
    }
    }
  }
  ++c.records;
  ++split.stats.records;
}

/* Every record of `file` into the split `pick(recordIndex)` chooses. */
template <typename Pick>
void readJsonl(const std::string &file, const Tokenizer &tok, std::vector<int64_t> &classes, uint64_t &index,
               Pick pick) {
  std::string text = readWholeFile(file, "JSON Lines input");
  size_t at = 0;
  uint64_t line = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string s = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    ++line;
    if (s.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines between records
    std::string where = file + ":" + std::to_string(line);
    json::Value rec;
    try {
      rec = json::parse(s);
    } catch (const Error &e) {
      fail("%s: not a JSON record: %s", where.c_str(), e.what());
    }
    if (rec.kind != json::Value::Object)
      fail("%s: a record must be a JSON object, got %s", where.c_str(), json::kindName(rec.kind));
    addRecord(rec, where, tok, pick(index), classes);
    ++index;
  }
}

std::string labelCounts(const std::vector<uint64_t> &counts) {
  std::string s = "[";
  for (size_t i = 0; i < counts.size(); ++i) s += (i ? ", " : "") + std::to_string(counts[i]);
  return s + "]";
}

void writeMeta(const std::string &path, const JsonlBuildOptions &o, const JsonlBuildStats &s,
               const std::vector<std::string> &inputs) {
  std::string j = "{\n  \"tokenizer\": " + json::quote(s.tokenizer) + ",\n";
  if (s.tokenizer != "bytes") j += "  \"tokenizer_model\": \"tokenizer.model\",\n";
  j += "  \"vocab\": " + std::to_string(s.vocab) + ",\n  \"format\": \"examples\",\n  \"fields\": [";
  for (size_t i = 0; i < s.fields.size(); ++i) {
    j += std::string(i ? ", " : "") + "{\"name\": " + json::quote(s.fields[i].name) +
         ", \"kind\": " + json::quote(fieldKindName(s.fields[i].kind));
    if (s.fields[i].kind == FieldKind::Label || s.fields[i].kind == FieldKind::Tags)
      j += ", \"classes\": " + std::to_string(s.classes[i]);
    j += "}";
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "],\n  \"seed\": %llu,\n  \"val_fraction\": %.15g,\n", (unsigned long long)o.seed,
                o.valInputs.empty() ? o.valFraction : 0.0);
  j += buf;
  auto split = [&](const char *name, const JsonlSplitStats &st) {
    j += std::string("  \"") + name + "\": {\"file\": \"" + name + ".examples\", \"tokens\": " +
         std::to_string(st.tokens) + ", \"documents\": " + std::to_string(st.records) +
         ", \"records\": " + std::to_string(st.records);
    for (size_t i = 0; i < s.fields.size(); ++i)
      if (s.fields[i].kind == FieldKind::Label) {
        std::vector<uint64_t> counts = st.labelCounts[i];
        counts.resize(s.classes[i], 0);
        j += ", " + json::quote(s.fields[i].name + "_counts") + ": " + labelCounts(counts);
      }
    j += "},\n";
  };
  split("train", s.train);
  split("val", s.val);
  j += "  \"inputs\": [";
  for (size_t i = 0; i < inputs.size(); ++i) j += (i ? ", " : "") + json::quote(inputs[i]);
  j += "]\n}\n";
  writeFileAtomic(path, "dataset metadata", [&](std::ostream &f) { f << j; });
}

}  // namespace

JsonlBuildStats buildJsonlDataset(const JsonlBuildOptions &o) {
  if (o.inputs.empty()) fail("data build: no --input given");
  if (o.outDir.empty()) fail("data build: no --out directory given");
  if (!(o.valFraction >= 0.0 && o.valFraction < 1.0))
    fail("data build: --val-fraction %g is outside [0, 1)", o.valFraction);
  JsonlBuildStats stats;
  stats.fields = parseFieldList(o.fields);
  stats.classes.assign(stats.fields.size(), 0);

  std::vector<NamedPath> named;
  for (const std::string &f : o.inputs) named.push_back({"--input", f});
  for (const std::string &f : o.valInputs) named.push_back({"--val-input", f});
  checkDataBuildOutputs(o.outDir, {kExampleMagic, "train.examples", "val.examples", "an example shard (LMCEXMPL)"},
                        o.tokenizer, named, o.overwrite, o.log);
  std::string dir = o.outDir.back() == '/' ? o.outDir : o.outDir + "/";

  std::unique_ptr<Tokenizer> tok = o.tokenizer.empty() ? byteTokenizer() : loadSentencePiece(o.tokenizer);
  stats.tokenizer = tok->kind();
  stats.vocab = tok->vocab();
  Split train(stats.fields), val(stats.fields);
  uint64_t index = 0;
  const bool ownVal = !o.valInputs.empty();
  for (const std::string &file : o.inputs)
    readJsonl(file, *tok, stats.classes, index, [&](uint64_t i) -> Split & {
      return !ownVal && isValidationDocument(o.seed, i, o.valFraction) ? val : train;
    });
  const uint64_t inputRecords = index;
  for (const std::string &file : o.valInputs)
    readJsonl(file, *tok, stats.classes, index, [&](uint64_t) -> Split & { return val; });
  if (inputRecords == 0) fail("data build: the --input files hold no JSON record");
  if (train.stats.records == 0)
    fail("data build: every one of the %llu records went to validation; lower --val-fraction",
         (unsigned long long)inputRecords);
  if (val.stats.records == 0 && (ownVal || o.valFraction > 0))
    fail("data build: no record went to validation (%s), so a run would have no validation data; give more "
         "records or a larger --val-fraction, or pass --val-fraction 0 to build without a validation split",
         ownVal ? "the --val-input files are empty" : "--val-fraction too small for the records");
  train.stats.tokens = train.columns.tokens.size();
  val.stats.tokens = val.columns.tokens.size();
  stats.train = train.stats;
  stats.val = val.stats;

  if (::mkdir(o.outDir.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create output directory '%s': %s", o.outDir.c_str(), std::strerror(errno));
  writeExampleShard(dir + "train.examples", train.columns);
  writeExampleShard(dir + "val.examples", val.columns);
  if (!o.tokenizer.empty()) {
    std::string model = readWholeFile(o.tokenizer, "tokenizer model");
    writeFileAtomic(dir + "tokenizer.model", "tokenizer model", [&](std::ostream &f) { f << model; });
  }
  std::vector<std::string> inputs = o.inputs;
  inputs.insert(inputs.end(), o.valInputs.begin(), o.valInputs.end());
  writeMeta(dir + "meta.json", o, stats, inputs);
  return stats;
}

}  // namespace lmrt
