/* Implements: the attribute getters of attrs.h, with errors naming the
   attribute, and the ODS defaults of an op's attributes. */
#include "contract/attrs.h"

#include "base/tensor.h"
#include "contract/op_table.h"

namespace lmrt::kernels {

namespace {

const char *kindName(const Attrs::Value &v) {
  switch (v.index()) {
  case 0: return "an integer";
  case 1: return "a float";
  case 2: return "a bool";
  case 3: return "a string";
  default: return "an integer list";
  }
}

template <typename T>
const T &getAs(const std::map<std::string, Attrs::Value> &values, const std::string &name, const char *want) {
  auto it = values.find(name);
  if (it == values.end()) fail("attribute '%s' is missing (expected %s)", name.c_str(), want);
  if (const T *p = std::get_if<T>(&it->second)) return *p;
  fail("attribute '%s' is %s, expected %s", name.c_str(), kindName(it->second), want);
}

}  // namespace

int64_t Attrs::getInt(const std::string &name) const { return getAs<int64_t>(values_, name, "an integer"); }

double Attrs::getFloat(const std::string &name) const {
  auto it = values_.find(name);
  if (it != values_.end())
    if (const int64_t *i = std::get_if<int64_t>(&it->second)) return (double)*i;
  return getAs<double>(values_, name, "a float");
}

bool Attrs::getBool(const std::string &name) const { return getAs<bool>(values_, name, "a bool"); }

const std::string &Attrs::getString(const std::string &name) const {
  return getAs<std::string>(values_, name, "a string");
}

const std::vector<int64_t> &Attrs::getInts(const std::string &name) const {
  return getAs<std::vector<int64_t>>(values_, name, "an integer list");
}

void addOpDefaults(std::string_view op, Attrs &attrs) {
  const ops::OpInfo *info = ops::findOp(op);
  if (!info) return;
  for (int i = 0; i < info->numAttrs; ++i) {
    const ops::AttrInfo &a = info->attrs[i];
    if (!a.hasDefault || attrs.has(a.name)) continue;
    switch (a.kind) {
    case ops::AttrKind::Int: attrs.set(a.name, a.defaultInt); break;
    case ops::AttrKind::Float: attrs.set(a.name, a.defaultFloat); break;
    case ops::AttrKind::Bool: attrs.set(a.name, a.defaultBool); break;
    case ops::AttrKind::IntList: break;  // lm-tblgen admits no list defaults
    }
  }
}

}  // namespace lmrt::kernels
