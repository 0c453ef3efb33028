/* Implements: a small strict JSON reader (RFC 8259) and a string escaper, for the
   safetensors header. Numbers keep their text so integers are read exactly. */
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lmrt::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  std::string text;  // Number: the literal; String: the decoded string
  std::vector<Value> items;                              // Array
  std::vector<std::pair<std::string, Value>> members;    // Object, in file order

  const Value *find(const std::string &key) const;
  /* True (and sets v) when a Number is an integer literal fitting int64. */
  bool asInt(int64_t &v) const;
};

const char *kindName(Value::Kind k);

/* Parses exactly one JSON value (surrounding whitespace allowed). Throws
   lmrt::Error "JSON error at byte N: ..." on malformed text or duplicate keys. */
Value parse(const std::string &text);

/* `s` as a quoted JSON string. */
std::string quote(const std::string &s);

}  // namespace lmrt::json
