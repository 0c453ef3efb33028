/* Fuzz target: the JSON reader (base/json.h) that every JSON file lmrt reads goes
   through (safetensors headers, checkpoint meta.json, HF config.json, dataset
   metadata).

   Invariants of an accepted text: it is printed back (strings through
   json::quote, numbers as their literal) and the print parses to the same
   value; an integer asInt accepts prints back as the same literal; a rejected
   text fails with lmrt::Error only. Nesting is bounded by the reader (64 levels),
   so the recursion here is too. */
#include "base/json.h"
#include "base/tensor.h"
#include "test/Fuzz/FuzzSupport.h"

using namespace lmrt;

namespace {

std::string print(const json::Value &v) {
  switch (v.kind) {
  case json::Value::Null: return "null";
  case json::Value::Bool: return v.b ? "true" : "false";
  case json::Value::Number: {
    int64_t i;
    if (v.asInt(i)) {
      // An integer literal without a sign or leading zeros reads back exactly.
      std::string back = std::to_string(i);
      LMC_FUZZ_CHECK(back == v.text || v.text == "-0", v.text + " read as " + back);
    }
    return v.text;
  }
  case json::Value::String: return json::quote(v.text);
  case json::Value::Array: {
    std::string out = "[";
    for (size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + print(v.items[i]);
    return out + "]";
  }
  case json::Value::Object: {
    std::string out = "{";
    for (size_t i = 0; i < v.members.size(); ++i) {
      LMC_FUZZ_CHECK(v.find(v.members[i].first) == &v.members[i].second, v.members[i].first);
      out += (i ? "," : "") + json::quote(v.members[i].first) + ":" + print(v.members[i].second);
    }
    return out + "}";
  }
  }
  lmc_fuzz::violated("unknown JSON kind");
}

bool same(const json::Value &a, const json::Value &b) {
  if (a.kind != b.kind || a.b != b.b || a.text != b.text || a.items.size() != b.items.size() ||
      a.members.size() != b.members.size())
    return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!same(a.items[i], b.items[i])) return false;
  for (size_t i = 0; i < a.members.size(); ++i)
    if (a.members[i].first != b.members[i].first || !same(a.members[i].second, b.members[i].second))
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json::Value v;
  try {
    v = json::parse(lmc_fuzz::bytesOf(data, size));
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
    return 0;
  }
  const std::string printed = print(v);
  json::Value again;
  try {
    again = json::parse(printed);
  } catch (const Error &e) {
    lmc_fuzz::violated("the printed value does not parse", e.what());
  }
  LMC_FUZZ_CHECK(same(v, again), printed);
  return 0;
}
