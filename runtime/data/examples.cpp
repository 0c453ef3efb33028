/* Implements: writing and validating example shards (format in examples.h). */
#include "runtime/data/examples.h"

#include <cmath>
#include <cstring>

#include "base/file_io.h"
#include "base/hash.h"
#include "base/tensor.h"
#include "runtime/data/token_source.h"

namespace lmrt {

namespace {

constexpr size_t kHeaderBytes = 32;
// No real dataset has 2^40 records, tokens or fields: a bound that keeps the
// size arithmetic of a corrupted header from overflowing.
constexpr uint64_t kMaxCount = uint64_t(1) << 40;

size_t pad8(size_t n) { return (n + 7) & ~size_t(7); }

}  // namespace

const char *fieldKindName(FieldKind k) {
  switch (k) {
  case FieldKind::Text: return "text";
  case FieldKind::Label: return "label";
  case FieldKind::Target: return "target";
  case FieldKind::Span: return "span";
  case FieldKind::Tags: return "tags";
  }
  return "?";
}

ExampleColumns::ExampleColumns(std::vector<ExampleField> f)
    : fields(std::move(f)), ints(fields.size()), floats(fields.size()) {}

int ExampleColumns::textFields() const {
  int n = 0;
  for (const ExampleField &f : fields) n += isSequence(f.kind);
  return n;
}

void writeExampleShard(const std::string &path, const ExampleColumns &c) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shards are little-endian");
  const uint64_t ft = (uint64_t)c.textFields();
  if (c.offsets.size() != c.records * ft + 1 || c.offsets.back() != c.tokens.size())
    fail("example shard '%s': %zu token offsets for %llu records of %llu text fields", path.c_str(),
         c.offsets.size(), (unsigned long long)c.records, (unsigned long long)ft);
  writeFileAtomic(path, "example shard", [&](std::ostream &f) {
    Fnv1a64 sum;
    auto put = [&](const void *p, size_t n) {
      sum.update(p, n);
      f.write(static_cast<const char *>(p), (std::streamsize)n);
    };
    auto zeros = [&](size_t n) {
      static const char z[8] = {};
      put(z, n);
    };
    uint32_t version = kExampleVersion, nf = (uint32_t)c.fields.size();
    uint64_t records = c.records, tokens = c.tokens.size();
    put(kExampleMagic, 8);
    put(&version, 4);
    put(&nf, 4);
    put(&records, 8);
    put(&tokens, 8);
    for (const ExampleField &fd : c.fields) {
      uint32_t kind = (uint32_t)fd.kind, len = (uint32_t)fd.name.size();
      put(&kind, 4);
      put(&len, 4);
      put(fd.name.data(), len);
      zeros(pad8(len) - len);
    }
    put(c.offsets.data(), c.offsets.size() * 8);
    put(c.tokens.data(), c.tokens.size() * 4);
    zeros(pad8(c.tokens.size() * 4) - c.tokens.size() * 4);
    for (size_t i = 0; i < c.fields.size(); ++i) {
      FieldKind k = c.fields[i].kind;
      size_t want = k == FieldKind::Span ? 2 * c.records : isSequence(k) ? 0 : c.records;
      size_t have = k == FieldKind::Target ? c.floats[i].size() : c.ints[i].size();
      if (want != have)
        fail("example shard '%s': field '%s' has %zu values for %llu records", path.c_str(),
             c.fields[i].name.c_str(), have, (unsigned long long)c.records);
      if (k == FieldKind::Target) put(c.floats[i].data(), want * 8);
      else if (!isSequence(k)) put(c.ints[i].data(), want * 8);
    }
    uint64_t checksum = sum.h;
    f.write(reinterpret_cast<const char *>(&checksum), 8);
  });
}

// --- reading ------------------------------------------------------------------

