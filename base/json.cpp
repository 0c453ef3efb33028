/* Implements: the strict JSON reader and string quoting (see json.h). */
#include "base/json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "base/tensor.h"

namespace lmrt::json {

const Value *Value::find(const std::string &key) const {
  for (const auto &[k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

bool Value::asInt(int64_t &v) const {
  if (kind != Number || text.find_first_of(".eE") != std::string::npos) return false;
  errno = 0;
  char *end = nullptr;
  long long x = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end) return false;
  v = x;
  return true;
}

const char *kindName(Value::Kind k) {
  static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
  return names[k];
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &s) : s_(s) {}

  Value document() {
    Value v = value(0);
    ws();
    if (i_ != s_.size()) err("unexpected text after the JSON value");
    return v;
  }

private:
  const std::string &s_;
  size_t i_ = 0;

  [[noreturn]] void err(const std::string &msg) {
    throw Error("JSON error at byte " + std::to_string(i_) + ": " + msg);
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) err(std::string("expected '") + c + "'");
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  Value value(int depth) {
    if (depth > 64) err("nesting deeper than 64 levels");
    ws();
    if (i_ >= s_.size()) err("unexpected end of text");
    Value v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::Object;
      std::set<std::string> keys;
      if (eat('}')) return v;
      do {
        ws();
        if (i_ >= s_.size() || s_[i_] != '"') err("expected a string key");
        std::string key = string();
        if (!keys.insert(key).second) err("duplicate key \"" + key + "\"");
        expect(':');
        v.members.emplace_back(key, value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = Value::Array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::String;
      v.text = string();
    } else if (literal("true")) {
      v.kind = Value::Bool;
      v.b = true;
    } else if (literal("false")) {
      v.kind = Value::Bool;
    } else if (literal("null")) {
      v.kind = Value::Null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Number;
      v.text = number();
    } else {
      err(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string number() {
    size_t start = i_;
    auto digits = [&] {
      size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) err("malformed number");
    };
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') ++i_;
    else digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return s_.substr(start, i_ - start);
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) err("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else err("bad hex digit in \\u escape");
    }
    return v;
  }

  static void utf8(std::string &out, unsigned cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += {char(0xc0 | cp >> 6), char(0x80 | (cp & 0x3f))};
    else if (cp < 0x10000)
      out += {char(0xe0 | cp >> 12), char(0x80 | (cp >> 6 & 0x3f)), char(0x80 | (cp & 0x3f))};
    else
      out += {char(0xf0 | cp >> 18), char(0x80 | (cp >> 12 & 0x3f)), char(0x80 | (cp >> 6 & 0x3f)),
              char(0x80 | (cp & 0x3f))};
  }

  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) err("unterminated string");
      unsigned char c = s_[i_++];
      if (c == '"') return out;
      if (c < 0x20) err("control character in string");
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (i_ >= s_.size()) err("unterminated escape");
      char e = s_[i_++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned cp = hex4();
        if (cp >= 0xd800 && cp < 0xdc00) {
          if (!literal("\\u")) err("unpaired surrogate in \\u escape");
          unsigned lo = hex4();
          if (lo < 0xdc00 || lo >= 0xe000) err("bad low surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          err("unpaired surrogate in \\u escape");
        }
        utf8(out, cp);
        break;
      }
      default: err(std::string("bad escape '\\") + e + "'");
      }
    }
  }
};

}  // namespace

Value parse(const std::string &text) { return Parser(text).document(); }

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += char(c);
  }
  return out + "\"";
}

}  // namespace lmrt::json
