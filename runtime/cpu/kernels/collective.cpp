/* Implements: the CPU kernels of the collectives lm.all_reduce, lm.reduce_scatter
   and lm.all_gather, and of lm.axis_index (the rank's place in the same groups), on the process's communicator (runtime/comm/communicator.h:
   Open MPI under mpirun or srun, a copy in a single process). A gather or scatter
   along dimension d of a row-major [outer, n, inner] tensor moves `outer` blocks
   of n x inner elements per rank, so the kernels put each rank's part in one
   contiguous piece first and back after (not needed for outer = 1). */
#include "runtime/cpu/kernels/kernel_common.h"

#include <cstdio>
#include <cstring>

#include "runtime/comm/communicator.h"

namespace lmrt::kernels::detail {
namespace {

std::string checkCollective(const char *op, const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                            const Attrs &attrs) {
  return guardCheck(op, in, out, 1, 1, [&]() -> std::string {
    // A gather only moves elements: bf16 and f16 too (ZeRO-3's parameter slices under
    // --precision bf16). The sums stay f32 or f64 (comm::reduceInRankOrder).
    const bool gather = std::string(op) == "all_gather";
    const DType t = in[0].dtype;
    if (gather && t != DType::F32 && t != DType::F64 && t != DType::BF16 && t != DType::F16)
      return std::string(op) + ": x " + in[0].str() + " must be f32, f64, bf16 or f16";
    if (!gather)
      if (std::string bad = expectFloat(op, "x", in[0]); !bad.empty()) return bad;
    std::string err;
    int64_t dim = std::string(op) == "all_reduce" ? 0 : attrs.getInt("dim");
    auto shape = shapes::collective(op, in[0].shape, attrs.getInt("mesh_axis"), attrs.getInt("group_size"), dim, err);
    if (!shape) return err;
    return expectType(op, "out", out[0], in[0].dtype, *shape);
  });
}

comm::Communicator &groupOf(const char *op, const KernelCall &call) {
  return comm::collectiveGroup(op, call.attrs.getInt("mesh_axis"), call.attrs.getInt("group_size"));
}

void runAllReduce(const KernelCall &call) {
  comm::Communicator &c = groupOf("all_reduce", call);
  const TensorRef &x = call.in[0];
  c.allReduce(x.data, call.out[0].data, x.numel(), x.type.dtype,
              call.attrs.getBool("mean") ? comm::Reduction::Mean : comm::Reduction::Sum,
              "all_reduce of " + x.type.str());
}

void runReduceScatter(const KernelCall &call) {
  comm::Communicator &c = groupOf("reduce_scatter", call);
  const TensorRef &x = call.in[0], &y = call.out[0];
  int64_t outer, n, inner;
  comm::splitAroundDim(y.shape(), call.attrs.getInt("dim"), outer, n, inner);  // n: the slice each rank keeps
  const size_t eb = dtypeSize(x.type.dtype), block = (size_t)(n * inner) * eb;
  const int group = c.size();
  if (outer == 1) {  // already rank-major (a leading dimension: ZeRO-3's flat gradients), no copy
    c.reduceScatter(x.data, y.data, y.numel(), x.type.dtype, comm::Reduction::Sum, "reduce_scatter of " + x.type.str());
    return;
  }
  // Rank q's slice of every outer block, one after another: [group][outer][n][inner].
  std::vector<char> send((size_t)(group * outer) * block);
  const char *src = static_cast<const char *>(x.data);
  for (int q = 0; q < group; ++q)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(send.data() + ((size_t)q * outer + o) * block, src + ((size_t)o * group + q) * block, block);
  c.reduceScatter(send.data(), y.data, y.numel(), x.type.dtype, comm::Reduction::Sum,
                  "reduce_scatter of " + x.type.str());
}

void runAllGather(const KernelCall &call) {
  comm::Communicator &c = groupOf("all_gather", call);
  const TensorRef &x = call.in[0], &y = call.out[0];
  int64_t outer, n, inner;
  comm::splitAroundDim(x.shape(), call.attrs.getInt("dim"), outer, n, inner);
  const size_t eb = dtypeSize(x.type.dtype), block = (size_t)(n * inner) * eb;
  const int group = c.size();
  if (outer == 1) {  // rank-major already (a leading dimension: ZeRO-3's slices), straight into y
    c.allGather(x.data, y.data, x.numel(), x.type.dtype, "all_gather of " + x.type.str());
    return;
  }
  std::vector<char> gathered((size_t)(group * outer) * block);  // [group][outer][n][inner]
  c.allGather(x.data, gathered.data(), x.numel(), x.type.dtype, "all_gather of " + x.type.str());
  char *dst = static_cast<char *>(y.data);
  for (int q = 0; q < group; ++q)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + ((size_t)o * group + q) * block, gathered.data() + ((size_t)q * outer + o) * block, block);
}

std::string checkAxisIndex(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("axis_index", in, out, 0, 1, [&]() -> std::string {
    std::string err;
    auto shape = shapes::axisIndex(attrs.getInt("mesh_axis"), attrs.getInt("group_size"), err);
    if (!shape) return err;
    return expectType("axis_index", "result", out[0], out[0].dtype, *shape);
  });
}

/* The group's rank order is the collectives' (world order within the axis's
   group), so rank q here is the rank whose slice an all_gather puts q-th. */
void runAxisIndex(const KernelCall &call) {
  const int q = groupOf("axis_index", call).rank();
  const TensorRef &y = call.out[0];
  if (y.type.dtype == DType::I32) {
    *y.as<int32_t>() = q;
    return;
  }
  dispatchFloat(y.type.dtype, [&](auto t) {
    using T = decltype(t);
    *y.as<T>() = (T)q;
  });
}

}  // namespace

