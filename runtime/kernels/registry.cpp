/* Implements: step attribute getters (with errors naming the attribute) and the
   table of CPU kernels, one entry per lm op, gathered from the op-family files. */
#include "runtime/kernels/registry.h"

#include "runtime/kernels/kernel_common.h"
#include "runtime/plan/op_table.h"

namespace lmrt::kernels {

// ----------------------------------------------------------------------------
// Attrs

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

// ----------------------------------------------------------------------------
// Kernel table

const std::vector<KernelDef> &allKernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> k;
    detail::addMatmulKernels(k);
    detail::addElementwiseKernels(k);
    detail::addGeluKernels(k);
    detail::addUnaryKernels(k);
    detail::addReduceKernels(k);
    detail::addLayerNormKernels(k);
    detail::addAttentionKernels(k);
    detail::addSoftmaxKernels(k);
    detail::addEmbeddingKernels(k);
    detail::addShapeKernels(k);
    detail::addSampleKernels(k);
    detail::addDecodeKernels(k);
    return k;
  }();
  return table;
}

std::string compareWithOpTable(const std::vector<KernelDef> &kernels) {
  std::string problems;
  auto report = [&](const std::string &line) { problems += line + "\n"; };
  for (const ops::OpInfo &op : ops::allOps()) {
    int found = 0;
    for (const KernelDef &k : kernels) {
      if (op.name != std::string_view(k.op)) continue;
      ++found;
      if (k.numInputs != op.numInputs || k.numOutputs != op.numOutputs)
        report(std::string("kernel '") + k.op + "' takes " + std::to_string(k.numInputs) + " inputs and " +
               std::to_string(k.numOutputs) + " outputs, the op takes " + std::to_string(op.numInputs) + " and " +
               std::to_string(op.numOutputs));
    }
    if (found == 0) report(std::string("op '") + op.name + "' has no kernel");
    if (found > 1) report(std::string("op '") + op.name + "' has " + std::to_string(found) + " kernels");
  }
  for (const KernelDef &k : kernels)
    if (!ops::findOp(k.op)) report(std::string("kernel '") + k.op + "' is not an op of the plan's op table");
  return problems;
}

const KernelDef *findKernel(std::string_view op) {
  for (const KernelDef &k : allKernels())
    if (op == k.op) return &k;
  return nullptr;
}

}  // namespace lmrt::kernels