ExampleShard::ExampleShard(const std::string &path) : path_(path) {
  auto file = std::make_shared<MappedFile>(path, "example shard");
  map_ = file;
  data_ = file->data;
  bytes_ = file->size;
  const char *p = path.c_str();
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, data_ + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, data_ + at, 8);
    return v;
  };
  if (bytes_ < kHeaderBytes + 8)
    fail("%s is truncated: %zu bytes, smaller than the %zu-byte example shard header and checksum", p, bytes_,
         kHeaderBytes + 8);
  if (std::memcmp(data_, kExampleMagic, 8) != 0)
    fail("%s is not an example shard (bad magic; expected \"LMCEXMPL\")", p);
  if (u32(8) != kExampleVersion)
    fail("%s has example shard format version %u; this lmrt reads version %u", p, u32(8), kExampleVersion);
  uint32_t nf = u32(12);
  records_ = u64(16);
  tokenCount_ = u64(24);
  if (nf == 0 || nf > 1024 || records_ > kMaxCount || tokenCount_ > kMaxCount)
    fail("%s has a corrupted header: %u fields, %llu records, %llu tokens", p, nf, (unsigned long long)records_,
         (unsigned long long)tokenCount_);
  // Checksum first: everything after the header is trusted only once it matches.
  uint64_t stored = u64(bytes_ - 8), computed = fnv1a64(data_, bytes_ - 8);
  if (stored != computed)
    fail("%s: checksum mismatch (corrupted): stored %016llx, computed %016llx", p, (unsigned long long)stored,
         (unsigned long long)computed);
  size_t at = kHeaderBytes;
  for (uint32_t i = 0; i < nf; ++i) {
    if (at + 8 > bytes_ - 8) fail("%s is truncated in its field table (field %u)", p, i);
    uint32_t kind = u32(at), len = u32(at + 4);
    if (kind > (uint32_t)FieldKind::Tags) fail("%s: field %u has unknown kind %u", p, i, kind);
    if (len == 0 || len > 256 || at + 8 + pad8(len) > bytes_ - 8)
      fail("%s: field %u has a name of %u bytes (1 to 256)", p, i, len);
    fields_.push_back({std::string(reinterpret_cast<const char *>(data_ + at + 8), len), FieldKind(kind)});
    at += 8 + pad8(len);
  }
  for (const ExampleField &f : fields_) {
    textSlot_.push_back(isSequence(f.kind) ? textFields_++ : -1);
  }
  offsetsAt_ = at;
  uint64_t nOffsets = records_ * (uint64_t)textFields_ + 1;
  tokensAt_ = offsetsAt_ + nOffsets * 8;
  size_t end = tokensAt_ + pad8(tokenCount_ * 4);
  for (const ExampleField &f : fields_) {
    columnAt_.push_back(end);
    if (f.kind == FieldKind::Span) end += 16 * records_;
    else if (!isSequence(f.kind)) end += 8 * records_;
  }
  end += 8;
  if (end != bytes_)
    fail("%s has %zu bytes, but its header (%llu records, %llu tokens, %u fields) needs %zu", p, bytes_,
         (unsigned long long)records_, (unsigned long long)tokenCount_, nf, end);
  for (uint64_t i = 0; i < nOffsets; ++i) {
    uint64_t o = offset(i);
    if ((i == 0 && o != 0) || o > tokenCount_ || (i && o < offset(i - 1)) || (i + 1 == nOffsets && o != tokenCount_))
      fail("%s: token offset %llu is %llu, out of order or past the %llu tokens", p, (unsigned long long)i,
           (unsigned long long)o, (unsigned long long)tokenCount_);
  }
  for (size_t f = 0; f < fields_.size(); ++f)
    if ((fields_[f].kind == FieldKind::Tags || fields_[f].kind == FieldKind::Span) && alignedText((int)f) < 0)
      fail("%s: %s field '%s' follows no text field", p, fieldKindName(fields_[f].kind), fields_[f].name.c_str());
  std::vector<int32_t> tags;
  for (size_t f = 0; f < fields_.size(); ++f)
    for (uint64_t r = 0; r < records_; ++r) {
      if (fields_[f].kind == FieldKind::Tags) {
        const int t = alignedText((int)f);
        if (textLength(r, (int)f) != textLength(r, t))
          fail("%s: record %llu: tags '%s' has %llu labels for the %llu tokens of '%s'", p, (unsigned long long)r,
               fields_[f].name.c_str(), (unsigned long long)textLength(r, (int)f),
               (unsigned long long)textLength(r, t), fields_[t].name.c_str());
        text(r, (int)f, tags);
        for (int32_t v : tags)
          if (v < 0 && v != -100)
            fail("%s: record %llu: tags '%s' holds %d (labels are >= 0, or -100)", p, (unsigned long long)r,
                 fields_[f].name.c_str(), v);
      }
      if (fields_[f].kind == FieldKind::Target && !std::isfinite(target(r, (int)f)))
        fail("%s: record %llu: target '%s' is not finite", p, (unsigned long long)r, fields_[f].name.c_str());
      if (fields_[f].kind == FieldKind::Span) {
        int64_t s, e;
        span(r, (int)f, s, e);
        const uint64_t n = textLength(r, alignedText((int)f));
        if ((s < 0 || e < s || (uint64_t)e >= n) && !(s == -1 && e == -1))  // [-1, -1]: no answer (SQuAD v2)
          fail("%s: record %llu: span '%s' is [%lld, %lld] (expected 0 <= start <= end < %llu, the tokens of '%s', "
               "or [-1, -1]: no answer)",
               p, (unsigned long long)r, fields_[f].name.c_str(), (long long)s, (long long)e,
               (unsigned long long)n, fields_[alignedText((int)f)].name.c_str());
      }
    }
}