void addCollectiveKernels(std::vector<KernelDef> &k) {
  k.push_back({"all_reduce", 1, 1,
               [](const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &a) {
                 return checkCollective("all_reduce", in, out, a);
               },
               runAllReduce});
  k.push_back({"reduce_scatter", 1, 1,
               [](const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &a) {
                 return checkCollective("reduce_scatter", in, out, a);
               },
               runReduceScatter});
  k.push_back({"all_gather", 1, 1,
               [](const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &a) {
                 return checkCollective("all_gather", in, out, a);
               },
               runAllGather});
  k.push_back({"axis_index", 0, 1, checkAxisIndex, runAxisIndex});
}

}  // namespace lmrt::kernels::detail

namespace lmrt::kernels {

void runAllReduceBucket(const std::vector<KernelCall> &calls) {
  if (calls.size() == 1) return detail::runAllReduce(calls[0]);
  comm::Communicator &c = detail::groupOf("all_reduce", calls[0]);
  const DType dtype = calls[0].in[0].type.dtype;
  const size_t eb = dtypeSize(dtype);
  int64_t total = 0;
  for (const KernelCall &call : calls) total += call.in[0].numel();
  // Kept between steps: one collective at a time uses it (the overlapped ones run one
  // after another on the main thread's fiber, runtime/comm/work_fibers.h).
  static thread_local std::vector<char> staging;
  staging.resize((size_t)total * eb);
  size_t at = 0;
  for (const KernelCall &call : calls) {
    std::memcpy(staging.data() + at, call.in[0].data, (size_t)call.in[0].numel() * eb);
    at += (size_t)call.in[0].numel() * eb;
  }
  char what[96];
  std::snprintf(what, sizeof what, "all_reduce of a bucket of %zu tensors (%.1f MiB)", calls.size(),
                (double)at / (1 << 20));
  c.allReduce(staging.data(), staging.data(), total, dtype,
              calls[0].attrs.getBool("mean") ? comm::Reduction::Mean : comm::Reduction::Sum, what);
  at = 0;
  for (const KernelCall &call : calls) {
    std::memcpy(call.out[0].data, staging.data() + at, (size_t)call.out[0].numel() * eb);
    at += (size_t)call.out[0].numel() * eb;
  }
}

void runReduceScatterBucket(const std::vector<KernelCall> &calls) {
  if (calls.size() == 1) return detail::runReduceScatter(calls[0]);
  comm::Communicator &c = detail::groupOf("reduce_scatter", calls[0]);
  const DType dtype = calls[0].in[0].type.dtype;
  const size_t eb = dtypeSize(dtype), group = (size_t)c.size();
  size_t total = 0;  // the bytes of the slices each rank keeps
  for (const KernelCall &call : calls) total += (size_t)call.out[0].numel() * eb;
  // [group][the slices end to end], then the sums; kept between steps, as the all-reduce's.
  static thread_local std::vector<char> staging;
  staging.resize((group + 1) * total);
  char *sums = staging.data() + group * total;
  size_t at = 0;
  for (const KernelCall &call : calls) {
    const size_t slice = (size_t)call.out[0].numel() * eb;  // dimension 0: rank q's slice is the q-th
    for (size_t q = 0; q < group; ++q)
      std::memcpy(staging.data() + q * total + at, static_cast<const char *>(call.in[0].data) + q * slice, slice);
    at += slice;
  }
  char what[104];
  std::snprintf(what, sizeof what, "reduce_scatter of a bucket of %zu tensors (%.1f MiB)", calls.size(),
                (double)(group * total) / (1 << 20));
  c.reduceScatter(staging.data(), sums, (int64_t)(total / eb), dtype, comm::Reduction::Sum, what);
  at = 0;
  for (const KernelCall &call : calls) {
    std::memcpy(call.out[0].data, sums + at, (size_t)call.out[0].numel() * eb);
    at += (size_t)call.out[0].numel() * eb;
  }
}

}  // namespace lmrt::kernels
