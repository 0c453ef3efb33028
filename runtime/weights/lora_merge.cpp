/* Implements: merging LoRA adapters into their weights (lora_merge.h). */
#include "runtime/weights/lora_merge.h"

#include <cstring>
#include <set>

#include "contract/lora.h"
#include "runtime/exec/optimizer.h"

namespace lmrt {
namespace {

TensorType paramType(const plan::Param &p) {
  TensorType t;
  t.dtype = p.type().dtype() == plan::F64 ? DType::F64 : DType::F32;
  for (int64_t d : p.type().shape()) t.shape.push_back(d);
  return t;
}

template <typename T>
std::string merged(const SafetensorsTensor &w, const SafetensorsTensor &a, const SafetensorsTensor &b, double s) {
  const int64_t in = w.type.shape[0], out = w.type.shape[1], rank = a.type.shape[1];
  std::string bytes(w.bytes);
  std::vector<T> av(a.type.numel()), bv(b.type.numel());
  std::memcpy(av.data(), a.bytes.data(), a.bytes.size());  // the views need not be aligned
  std::memcpy(bv.data(), b.bytes.data(), b.bytes.size());
  std::vector<T> wv(w.type.numel());
  std::memcpy(wv.data(), bytes.data(), bytes.size());
  lora::mergeInto(wv.data(), av.data(), bv.data(), in, out, rank, s);
  std::memcpy(bytes.data(), wv.data(), bytes.size());
  return bytes;
}

}  // namespace

int mergeLoraAdapters(const plan::Plan &plan, SafetensorsFile &file, const std::string &path,
                      std::map<std::string, std::string> &storage) {
  auto meta = file.metadata.find("format");
  const bool checkpoint = meta != file.metadata.end() && meta->second == "lmc-checkpoint";
  std::set<std::string> params;
  for (const plan::Param &p : plan.params()) {
    params.insert(p.name());
    auto it = file.tensors.find(p.name());
    if (it == file.tensors.end())
      fail("weights '%s': no tensor for parameter '%s' %s", path.c_str(), p.name().c_str(), paramType(p).str().c_str());
    if (it->second.type.shape != paramType(p).shape || it->second.type.dtype == DType::I32)
      fail("weights '%s': tensor '%s' is %s, the plan's parameter is %s", path.c_str(), p.name().c_str(),
           it->second.type.str().c_str(), paramType(p).str().c_str());
  }
  for (auto it = file.tensors.begin(); it != file.tensors.end();) {
    if (checkpoint && isOptimizerStateName(it->first)) {
      it = file.tensors.erase(it);
      continue;
    }
    if (!params.count(it->first))
      fail("weights '%s': tensor '%s' is not a parameter of this plan (weights of another model?)", path.c_str(),
           it->first.c_str());
    ++it;
  }
  const plan::Lora &l = plan.train().lora();
  const double s = l.targets_size() ? lora::scale(l.alpha(), l.rank()) : 0.0;
  for (const std::string &target : l.targets()) {
    const SafetensorsTensor &w = file.tensors.at(target), &a = file.tensors.at(lora::aName(target)),
                            &b = file.tensors.at(lora::bName(target));
    if (a.type.dtype != w.type.dtype || b.type.dtype != w.type.dtype)
      fail("weights '%s': '%s' and its adapters have different types (%s, %s, %s)", path.c_str(), target.c_str(),
           w.type.str().c_str(), a.type.str().c_str(), b.type.str().c_str());
    std::string &bytes = storage[target];
    bytes = w.type.dtype == DType::F64 ? merged<double>(w, a, b, s) : merged<float>(w, a, b, s);
    file.tensors[target].bytes = bytes;
  }
  for (const std::string &target : l.targets()) {
    file.tensors.erase(lora::aName(target));
    file.tensors.erase(lora::bName(target));
  }
  std::vector<std::string> order;
  for (const std::string &name : file.order)
    if (file.tensors.count(name)) order.push_back(name);
  file.order = order;
  return l.targets_size();
}

}  // namespace lmrt
