/* Implements: nccl_communicator.h. libnccl.so.2 is opened (dlopen) when the first
   communicator is made, not linked: a one-GPU run never needs it, and lmrt's CUDA
   plugin loads on machines without NCCL. The calls go through pointers typed from
   nccl.h, so the compiler checks every signature. */
#include "runtime/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <type_traits>

namespace lmrt::comm {
namespace {

/* The NCCL functions lmrt calls, from libnccl.so.2. */
struct Nccl {
  decltype(&ncclGetUniqueId) getUniqueId;
  decltype(&ncclCommInitRank) commInitRank;
  decltype(&ncclCommDestroy) commDestroy;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclReduceScatter) reduceScatter;
  decltype(&ncclAllGather) allGather;
  decltype(&ncclGetErrorString) getErrorString;
  decltype(&ncclGetLastError) getLastError;
  decltype(&ncclGetVersion) getVersion;

  static const Nccl &get() {
    static const Nccl n = load();
    return n;
  }

private:
  static Nccl load() {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      fail("collectives across GPUs need NCCL, and libnccl.so.2 could not be loaded (%s); install NCCL "
           "(Debian: libnccl2) or put its folder on LD_LIBRARY_PATH", dlerror());
    auto sym = [lib](auto &slot, const char *name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(lib, name));
      if (!slot) fail("libnccl.so.2 has no '%s' (NCCL 2.10 or newer is needed for ncclAvg)", name);
    };
    Nccl n{};
    sym(n.getUniqueId, "ncclGetUniqueId");
    sym(n.commInitRank, "ncclCommInitRank");
    sym(n.commDestroy, "ncclCommDestroy");
    sym(n.allReduce, "ncclAllReduce");
    sym(n.reduceScatter, "ncclReduceScatter");
    sym(n.allGather, "ncclAllGather");
    sym(n.getErrorString, "ncclGetErrorString");
    sym(n.getLastError, "ncclGetLastError");
    sym(n.getVersion, "ncclGetVersion");
    return n;
  }
};

/* NCCL's type for `dtype`. The sums take f32 or f64 only (the rank-order sums of
   communicator.h accumulate in them); a gather (`summed` false) moves bf16 and f16 too:
   ZeRO-3's parameter slices under --precision bf16. */
ncclDataType_t ncclType(DType dtype, const std::string &what, bool summed = true) {
  if (dtype == DType::F32) return ncclFloat32;
  if (dtype == DType::F64) return ncclFloat64;
  if (!summed && dtype == DType::BF16) return ncclBfloat16;
  if (!summed && dtype == DType::F16) return ncclFloat16;
  if (summed)
    fail("%s: collectives sum f32 or f64 tensors, got %s (bf16 and f16 are only gathered)", what.c_str(),
         dtypeName(dtype));
  fail("%s: collectives take f32, f64, bf16 or f16 tensors, got %s", what.c_str(), dtypeName(dtype));
}

ncclRedOp_t ncclOp(Reduction r) { return r == Reduction::Mean ? ncclAvg : ncclSum; }

class NcclCommunicator final : public DeviceCommunicator {
public:
  explicit NcclCommunicator(Communicator &host) : nccl_(Nccl::get()), rank_(host.rank()), size_(host.size()) {
    ncclUniqueId id{};
    if (rank_ == 0) check(nccl_.getUniqueId(&id), "ncclGetUniqueId", "the NCCL bootstrap");
    host.broadcast(&id, sizeof id, 0, "the NCCL bootstrap (unique id)");
    check(nccl_.commInitRank(&comm_, size_, id, rank_), "ncclCommInitRank", "the NCCL bootstrap");
  }
  std::string describe() const override {
    int v = 0;
    nccl_.getVersion(&v);  // NCCL >= 2.9: major * 10000 + minor * 100 + patch
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
           ", rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  }
  ~NcclCommunicator() override {
    if (comm_) nccl_.commDestroy(comm_);
  }

  void allReduce(const void *in, void *out, int64_t count, DType dtype, Reduction r, void *stream,
                 const std::string &what) override {
    check(nccl_.allReduce(in, out, (size_t)count, ncclType(dtype, what), ncclOp(r), comm_, (cudaStream_t)stream),
          "ncclAllReduce", what);
  }
  void reduceScatter(const void *in, void *out, int64_t count, DType dtype, Reduction r, void *stream,
                     const std::string &what) override {
    check(nccl_.reduceScatter(in, out, (size_t)count, ncclType(dtype, what), ncclOp(r), comm_,
                              (cudaStream_t)stream),
          "ncclReduceScatter", what);
  }
  void allGather(const void *in, void *out, int64_t count, DType dtype, void *stream,
                 const std::string &what) override {
    check(nccl_.allGather(in, out, (size_t)count, ncclType(dtype, what, /*summed=*/false), comm_,
                          (cudaStream_t)stream),
          "ncclAllGather", what);
  }

private:
  void check(ncclResult_t rc, const char *call, const std::string &what) const {
    if (rc == ncclSuccess) return;
    fail("rank %d of %d: %s in %s failed: %s (%s)", rank_, size_, call, what.c_str(), nccl_.getErrorString(rc),
         nccl_.getLastError(comm_));
  }

  const Nccl &nccl_;
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceCommunicator> makeNcclCommunicator(Communicator &host) {
  return std::make_unique<NcclCommunicator>(host);
}

}  // namespace lmrt::comm
