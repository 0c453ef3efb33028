//===- GradientBuckets.cpp - the gradients' buckets -------------*- C++ -*-===//
//
// Implements GradientBuckets.h.
//
//===----------------------------------------------------------------------===//

#include "passes/GradientBuckets.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::lm;

namespace {

/// PyTorch DDP's bucket_cap_mb.
constexpr double kDefaultBucketMb = 25;

/// Bytes of a ranked tensor (0 for anything else: it never closes a bucket alone).
int64_t tensorBytes(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * (int64_t)((type.getElementTypeBitWidth() + 7) / 8);
}

} // namespace

std::vector<Gradient> mlir::lm::gradientsInBackwardOrder(func::FuncOp f, func::ReturnOp ret) {
  std::vector<Gradient> grads;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    if (!f.getResultAttr(i, "lm.grad_of"))
      continue;
    Value v = ret.getOperand(i);
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() != ret->getBlock())
      def = nullptr;
    grads.push_back({i, def, tensorBytes(v.getType())});
  }
  auto position = [&](const Gradient &g) {
    return g.def ? std::make_pair(g.def, (unsigned)cast<OpResult>(ret.getOperand(g.result)).getResultNumber())
                 : std::make_pair(ret.getOperation(), 0u);
  };
  llvm::stable_sort(grads, [&](const Gradient &a, const Gradient &b) {
    auto pa = position(a), pb = position(b);
    if (pa.first != pb.first)
      return pa.first->isBeforeInBlock(pb.first);
    return pa.second < pb.second;
  });
  return grads;
}

std::vector<std::vector<Gradient>> mlir::lm::gradientBuckets(const std::vector<Gradient> &grads, int64_t capBytes) {
  const int64_t cap = std::max<int64_t>(capBytes, 1);
  std::vector<std::vector<Gradient>> out;
  int64_t bytes = 0;
  for (const Gradient &g : grads) {
    if (out.empty() || ((bytes >= cap || bytes + g.bytes > cap) && out.back().back().def != g.def)) {
      out.emplace_back();
      bytes = 0;
    }
    out.back().push_back(g);
    bytes += g.bytes;
  }
  return out;
}

Operation *mlir::lm::bucketEnd(const std::vector<Gradient> &bucket) {
  Operation *last = nullptr;
  for (const Gradient &g : bucket) {
    if (!g.def)
      return nullptr; // one is computed before the step's body: the bucket goes before the return
    if (!last || last->isBeforeInBlock(g.def))
      last = g.def;
  }
  return last;
}

FailureOr<int64_t> mlir::lm::bucketBytes(ModuleOp module, double optionMb, StringRef pass) {
  double mib = optionMb;
  if (mib < 0) {
    mib = kDefaultBucketMb;
    if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
      if (auto v = dyn_cast_or_null<FloatAttr>(mesh.get("bucket_mb")))
        mib = v.getValueAsDouble();
  }
  if (!(mib >= 0 && mib <= double(int64_t(1) << 20))) {
    module.emitError() << "-" << pass << ": bucket_mb must be in [0, " << (int64_t(1) << 20) << "] MiB, got " << mib;
    return failure();
  }
  return (int64_t)(mib * double(1 << 20));
}