ExampleShard::~ExampleShard() = default;

int ExampleShard::field(const std::string &name) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name) return (int)i;
  return -1;
}

int ExampleShard::alignedText(int tagsField) const {
  for (int f = tagsField - 1; f >= 0; --f)
    if (fields_[f].kind == FieldKind::Text) return f;
  return -1;
}

std::vector<int> ExampleShard::fieldsOf(FieldKind k) const {
  std::vector<int> v;
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].kind == k) v.push_back((int)i);
  return v;
}

uint64_t ExampleShard::offset(uint64_t i) const {
  uint64_t v;
  std::memcpy(&v, data_ + offsetsAt_ + i * 8, 8);
  return v;
}

uint64_t ExampleShard::tokenIndex(uint64_t r, int f) const {
  if (r >= records_ || f < 0 || (size_t)f >= fields_.size() || textSlot_[f] < 0)
    fail("%s: no text field %d of record %llu", path_.c_str(), f, (unsigned long long)r);
  return r * (uint64_t)textFields_ + (uint64_t)textSlot_[f];
}

uint64_t ExampleShard::textLength(uint64_t r, int f) const {
  uint64_t i = tokenIndex(r, f);
  return offset(i + 1) - offset(i);
}

void ExampleShard::text(uint64_t r, int f, std::vector<int32_t> &out) const {
  uint64_t i = tokenIndex(r, f), s = offset(i), e = offset(i + 1);
  out.resize(e - s);
  for (uint64_t k = s; k < e; ++k) {
    uint32_t t;
    std::memcpy(&t, data_ + tokensAt_ + k * 4, 4);
    out[k - s] = (int32_t)t;
  }
}

int64_t ExampleShard::label(uint64_t r, int f) const {
  int64_t v;
  std::memcpy(&v, data_ + columnAt_[f] + r * 8, 8);
  return v;
}

double ExampleShard::target(uint64_t r, int f) const {
  double v;
  std::memcpy(&v, data_ + columnAt_[f] + r * 8, 8);
  return v;
}

void ExampleShard::span(uint64_t r, int f, int64_t &start, int64_t &end) const {
  std::memcpy(&start, data_ + columnAt_[f] + r * 16, 8);
  std::memcpy(&end, data_ + columnAt_[f] + r * 16 + 8, 8);
}

std::unique_ptr<TokenSource> ExampleShard::tokenSource() const {
  auto file = std::static_pointer_cast<MappedFile>(map_);
  return std::make_unique<TokenSource>(path_, "LMC example shard", data_ + tokensAt_, TokenDType::U32, tokenCount_,
                                       (int64_t)records_, map_, [file] { file->releasePages(); });
}

}  // namespace lmrt
