/* Implements: the CUDA kernels of lm.all_reduce, lm.reduce_scatter and
   lm.all_gather, and lm.axis_index (the rank's place in the host group, copied
   to the device). With one rank each is a device copy; with several, NCCL
   (runtime/comm/nccl_communicator.h): one communicator per mesh axis, joined on first
   use over that axis's host group (MPI under mpirun or srun). LMRT_NCCL_GROUPS_OF_ONE=1 sends the
   collectives of a group of one through NCCL too: the only way a machine with one
   GPU runs NCCL (the 1-rank NCCL check of docs/gpu-check.md). A gather or scatter along dimension d
   of [outer, n, inner] rearranges rank blocks with strided 2-D copies on the
   stream, through the step's scratch. */
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>

#include "base/env.h"
#include "contract/contract.h"
#include "runtime/comm/communicator.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/ops.h"
#ifdef LMC_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#endif

namespace lmrt::cuda::detail {
namespace {

comm::Communicator &hostGroup(const char *op, const OpCall &call) {
  return comm::collectiveGroup(op, call.attrs.getInt("mesh_axis"), call.attrs.getInt("group_size"));
}

/* A group of one copies, unless LMRT_NCCL_GROUPS_OF_ONE=1 sends it through NCCL. */
bool copiesAlone(int group) {
  static const bool forced = envSwitch("LMRT_NCCL_GROUPS_OF_ONE");
  return group == 1 && !forced;
}

#ifdef LMC_HAVE_NCCL
/* One NCCL communicator per mesh axis, made on first use over that axis's host group
   (comm::meshGroup: the data group, or the tensor group, of this rank; rank 0 of the
   group makes the unique id and broadcasts it over the group), so that a collective
   over the tensor axis of a data x tensor mesh reaches its tensor group alone. Every
   rank of a group reaches the group's first collective in the same program order (the
   plan is the same on every rank), where they join it together. Two axes whose groups
   are the same ranks (a mesh with one axis) still get one communicator each: NCCL runs
   several on one device, and a 1-rank run with collectives on both axes
   (LMRT_NCCL_GROUPS_OF_ONE=1, docs/gpu-check.md) tests that. World rank 0 says on
   stderr which NCCL joined each. */
comm::DeviceCommunicator &nccl(int64_t meshAxis, comm::Communicator &group) {
  static std::unique_ptr<comm::DeviceCommunicator> made[2];
  std::unique_ptr<comm::DeviceCommunicator> &c = made[meshAxis == 1 ? 1 : 0];
  if (!c) {
    c = comm::makeNcclCommunicator(group);
    if (comm::world().rank() == 0)
      std::fprintf(stderr, "collectives: %s (the %s axis)\n", c->describe().c_str(),
                   meshAxis == 1 ? "tensor" : "data");
  }
  return *c;
}
#else
[[noreturn]] void noNccl(const char *op) {
  fail("%s across ranks needs NCCL, and this lmrt's CUDA backend was built without it", op);
}
#endif

void copy(const OpCall &call) {
  if (call.in[0].data != call.out[0].data)
    CUDA_CHECK(cudaMemcpyAsync(call.out[0].data, call.in[0].data, (size_t)call.in[0].type.bytes(),
                               cudaMemcpyDeviceToDevice, call.stream));
}

void runAllReduce(const OpCall &call) {
  comm::Communicator &group = hostGroup("all_reduce", call);
  if (copiesAlone(group.size())) return copy(call);
#ifdef LMC_HAVE_NCCL
  const DevTensor &x = call.in[0];
  nccl(call.attrs.getInt("mesh_axis"), group)
      .allReduce(x.data, call.out[0].data, x.numel(), x.type.dtype,
                 call.attrs.getBool("mean") ? comm::Reduction::Mean : comm::Reduction::Sum, call.stream,
                 "all_reduce of " + x.type.str());
#else
  noNccl("all_reduce");
#endif
}

void runReduceScatter(const OpCall &call) {
  comm::Communicator &host = hostGroup("reduce_scatter", call);
  const int group = host.size();
  if (copiesAlone(group)) return copy(call);
#ifdef LMC_HAVE_NCCL
  const DevTensor &x = call.in[0], &y = call.out[0];
  int64_t outer, n, inner;
  comm::splitAroundDim(y.shape(), call.attrs.getInt("dim"), outer, n, inner);
  const size_t block = (size_t)(n * inner) * dtypeSize(x.type.dtype);
  char *send = static_cast<char *>(call.scratch);  // [group][outer][block]
  for (int q = 0; q < group; ++q)
    CUDA_CHECK(cudaMemcpy2DAsync(send + (size_t)q * outer * block, block, x.as<char>() + (size_t)q * block,
                                 (size_t)group * block, block, (size_t)outer, cudaMemcpyDeviceToDevice, call.stream));
  nccl(call.attrs.getInt("mesh_axis"), host)
      .reduceScatter(send, y.data, y.numel(), x.type.dtype, comm::Reduction::Sum, call.stream,
                     "reduce_scatter of " + x.type.str());
#else
  (void)group;
  noNccl("reduce_scatter");
#endif
}

void runAllGather(const OpCall &call) {
  comm::Communicator &host = hostGroup("all_gather", call);
  const int group = host.size();
  if (copiesAlone(group)) return copy(call);
#ifdef LMC_HAVE_NCCL
  const DevTensor &x = call.in[0], &y = call.out[0];
  int64_t outer, n, inner;
  comm::splitAroundDim(x.shape(), call.attrs.getInt("dim"), outer, n, inner);
  const size_t block = (size_t)(n * inner) * dtypeSize(x.type.dtype);
  char *gathered = static_cast<char *>(call.scratch);  // [group][outer][block]
  nccl(call.attrs.getInt("mesh_axis"), host)
      .allGather(x.data, gathered, x.numel(), x.type.dtype, call.stream, "all_gather of " + x.type.str());
  for (int q = 0; q < group; ++q)
    CUDA_CHECK(cudaMemcpy2DAsync(y.as<char>() + (size_t)q * block, (size_t)group * block,
                                 gathered + (size_t)q * outer * block, block, block, (size_t)outer,
                                 cudaMemcpyDeviceToDevice, call.stream));
#else
  (void)group;
  noNccl("all_gather");
#endif
}

}  // namespace

void allGatherZeroSlices(void *whole, int64_t numel, DType dtype, void *staging, cudaStream_t stream,
                         const std::string &what) {
  comm::Communicator &group = comm::meshGroup(0);
  const int ranks = group.size(), rank = group.rank();
  if (numel == 0 || ranks == 1) return;
#ifdef LMC_HAVE_NCCL
  const int64_t chunk = zeroShard(numel, ranks, 0).size();
  const ShardRange mine = zeroShard(numel, ranks, rank);
  const size_t eb = dtypeSize(dtype);
  char *w = static_cast<char *>(whole);
  comm::DeviceCommunicator &c = nccl(0, group);
  if (chunk * ranks == numel) {  // NCCL's in-place form: the send buffer is the rank's block of the receive one
    c.allGather(w + (size_t)(rank * chunk) * eb, w, chunk, dtype, stream, what);
    return;
  }
  char *slot = static_cast<char *>(staging) + (size_t)(rank * chunk) * eb;
  CUDA_CHECK(cudaMemsetAsync(slot, 0, (size_t)chunk * eb, stream));
  if (mine.size() > 0)
    CUDA_CHECK(cudaMemcpyAsync(slot, w + (size_t)mine.begin * eb, (size_t)mine.size() * eb, cudaMemcpyDeviceToDevice,
                               stream));
  c.allGather(slot, staging, chunk, dtype, stream, what);
  CUDA_CHECK(cudaMemcpyAsync(w, staging, (size_t)numel * eb, cudaMemcpyDeviceToDevice, stream));
#else
  (void)whole, (void)dtype, (void)staging, (void)stream, (void)what, (void)rank;
  noNccl("ZeRO's all_gather of the parameters");
#endif
}

namespace {

/* The value is on this host frame, so the copy completes before returning
   (one rank-0 tensor, at most once per program run). */
void runAxisIndex(const OpCall &call) {
  const int q = comm::collectiveGroup("axis_index", call.attrs.getInt("mesh_axis"), call.attrs.getInt("group_size")).rank();
  const DevTensor &y = call.out[0];
  union {
    int32_t i;
    float f;
    double d;
  } v;
  if (y.type.dtype == DType::I32)
    v.i = q;
  else if (y.type.dtype == DType::F64)
    v.d = q;
  else
    v.f = (float)q;
  CUDA_CHECK(cudaMemcpyAsync(y.data, &v, (size_t)y.type.bytes(), cudaMemcpyHostToDevice, call.stream));
  CUDA_CHECK(cudaStreamSynchronize(call.stream));
}

/* reduce_scatter stages its input, all_gather its output, in rank-major order. */
size_t inputScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &) {
  return (size_t)in[0].bytes();
}
size_t outputScratch(const std::vector<TensorType> &, const std::vector<TensorType> &out, const kernels::Attrs &) {
  return (size_t)out[0].bytes();
}

}  // namespace

void addCollectiveKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"all_reduce", runAllReduce, noScratch});
  k.push_back({"reduce_scatter", runReduceScatter, inputScratch});
  // A gather moves bf16 and f16 too (ZeRO-3's parameter slices under --precision bf16).
  k.push_back({"all_gather", runAllGather, outputScratch, /*reducedPrecision=*/true});
  k.push_back({"axis_index", runAxisIndex, noScratch});
}

}  // namespace lmrt::cuda::detail
