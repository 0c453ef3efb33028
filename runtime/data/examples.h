/* Implements: example shards, the on-disk form of a dataset of records (JSON
   Lines turned into examples by `lmrt data build --format jsonl`): per record,
   named fields of five kinds:
     text    a token sequence (the dataset's tokenizer)
     label   an integer class
     target  a float (regression)
     span    two integers [start, end]: the first and last token (inclusive)
             of an answer in the text field before it
     tags    per token of the text field before it, an integer label or -100
             (token classification: `lmrt data build` puts a word's tag on its
             first token and -100 on the rest)

   Layout (all integers little-endian, every section 8-byte aligned):
     offset 0   "LMCEXMPL"            8-byte magic
            8   u32 version           kExampleVersion
           12   u32 field count       F
           16   u64 record count      R
           24   u64 token count       N (all text fields of all records)
           32   F field entries: u32 kind, u32 name length, the name padded to 8 bytes
                R * Ft + 1 u64 token offsets (Ft = sequence fields: text and
                  tags; record r's sequence field t spans [off[r * Ft + t],
                  off[r * Ft + t + 1]); the first is 0, non-decreasing, the last is N)
                N u32 tokens, padded to 8 bytes (a tags field's values as i32)
                per label field R i64; per target field R f64 (finite); per span
                  field 2R i64 (0 <= start <= end)
                u64 FNV-1a-64 of every preceding byte
   Readers check magic, version, the exact file size, the offsets, the values
   and the checksum before handing out a record. */
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lmrt {

class TokenSource;

constexpr char kExampleMagic[8] = {'L', 'M', 'C', 'E', 'X', 'M', 'P', 'L'};
constexpr uint32_t kExampleVersion = 1;

enum class FieldKind : uint32_t { Text = 0, Label = 1, Target = 2, Span = 3, Tags = 4 };
const char *fieldKindName(FieldKind k);
/* Text and tags: a sequence a record, held in the token array. */
inline bool isSequence(FieldKind k) { return k == FieldKind::Text || k == FieldKind::Tags; }

struct ExampleField {
  std::string name;
  FieldKind kind = FieldKind::Text;
  bool words = false;  // building only: a JSON array of words (stored as text)
};

/* A set of records in memory, as the builder collects them (column-wise). */
struct ExampleColumns {
  std::vector<ExampleField> fields;
  uint64_t records = 0;
  std::vector<uint64_t> offsets{0};  // R * Ft + 1, as in the file
  std::vector<uint32_t> tokens;
  std::vector<std::vector<int64_t>> ints;    // per field: label R, span 2R; else empty
  std::vector<std::vector<double>> floats;   // per field: target R; else empty

  explicit ExampleColumns(std::vector<ExampleField> f);
  int textFields() const;
};

/* Writes PATH atomically (PATH.tmp, then renamed). */
void writeExampleShard(const std::string &path, const ExampleColumns &c);

/* A validated, memory-mapped example shard. */
class ExampleShard {
public:
  /* Maps and validates the file; throws Error naming `path` on any problem. */
  explicit ExampleShard(const std::string &path);
  ~ExampleShard();
  ExampleShard(const ExampleShard &) = delete;
  ExampleShard &operator=(const ExampleShard &) = delete;

  const std::string &path() const { return path_; }
  uint64_t records() const { return records_; }
  uint64_t tokenCount() const { return tokenCount_; }
  const std::vector<ExampleField> &fields() const { return fields_; }
  /* The index of field `name`, or -1. */
  int field(const std::string &name) const;
  /* The fields of one kind, in file order (indices into fields()). */
  std::vector<int> fieldsOf(FieldKind k) const;

  /* The text field a tags or span field labels (the last text field before it). */
  int alignedText(int tagsField) const;
  /* Record r's text or tags field f (an index into fields()) as ids / labels. */
  void text(uint64_t r, int f, std::vector<int32_t> &out) const;
  uint64_t textLength(uint64_t r, int f) const;
  int64_t label(uint64_t r, int f) const;
  double target(uint64_t r, int f) const;
  // The answer's first and last token; [-1, -1]: no answer (SQuAD v2).
  void span(uint64_t r, int f, int64_t &start, int64_t &end) const;

  /* The tokens of every text field as one stream (for the data fingerprint of
     checkpoints and the token-range check); the stream keeps the mapping alive. */
  std::unique_ptr<TokenSource> tokenSource() const;

private:
  uint64_t offset(uint64_t i) const;
  uint64_t tokenIndex(uint64_t r, int f) const;  // the text field's slot in the offsets
  std::string path_;
  std::shared_ptr<void> map_;
  const unsigned char *data_ = nullptr;
  size_t bytes_ = 0;
  uint64_t records_ = 0, tokenCount_ = 0;
  std::vector<ExampleField> fields_;
  std::vector<int> textSlot_;       // per field: its index among the text fields, or -1
  std::vector<size_t> columnAt_;    // per field: byte offset of its label/target/span column
  size_t offsetsAt_ = 0, tokensAt_ = 0;
  int textFields_ = 0;
};

}  // namespace lmrt
