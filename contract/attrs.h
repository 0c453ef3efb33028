/* Implements: a plan step's attributes as the kernels of every backend read
   them, decoded from the plan by decodeAttrs (contract/plan_types.h), which also
   fills in the op's ODS defaults (addOpDefaults below), so a kernel reads every
   attribute with the plain getters and states no default of its own. Names
   match the MLIR op attributes. */
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lmrt::kernels {

/* Step attributes, decoded from the plan. Names match the MLIR op attributes. */
class Attrs {
public:
  using Value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
  void set(const std::string &name, Value v) { values_[name] = std::move(v); }
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  /* Getters throw lmrt::Error naming the attribute when it is missing or of another kind. */
  int64_t getInt(const std::string &name) const;
  double getFloat(const std::string &name) const;  // accepts an int too
  bool getBool(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  const std::vector<int64_t> &getInts(const std::string &name) const;
  /* Raw constant bytes travel as a string. */
  const std::string &getData(const std::string &name) const { return getString(name); }

private:
  std::map<std::string, Value> values_;
};

/* Gives every attribute of op `op` that has an ODS default (contract/op_table.h)
   and that `attrs` lacks its default; an op the table does not list gets none.
   decodeAttrs applies it to every plan step, and tests to the Attrs they build,
   so that a missing attribute after it means a plan/ODS mismatch. */
void addOpDefaults(std::string_view op, Attrs &attrs);

}  // namespace lmrt::kernels
