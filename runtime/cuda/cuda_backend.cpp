/* Implements: the CUDA backend (cuda_backend.h) and its provider, which the
   plugin entry point (plugin.cpp) hands to lmrt. */
#include "runtime/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "contract/op_table.h"
#include "contract/plan_types.h"
#include "contract/zero3.h"
#include "runtime/comm/communicator.h"
#include "runtime/cuda/collective_stream.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/generated.h"
#include "runtime/cuda/ops.h"
#include "runtime/cuda/optimizer.h"
#include "runtime/cuda/optimizer_step.h"
#include "runtime/cuda/zero_chunks.h"
#include "runtime/exec/backend_registry.h"
#include "runtime/exec/held_state.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"

namespace lmrt::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Step {
  const StepBinding *binding = nullptr;
  const CudaKernelDef *def = nullptr;  // a library kernel, or a generated one (binding->kernel >= 0)
};

struct Program {
  const ProgramBinding *binding = nullptr;
  std::vector<DevTensor> buffers;  // every buffer's device address and type, fixed for the backend
  std::vector<Step> steps;
};

/* Host copies of device tensors, for the diagnostics and the outputs. */
struct HostCopy {
  std::vector<double> words;  // doubles: f64 data is aligned
  TensorRef ref;
};

class CudaBackend final : public Backend, public HeldOptimizerState {
public:
  CudaBackend(Session &session, const DeviceOptions &options);
  ~CudaBackend() override;

  std::string describe() const override { return device_.str() + (options_.tf32 ? ", TF32 GEMMs" : ""); }
  std::string describeSharding() const override;
  int64_t deviceBytes() const override;
  void uploadParams() override;
  void downloadParams(bool grads) override;
  void run(const std::string &program, const std::map<std::string, TensorRef> &inputs) override;
  TensorRef output(const std::string &program, const std::string &name) override;
  void accumulateGradients(int micro, int count) override;
  double gradientNorm() override;
  void optimizerStep(double lr, double gradScale) override;
  int64_t optimizerUpdates() const override { return updates_; }
  std::vector<NamedTensor> optimizerState() override;
  std::vector<NamedTensor> beginRestore(int64_t updates) override;
  void finishRestore() override;
  std::vector<HeldTensor> heldOptimizerState() override;  // HeldOptimizerState
  std::vector<HeldTensor> beginHeldRestore(int64_t updates) override;
  void setProfile(OpProfile *profile) override { profile_ = profile; }
  void setNonFiniteCheck(NonFiniteValue *check) override { nonFinite_ = check; }
  void setStepObserver(StepObserver observer) override { observer_ = std::move(observer); }

private:
  Program &program(const std::string &name);
  /* From normBlocks_ (the whole gradients): each gradient's sum of squares, its blocks' sums
     added in block order. */
  std::vector<double> gradSumSquares();
  double sliceGradNorm();  // ZeRO stages 2 and 3
  /* Waits for the stream; a fault of an earlier kernel surfaces here, with a hint. */
  void sync(const char *what);
  /* Copies a device tensor to the host (after the stream's work so far). */
  TensorRef toHost(const DevTensor &t, HostCopy &copy);
  /* The moments as host tensors, in checkpoint order, from host_ (downloaded or to upload). */
  std::vector<NamedTensor> momentTensors();
  void *paramAt(const DeviceBuffer &flat, int index) const {
    return flat.bytes() + paramOffset_[index] * dtypeSize(paramType_);
  }
  /* Parameter `index`'s gradient in grads_: the whole gradient, or from ZeRO stage 2 on this
     rank's slice of it (ParamState.gradType). */
  void *gradAt(int index) const { return grads_.bytes() + gradOffset_[index] * dtypeSize(paramType_); }
  /* Parameter `index`'s optimizer state in m_ or v_: the whole parameter's, or under ZeRO
     this rank's slice of it (zero_.slices[index]). */
  void *stateAt(const DeviceBuffer &state, int index) const {
    return state.bytes() + zero_.stateOffset[index] * dtypeSize(paramType_);
  }
  void launchUpdate(double lr, double gradScale);
  /* ZeRO: every state slot of every parameter, this rank's slices, in hostHeld_ (zeroed). */
  std::vector<HeldTensor> heldTensors();

  Session &session_;
  const BoundPlan &bound_;
  DeviceOptions options_;
  DType lowPrecision_ = DType::F32;  // OpCall::lowPrecision: the plan's mixed precision
  DeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CollectiveStream> collectives_;  // LMRT_CUDA_COLLECTIVE_STREAM=1: all_reduce's stream
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<GeneratedModule> generated_;
  DType paramType_ = DType::F32;
  std::vector<int64_t> paramOffset_;  // elements into the flat storage, per parameter
  int64_t paramElems_ = 0;
  // The gradients' flat layout: the parameters' (ParamState.gradType is the type), or under
  // ZeRO stage 2 this rank's padded slices only (contract/zero3.h).
  std::vector<int64_t> gradOffset_;
  int64_t gradElems_ = 0;
  bool slicedGradsAlone_ = false;  // a stage-2 plan in a process that is not one of its data ranks
  DeviceBuffer arena_, params_, grads_, m_, v_, acc_, constants_, scratch_, chunks_, slices_;
  // Tensor parallelism (plan mesh tensor > 1): per parameter, whether this rank holds a slice of
  // it (plan Param.sharding); empty otherwise. The gradient norm's blocks (zero_chunks.h's
  // normBlocks) of the whole gradients, parameter by parameter, with each parameter's first
  // block, or under ZeRO stages 2 and 3 (sliceNorm_) the blocks this rank owns.
  std::vector<bool> tensorSplit_;
  std::vector<int64_t> normBlockStart_;
  DeviceBuffer normBlocks_, normSums_;
  SliceNorm sliceNorm_;  // ZeRO stages 2 and 3: the blocks this rank owns (norm_blocks.h)
  DeviceBuffer heads_;   // and every rank's heads
  int64_t numChunks_ = 0, numSlices_ = 0;
  OptimizerConfig optimizer_;  // the plan's; its state slot k of a parameter lives in m_ (k = 0) or v_ (k = 1)
  // ZeRO (zero_chunks.h; docs/distributed.md, "ZeRO on CUDA"). Stages 1 and 2: this data rank
  // (of zeroRanks_) updates only its slice of each parameter and m_ and v_ hold only those
  // slices' state, packed; then the parameters are all-gathered over NCCL (the data axis's
  // communicator); stage 2's train step leaves only the slices of the gradients. Stage 3: the
  // plan's parameters are the rank's slices (contract/zero3.h), updated as they are, and the
  // programs gather them; zeroRanks_ stays 1. Without ZeRO (zeroStage_ 0) zeroRanks_ is 1 and
  // zero_ covers the whole parameters in their own layout.
  int zeroStage_ = 0, zeroRank_ = 0, zeroRanks_ = 1;
  std::string zeroDescription_;  // describeSharding()
  ChunkTable zero_;
  DeviceBuffer zeroStaging_, zeroWhole_;  // a padded all-gather; a whole state tensor for a whole checkpoint
  bool heldRestorePending_ = false;       // beginHeldRestore's slices go to the device with the parameters
  int64_t updates_ = 0;
  std::map<std::string, DeviceBuffer> inputs_;  // "program/input"
  std::vector<DeviceBuffer> states_;            // Plan.states (zeroed on first use; the decode caches)
  std::map<std::string, Program> programs_;
  std::string lastRun_;  // arena outputs belong to this program's last run
  std::map<std::string, HostCopy> outputs_;  // host copies handed out by output()
  std::vector<HostBytes> hostMoments_;       // every state slot of every parameter: optimizerState() / beginRestore()
  std::vector<HostBytes> hostHeld_;          // ZeRO: their slices, heldOptimizerState() / beginHeldRestore()
  bool syncEveryStep_ = false;               // LMRT_CUDA_SYNC=1
  OpProfile *profile_ = nullptr;
  NonFiniteValue *nonFinite_ = nullptr;
  StepObserver observer_;
};

CudaBackend::CudaBackend(Session &session, const DeviceOptions &options)
    : session_(session), bound_(session.bound()), options_(options) {
  const plan::Plan &plan = bound_.plan();
  device_ = openDevice(options.index);
  const char *syncEnv = std::getenv("LMRT_CUDA_SYNC");
  syncEveryStep_ = syncEnv && *syncEnv && std::strcmp(syncEnv, "0") != 0;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // Not with a tensor axis: its collectives run on the compute stream, and the data axis's on
  // the second one would run NCCL kernels of two communicators at once, which NCCL documents as
  // able to deadlock; a multi-GPU run has to check that first. Nor under ZeRO stages 2 and 3:
  // their reduce-scatters and gathers stay on the compute stream, on the data axis's own
  // communicator, which the second stream's all-reduce (the loss) would use at the same time.
  if (collectiveStreamEnabled() && plan.train().mesh().tensor() <= 1 && !zeroSlicesGrads(plan.train().mesh()))
    collectives_ = std::make_unique<CollectiveStream>(stream_);
  gemm_ = std::make_unique<Gemm>(stream_, options.tf32);
  if (plan.precision() == "bf16") lowPrecision_ = DType::BF16;
  if (plan.precision() == "fp16") lowPrecision_ = DType::F16;
  generated_ = GeneratedModule::load(plan, bound_.origin(), device_.smCount);

  // Parameters: one flat layout shared by values, gradients and both moments.
  const std::vector<ParamState> &ps = session.params();
  if (!ps.empty()) paramType_ = ps[0].type.dtype;
  optimizer_ = optimizerConfig(plan);
  std::vector<ParamSlice> slices;
  // ZeRO when the plan asks for it and this process is one of its data ranks (a lone process
  // evaluating or sampling the plan has nothing to split; lmrt's joinRanks refuses the rest).
  // On a data x tensor mesh (stage 1 only: lmc and lmrt refuse stages 2 and 3 with a tensor
  // axis) the data rank is the world rank / tensor, and the ZeRO slices are of the rank's
  // tensor-parallel slices.
  const plan::Mesh &mesh = plan.train().mesh();
  const int64_t tensor = std::max<int64_t>(1, mesh.tensor());
  if (mesh.zero() >= 1 && mesh.data() > 1 && comm::world().size() == mesh.data() * tensor) {
    if (mesh.zero() > 3 || (mesh.zero() > 1 && tensor > 1))
      bound_.error("ZeRO stage " + std::to_string(mesh.zero()) + (tensor > 1 ? " with tensor parallelism" : "") +
                   " does not run on CUDA ranks (stages 1 to 3 on a data axis do, and stage 1 on a data x tensor "
                   "mesh; --device cpu runs stages 2 and 3 on that mesh too)");
    if (!updatesSlices(optimizer_))
      bound_.error("ZeRO needs an elementwise optimizer (adamw, sgd or lion), and the plan's is " + optimizer_.kind);
    zeroStage_ = (int)mesh.zero();
    zeroRank_ = comm::world().rank() / (int)tensor;
    if (zeroStage_ <= 2) zeroRanks_ = (int)mesh.data();
  }
  // The flat storage (zero_chunks.h's flatLayout): stage 2's gradients are the slices
  // (gradType), read by the update from their own layout; stage 3's parameters are slices.
  std::vector<LayoutParam> layoutParams;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].type.dtype != paramType_)
      fail("plan '%s': parameter '%s' is %s while '%s' is %s; the CUDA backend keeps all parameters in one "
           "precision", bound_.origin().c_str(), ps[i].name.c_str(), dtypeName(ps[i].type.dtype),
           ps[0].name.c_str(), dtypeName(paramType_));
    layoutParams.push_back({ps[i].type.numel(), ps[i].gradType.numel(), session.logicalType(i).numel(), ps[i].frozen,
                            ps[i].weightDecay, ps[i].lrScale});
  }
  const FlatLayout layout =
      flatLayout(layoutParams, zeroStage_, zeroRank_, zeroStage_ > 0 ? (int)mesh.data() : 1,
                 (int64_t)(kAlign / dtypeSize(paramType_)));
  paramOffset_ = layout.paramOffset, gradOffset_ = layout.gradOffset;
  paramElems_ = layout.paramElems, gradElems_ = layout.gradElems;
  for (size_t i = 0; i < ps.size(); ++i) {
    const Shape &shape = ps[i].type.shape;
    const bool factored = optimizer_.kind == "adafactor" && adafactorFactored(shape);
    // A frozen parameter gets no chunk and no slice: the update never touches it.
    if (!ps[i].frozen)
      slices.push_back({paramOffset_[i], ps[i].type.numel(), factored ? shape[shape.size() - 2] : 0,
                        factored ? shape.back() : 0, ps[i].weightDecay ? 1 : 0, ps[i].trustRatio ? 1 : 0,
                        ps[i].lrScale});
  }
  // Only stage 2's data ranks update parameters from gradient slices (a lone process given such
  // a plan, to evaluate it, never steps the optimizer: launchUpdate checks).
  slicedGradsAlone_ = zeroStage_ != 2 && gradElems_ != paramElems_;
  const size_t paramBytes = std::max<size_t>(kAlign, (size_t)paramElems_ * dtypeSize(paramType_));
  params_ = DeviceBuffer(paramBytes, "the parameters");
  grads_ = DeviceBuffer(std::max<size_t>(kAlign, (size_t)gradElems_ * dtypeSize(paramType_)), "the gradients");
  // The elementwise optimizers' chunks: the whole parameters, the state in their layout; or this
  // ZeRO rank's slices, the state packed.
  zero_ = layout.chunks;
  const std::vector<AdamWChunk> &chunks = zero_.chunks;
  const size_t stateBytes =
      zeroRanks_ > 1 ? std::max<size_t>(kAlign, (size_t)zero_.stateElems * dtypeSize(paramType_)) : paramBytes;
  m_ = DeviceBuffer(stateBytes, "AdamW's first moments");
  v_ = DeviceBuffer(stateBytes, "AdamW's second moments");
  for (DeviceBuffer *b : {&params_, &grads_, &m_, &v_}) CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->size(), stream_));
  if (zeroRanks_ > 1) {
    int64_t largest = 0;
    for (const ParamState &p : ps) largest = std::max(largest, p.type.numel());
    const size_t padded = (size_t)(zeroShard(largest, zeroRanks_, 0).size() * zeroRanks_) * dtypeSize(paramType_);
    zeroStaging_ = DeviceBuffer(std::max<size_t>(kAlign, padded), "ZeRO's all-gather staging");
  }
  // Of the parameters as this rank binds them (whole, or its tensor-parallel slices), as the CPU
  // counts; under stage 3 of the logical tensors.
  if (zeroStage_ > 0) zeroDescription_ = describeZero(zeroStage_, zeroRank_, layout.mine, layout.all);
  numChunks_ = (int64_t)chunks.size();
  chunks_ = DeviceBuffer(std::max<size_t>(1, chunks.size()) * sizeof(AdamWChunk), "AdamW's chunk table");
  if (!chunks.empty())
    CUDA_CHECK(cudaMemcpyAsync(chunks_.get(), chunks.data(), chunks.size() * sizeof(AdamWChunk),
                               cudaMemcpyHostToDevice, stream_));
  numSlices_ = (int64_t)slices.size();
  slices_ = DeviceBuffer(std::max<size_t>(1, slices.size()) * sizeof(ParamSlice), "the optimizer's parameter table");
  if (!slices.empty())
    CUDA_CHECK(cudaMemcpyAsync(slices_.get(), slices.data(), slices.size() * sizeof(ParamSlice),
                               cudaMemcpyHostToDevice, stream_));
  // The gradient norm (norm_blocks.h): each gradient in blocks of 64 Ki elements, the blocks
  // in order, the gradients in order; with a tensor axis the split gradients' sums added over
  // the tensor group; under ZeRO stages 2 and 3 from the slices, the blocks this rank owns.
  if (plan.train().mesh().tensor() > 1) {
    // The optimizer updates this rank's slices as it would whole tensors only when it is
    // elementwise; the norm sums the split gradients' squares over the tensor group.
    const std::string e = tensorParallelOptimizerError(optimizer_, plan.train().mesh().tensor());
    if (!e.empty()) bound_.error(e);
    for (size_t i = 0; i < ps.size(); ++i) tensorSplit_.push_back(plan.params((int)i).has_sharding());
  }
  std::vector<int64_t> wholeCounts;  // the gradient elements the whole norm's blocks cover
  std::vector<bool> frozen;
  for (size_t i = 0; i < ps.size(); ++i) {
    wholeCounts.push_back(ps[i].gradType.numel());
    frozen.push_back(ps[i].frozen);
  }
  if (zeroStage_ >= 2) {
    std::vector<int64_t> logical;
    for (size_t i = 0; i < ps.size(); ++i) logical.push_back(session.logicalType(i).numel());
    sliceNorm_ = sliceNorm(logical, frozen, gradOffset_, zeroRank_, (int)mesh.data());
    heads_ = DeviceBuffer(std::max<size_t>(kAlign, (size_t)(sliceNorm_.headStride * mesh.data()) * dtypeSize(paramType_)),
                          "the gradient norm's block heads");
    const std::vector<OwnedNormBlock> &blocks = sliceNorm_.blocks;
    normBlocks_ = DeviceBuffer(std::max<size_t>(1, blocks.size()) * sizeof(OwnedNormBlock), "the gradient norm's blocks");
    normSums_ = DeviceBuffer(std::max<size_t>(1, blocks.size()) * sizeof(double), "the gradient norm's block sums");
    if (!blocks.empty())
      CUDA_CHECK(cudaMemcpyAsync(normBlocks_.get(), blocks.data(), blocks.size() * sizeof(OwnedNormBlock),
                                 cudaMemcpyHostToDevice, stream_));
  } else {
    const NormBlocks table = normBlocks(gradOffset_, wholeCounts);
    const std::vector<NormBlock> &blocks = table.blocks;
    normBlockStart_ = table.first;
    normBlocks_ = DeviceBuffer(std::max<size_t>(1, blocks.size()) * sizeof(NormBlock), "the gradient norm's blocks");
    normSums_ = DeviceBuffer(std::max<size_t>(1, blocks.size()) * sizeof(double), "the gradient norm's block sums");
    if (!blocks.empty())
      CUDA_CHECK(cudaMemcpyAsync(normBlocks_.get(), blocks.data(), blocks.size() * sizeof(NormBlock),
                                 cudaMemcpyHostToDevice, stream_));
  }

  // Arena, constants, inputs; then each program's buffers resolved to addresses.
  size_t constBytes = 0;
  for (const plan::Program &prog : plan.programs())
    for (const plan::Buffer &b : prog.buffers())
      if (b.kind() == plan::Buffer::CONSTANT) constBytes += alignUp(b.data().size());
  arena_ = DeviceBuffer(std::max<size_t>(kAlign, (size_t)bound_.arenaBytes()), "the activation arena");
  CUDA_CHECK(cudaMemsetAsync(arena_.get(), 0, arena_.size(), stream_));
  constants_ = DeviceBuffer(std::max<size_t>(kAlign, constBytes), "the plan's constants");
  states_.resize(bound_.states().size());

  size_t constOff = 0, scratchBytes = 0;
  for (const plan::Program &prog : plan.programs()) {
    Program &p = programs_[prog.name()];
    p.binding = &bound_.program(prog.name());
    for (const plan::Input &in : prog.inputs()) {
      TensorType t = toTensorType(in.type());
      inputs_.emplace(prog.name() + "/" + in.name(),
                      DeviceBuffer(std::max<size_t>(kAlign, (size_t)t.bytes()), "a program input"));
    }
    const std::vector<BufferBinding> &buffers = p.binding->buffers;
    for (size_t i = 0; i < buffers.size(); ++i) {
      const BufferBinding &b = buffers[i];
      DevTensor t{nullptr, b.type};
      switch (b.kind) {
      case plan::Buffer::ARENA: t.data = arena_.bytes() + b.offset; break;
      case plan::Buffer::PARAM: t.data = paramAt(params_, b.param); break;
      case plan::Buffer::GRAD: t.data = gradAt(b.param); break;
      case plan::Buffer::INPUT: t.data = inputs_.at(prog.name() + "/" + b.name).get(); break;
      case plan::Buffer::CONSTANT:
        t.data = constants_.bytes() + constOff;
        if (!b.constant->empty())
          CUDA_CHECK(cudaMemcpyAsync(t.data, b.constant->data(), b.constant->size(), cudaMemcpyHostToDevice, stream_));
        constOff += alignUp(b.constant->size());
        break;
      case plan::Buffer::STATE: break;  // allocated by the first run that reads it (run())
      default: bound_.error("program '" + prog.name() + "', buffer " + std::to_string(i) + " has an unknown kind");
      }
      p.buffers.push_back(t);
    }
    for (const StepBinding &sb : p.binding->steps) {
      Step s{&sb, nullptr};
      if (sb.kernel < 0) {
        s.def = findCudaKernel(sb.step->op());
        if (!s.def) bound_.error(sb.where + ": no CUDA kernel for op '" + sb.step->op() + "'");
        std::vector<TensorType> inT, outT;
        for (int id : sb.in) inT.push_back(p.buffers[id].type);
        for (int id : sb.out) outT.push_back(p.buffers[id].type);
        // Mixed precision (-lm-mixed-precision): bf16 / f16 buffers reach the
        // GEMMs, the casts and the fused loss, and under ZeRO stage 3 the gathers
        // of the parameters' slices and their cut, whose CUDA kernels take them.
        for (const std::vector<TensorType> *types : {&inT, &outT})
          for (const TensorType &t : *types)
            if (!s.def->reducedPrecision && (t.dtype == DType::BF16 || t.dtype == DType::F16))
              bound_.error(sb.where + ": op '" + sb.step->op() + "' has a " + t.str() +
                           " operand, and its CUDA kernel is f32 / f64 only (bf16 and f16 run in matmul, cast and "
                           "the fused linear_cross_entropy, all_gather and slice)");
        scratchBytes = std::max(scratchBytes, s.def->scratchBytes(inT, outT, sb.attrs));
      }
      p.steps.push_back(s);
    }
  }
  scratch_ = DeviceBuffer(std::max<size_t>(kAlign, alignUp(scratchBytes)), "kernel scratch");
  sync("setting up the device memory");
}

CudaBackend::~CudaBackend() {
  programs_.clear();
  generated_.reset();
  gemm_.reset();
  collectives_.reset();  // before the compute stream it joins into
  if (stream_) {
    cudaStreamSynchronize(stream_);  // unchecked: a destructor must not throw
    cudaStreamDestroy(stream_);
  }
}

int64_t CudaBackend::deviceBytes() const {
  size_t n = arena_.size() + params_.size() + grads_.size() + m_.size() + v_.size() + zeroStaging_.size() + acc_.size() +
             constants_.size() + scratch_.size() + chunks_.size() + slices_.size() + normBlocks_.size() +
             normSums_.size() + heads_.size();
  for (const auto &[name, b] : inputs_) n += b.size();
  for (const DeviceBuffer &b : states_) n += b.size();
  return (int64_t)n;
}

void CudaBackend::sync(const char *what) {
  try {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (const Error &e) {
    throw Error(std::string(e.what()) + " (while " + what +
                "; kernels run asynchronously: rerun with LMRT_CUDA_SYNC=1 to name the plan step that failed)");
  }
}

Program &CudaBackend::program(const std::string &name) {
  auto it = programs_.find(name);
  if (it == programs_.end()) bound_.program(name);  // throws, listing the programs
  return it->second;
}

TensorRef CudaBackend::toHost(const DevTensor &t, HostCopy &copy) {
  const size_t bytes = (size_t)t.type.bytes();
  copy.words.resize((bytes + 7) / 8);
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(copy.words.data(), t.data, bytes, cudaMemcpyDeviceToHost, stream_));
  sync("copying a result to the host");
  copy.ref = TensorRef{copy.words.data(), t.type};
  return copy.ref;
}

void CudaBackend::uploadParams() {
  const std::vector<ParamState> &ps = session_.params();
  for (size_t i = 0; i < ps.size(); ++i)
    CUDA_CHECK(cudaMemcpyAsync(paramAt(params_, (int)i), ps[i].value.data(), ps[i].value.size(),
                               cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.size(), stream_));
  if (heldRestorePending_) {  // a ZeRO checkpoint's slices (beginHeldRestore), in heldTensors' order
    size_t k = 0;
    for (size_t i = 0; i < ps.size(); ++i)
      for (size_t j = 0; j < stateSlots(optimizer_, ps[i].type.shape).size(); ++j, ++k)
        if (const int64_t n = zero_.slices[i].size(); n > 0)
          CUDA_CHECK(cudaMemcpyAsync(stateAt(j ? v_ : m_, (int)i), hostHeld_[k].data(),
                                     (size_t)n * dtypeSize(paramType_), cudaMemcpyHostToDevice, stream_));
    heldRestorePending_ = false;
  }
  sync("uploading the parameters");
}

void CudaBackend::downloadParams(bool grads) {
  std::vector<ParamState> &ps = session_.params();
  for (size_t i = 0; i < ps.size(); ++i) {
    CUDA_CHECK(cudaMemcpyAsync(ps[i].value.data(), paramAt(params_, (int)i), ps[i].value.size(),
                               cudaMemcpyDeviceToHost, stream_));
    if (grads)
      CUDA_CHECK(cudaMemcpyAsync(ps[i].grad.data(), gradAt((int)i), ps[i].grad.size(),
                                 cudaMemcpyDeviceToHost, stream_));
  }
  sync("downloading the parameters");
}

void CudaBackend::run(const std::string &programName, const std::map<std::string, TensorRef> &inputs) {
  Program &p = program(programName);
  bound_.checkInputs(programName, inputs);
  lastRun_.clear();  // a failed run leaves no valid outputs
  for (const plan::Input &in : p.binding->program->inputs()) {
    const TensorRef &t = inputs.at(in.name());
    if (t.type.bytes() > 0)
      CUDA_CHECK(cudaMemcpyAsync(inputs_.at(programName + "/" + in.name()).get(), t.data, (size_t)t.type.bytes(),
                                 cudaMemcpyHostToDevice, stream_));
  }
  // States (the decode caches) take memory only once a program that uses them
  // runs: training never does. Zeroed, then kept between runs.
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferBinding &b = p.binding->buffers[i];
    if (b.kind != plan::Buffer::STATE || p.buffers[i].data) continue;
    DeviceBuffer &d = states_[b.state];
    if (!d.get()) {
      d = DeviceBuffer(std::max<size_t>(kAlign, (size_t)b.type.bytes()), "a decode cache");
      CUDA_CHECK(cudaMemsetAsync(d.get(), 0, d.size(), stream_));
    }
    p.buffers[i].data = d.get();
  }
  const bool watch = profile_ || nonFinite_ || observer_;
  // all_reduce steps on the second stream (collective_stream.h); not while every step is
  // synchronised or watched. Joined into the compute stream however the run ends.
  CollectiveStream *second = collectives_ && !watch && !syncEveryStep_ ? collectives_.get() : nullptr;
  struct Join {
    CollectiveStream *c;
    ~Join() {
      if (c) try {
          c->joinAll();
        } catch (...) {  // the run's own error is the one to report
        }
    }
  } join{second};
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step &s = p.steps[si];
    const StepBinding &sb = *s.binding;
    std::vector<DevTensor> in, out;
    for (int id : sb.in) in.push_back(p.buffers[id]);
    for (int id : sb.out) out.push_back(p.buffers[id]);
    auto report = [&](const std::string &tensor, int64_t element, double value) {
      *nonFinite_ = NonFiniteValue{true, sb.where, programName, (int64_t)si, sb.step->op(), sb.step->loc(),
                                   tensor, element, value};
    };
    if (nonFinite_)  // a parameter that is already non-finite is the cause, not this op
      for (size_t k = 0; k < sb.in.size(); ++k) {
        const BufferBinding &b = p.binding->buffers[sb.in[k]];
        if (b.kind != plan::Buffer::PARAM) continue;
        HostCopy copy;
        double v;
        int64_t at = firstNonFinite(toHost(in[k], copy), v);
        if (at >= 0) return report("parameter '" + b.name + "' " + in[k].type.str(), at, v);
      }
    if (watch) sync("running the program");
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (second) second->before(in, out);
      // Data-axis all-reduces only (the gradients' buckets); see collectives_ for a tensor axis.
      if (second && s.def && sb.step->op() == "all_reduce" && sb.attrs.getInt("mesh_axis") == 0) {
        OpCall call{in, out, sb.attrs, second->begin(), scratch_.get(), *gemm_, lowPrecision_};
        s.def->run(call);
        second->end(in, out);
      } else if (s.def) {
        OpCall call{in, out, sb.attrs, stream_, scratch_.get(), *gemm_, lowPrecision_};
        s.def->run(call);
      } else {
        std::vector<DevTensor> args(in);
        args.insert(args.end(), out.begin(), out.end());
        generated_->launch(sb.kernel, args, *gemm_, stream_);
      }
      if (syncEveryStep_ || watch) CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (const Error &e) {
      throw Error("plan '" + bound_.origin() + "': " + sb.where + ": " + e.what());
    }
    if (profile_) {
      OpProfile::Entry &e = profile_->ops[profileKey(bound_.plan(), programName, sb)];
      e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      e.calls += 1;
      e.flops += sb.step->flops();
    }
    if (observer_ || nonFinite_) {
      std::vector<HostCopy> inCopies(in.size()), outCopies(out.size());
      std::vector<TensorRef> hostIn, hostOut;
      for (size_t k = 0; k < out.size(); ++k) hostOut.push_back(toHost(out[k], outCopies[k]));
      if (observer_) {
        for (size_t k = 0; k < in.size(); ++k) hostIn.push_back(toHost(in[k], inCopies[k]));
        observer_(programName, *sb.step, hostIn, hostOut);
      }
      if (nonFinite_)
        for (size_t k = 0; k < hostOut.size(); ++k) {
          double v;
          int64_t at = firstNonFinite(hostOut[k], v);
          if (at >= 0) return report("output " + std::to_string(k) + " " + hostOut[k].type.str(), at, v);
        }
    }
  }
  lastRun_ = programName;
}

TensorRef CudaBackend::output(const std::string &programName, const std::string &name) {
  Program &p = program(programName);
  const int id = bound_.outputBuffer(programName, name);
  const BufferBinding &b = p.binding->buffers[id];
  // Gradients live in parameter-owned storage and survive other programs' runs;
  // arena outputs are only valid until any program runs again.
  if (b.kind != plan::Buffer::GRAD && lastRun_ != programName)
    bound_.error("output '" + name + "' of program '" + programName +
                 "' is valid only right after a successful run of that program (last successful run: " +
                 (lastRun_.empty() ? std::string("none") : "'" + lastRun_ + "'") + ")");
  if (b.kind == plan::Buffer::INPUT)
    bound_.error("output '" + name + "' of program '" + programName + "' is an INPUT buffer");
  return toHost(p.buffers[id], outputs_[programName + "/" + name]);
}

void CudaBackend::accumulateGradients(int micro, int count) {
  if (!acc_.get()) {
    acc_ = DeviceBuffer(grads_.size(), "the accumulated gradients (--accumulate)");
    CUDA_CHECK(cudaMemsetAsync(acc_.get(), 0, acc_.size(), stream_));
  }
  launchAccumulate(paramType_, grads_.get(), acc_.get(), gradElems_, micro, count, stream_);
}

double CudaBackend::gradientNorm() {
  if (zeroStage_ >= 2) return sliceGradNorm();
  const std::vector<double> sums = gradSumSquares();
  if (!tensorSplit_.empty()) return std::sqrt(comm::sumOverTensorGroup(sums, tensorSplit_));
  double s = 0;
  for (double v : sums) s += v;
  return std::sqrt(s);
}

/* Each gradient's sum of squares: its blocks' sums, added in block order on the host. */
std::vector<double> CudaBackend::gradSumSquares() {
  const int64_t blocks = normBlockStart_.back();
  std::vector<double> blockSums((size_t)blocks);
  launchBlockSumSquares(paramType_, grads_.get(), static_cast<const NormBlock *>(normBlocks_.get()), blocks,
                        static_cast<double *>(normSums_.get()), stream_);
  if (blocks)
    CUDA_CHECK(cudaMemcpyAsync(blockSums.data(), normSums_.get(), (size_t)blocks * sizeof(double),
                               cudaMemcpyDeviceToHost, stream_));
  sync("computing the gradient norm");
  std::vector<double> sums;
  for (size_t i = 0; i + 1 < normBlockStart_.size(); ++i) {
    double s = 0;
    for (int64_t b = normBlockStart_[i]; b < normBlockStart_[i + 1]; ++b) s += blockSums[(size_t)b];
    sums.push_back(s);
  }
  return sums;
}

/* ZeRO stages 2 and 3 (norm_blocks.h's SliceNorm): this rank's heads to every rank, its owned
   blocks' sums, all of them to every rank, added in the whole gradients' order: DP's norm,
   bit for bit (runtime/exec/zero_norm_blocks.h). */
double CudaBackend::sliceGradNorm() {
  const SliceNorm &t = sliceNorm_;
  const int ranks = (int)bound_.plan().train().mesh().data();
  const size_t eb = dtypeSize(paramType_);
  if (t.headStride > 0) {
    char *mine = heads_.bytes() + (size_t)(zeroRank_ * t.headStride) * eb;
    for (size_t i = 0; i < t.headLength.size(); ++i)
      if (t.headLength[i] > 0)
        CUDA_CHECK(cudaMemcpyAsync(mine + (size_t)t.headAt[i] * eb, gradAt((int)i), (size_t)t.headLength[i] * eb,
                                   cudaMemcpyDeviceToDevice, stream_));
    // Every rank's part is headStride elements: NCCL's in-place all-gather.
    detail::allGatherZeroSlices(heads_.get(), t.headStride * ranks, paramType_, nullptr, stream_,
                                "ZeRO gradient norm: all_gather of the block heads");
  }
  const int64_t blocks = (int64_t)t.blocks.size();
  std::vector<double> blockSums((size_t)blocks);
  launchOwnedBlockSumSquares(paramType_, grads_.get(), heads_.get(), t.headStride,
                             static_cast<const OwnedNormBlock *>(normBlocks_.get()), blocks,
                             static_cast<double *>(normSums_.get()), stream_);
  if (blocks)
    CUDA_CHECK(cudaMemcpyAsync(blockSums.data(), normSums_.get(), (size_t)blocks * sizeof(double),
                               cudaMemcpyDeviceToHost, stream_));
  sync("computing the gradient norm");
  std::vector<double> sent((size_t)t.sums.total, 0.0), all((size_t)(t.sums.total * ranks), 0.0);
  for (size_t i = 0; i + 1 < t.firstBlock.size(); ++i)
    std::copy(blockSums.begin() + t.firstBlock[i], blockSums.begin() + t.firstBlock[i + 1],
              sent.begin() + t.sums.at[i]);
  if (t.sums.total > 0)
    comm::meshGroup(0).allGather(sent.data(), all.data(), t.sums.total, DType::F64,
                                 "ZeRO gradient norm: all_gather of block sums");
  std::vector<int64_t> numel;
  std::vector<bool> frozen;
  for (size_t i = 0; i < session_.params().size(); ++i)
    numel.push_back(session_.logicalType(i).numel()), frozen.push_back(session_.params()[i].frozen);
  return std::sqrt(addOwnedSums(numel, frozen, ranks, t.sums, all));
}

std::string CudaBackend::describeSharding() const { return zeroDescription_; }

void CudaBackend::optimizerStep(double lr, double gradScale) {
  launchUpdate(lr, gradScale);
  if (zeroRanks_ == 1) return;
  // Every rank's updated slices into every rank's parameters (frozen ones no rank changes).
  const std::vector<ParamState> &ps = session_.params();
  for (size_t i = 0; i < ps.size(); ++i)
    if (!ps[i].frozen)
      detail::allGatherZeroSlices(paramAt(params_, (int)i), ps[i].type.numel(), paramType_, zeroStaging_.get(),
                                  stream_, "ZeRO all_gather of parameter '" + ps[i].name + "'");
}

void CudaBackend::launchUpdate(double lr, double gradScale) {
  const OptimizerConfig &c = optimizer_;
  const char *kind = c.kind.c_str();
  if (!(lr >= 0) || !std::isfinite(lr)) fail("%s: learning rate %g is not a finite non-negative number", kind, lr);
  if (!(gradScale > 0) || !std::isfinite(gradScale))
    fail("%s: gradient scale %g is not finite and positive", kind, gradScale);
  if (slicedGradsAlone_)
    bound_.error("the train step returns each rank's slice of the gradients (ZeRO stage 2), and this process is not "
                 "one of the plan's data ranks: run it under mpirun on them");
  ++updates_;
  const double t = (double)updates_;
  if (c.kind == "adamw") {
    AdamWStep s{lr, c.beta1, c.beta2, c.eps, c.weightDecay, 1.0 - std::pow(c.beta1, t), 1.0 - std::pow(c.beta2, t),
                c.clipValue};
    launchAdamW(paramType_, params_.get(), grads_.get(), m_.get(), v_.get(),
                static_cast<const AdamWChunk *>(chunks_.get()), numChunks_, gradScale, s, stream_);
    return;
  }
  const OptimizerStep s = stepScalars(c, lr, updates_);
  const auto *chunks = static_cast<const AdamWChunk *>(chunks_.get());
  const auto *slices = static_cast<const ParamSlice *>(slices_.get());
  if (c.kind == "sgd")
    launchSgd(paramType_, params_.get(), grads_.get(), c.momentum > 0 ? m_.get() : nullptr, chunks, numChunks_,
              gradScale, s, stream_);
  else if (c.kind == "lion")
    launchLion(paramType_, params_.get(), grads_.get(), m_.get(), chunks, numChunks_, gradScale, s, stream_);
  else if (c.kind == "lamb")
    launchLamb(paramType_, params_.get(), grads_.get(), m_.get(), v_.get(), slices, numSlices_, gradScale, s, stream_);
  else if (c.kind == "adafactor")
    launchAdafactor(paramType_, params_.get(), grads_.get(), m_.get(), v_.get(), slices, numSlices_, gradScale, s,
                    stream_);
  else
    fail("optimizer '%s' is not implemented on the CUDA backend", kind);
}

/* Every state slot of every parameter (runtime/exec/optimizer.h's stateSlots, the
   checkpoint's names), on the host; slot k at the parameter's offset in m_ or v_
   (each slot is at most the parameter's size). */
std::vector<NamedTensor> CudaBackend::momentTensors() {
  const std::vector<ParamState> &ps = session_.params();
  std::vector<NamedTensor> out;
  std::vector<size_t> bytes;
  for (const ParamState &p : ps)
    for (const StateSlot &slot : stateSlots(optimizer_, p.type.shape)) {
      out.emplace_back(slot.prefix + "." + p.name, TensorRef{nullptr, TensorType{p.type.dtype, slot.shape}});
      bytes.push_back((size_t)out.back().second.type.bytes());
    }
  if (hostMoments_.size() != out.size()) {
    hostMoments_.clear();
    for (size_t b : bytes) hostMoments_.emplace_back(b);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].second.data = hostMoments_[i].data();
  return out;
}

/* Calls f(tensor, device address) for each state tensor of momentTensors(). */
template <typename F> void forEachStateSlot(const std::vector<ParamState> &ps, const OptimizerConfig &c,
                                            std::vector<NamedTensor> &tensors, F &&f) {
  size_t k = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    const size_t slots = stateSlots(c, ps[i].type.shape).size();
    for (size_t j = 0; j < slots; ++j, ++k) f(tensors[k], (int)i, (int)j);
  }
}

std::vector<NamedTensor> CudaBackend::optimizerState() {
  std::vector<NamedTensor> out = momentTensors();
  forEachStateSlot(session_.params(), optimizer_, out, [&](NamedTensor &t, int param, int slot) {
    const DeviceBuffer &state = slot ? v_ : m_;
    const size_t bytes = (size_t)t.second.type.bytes();
    if (zeroRanks_ == 1) {
      CUDA_CHECK(cudaMemcpyAsync(t.second.data, stateAt(state, param), bytes, cudaMemcpyDeviceToHost, stream_));
      return;
    }
    // ZeRO (a whole checkpoint): this rank's slice into a whole tensor, all-gathered (every
    // rank writes it in the same order: collective), downloaded.
    if (zeroWhole_.size() < bytes) zeroWhole_ = DeviceBuffer(std::max(bytes, kAlign), "a whole optimizer state tensor");
    const ShardRange r = zero_.slices[(size_t)param];
    const size_t eb = dtypeSize(paramType_);
    if (r.size() > 0)
      CUDA_CHECK(cudaMemcpyAsync(zeroWhole_.bytes() + (size_t)r.begin * eb, stateAt(state, param),
                                 (size_t)r.size() * eb, cudaMemcpyDeviceToDevice, stream_));
    detail::allGatherZeroSlices(zeroWhole_.get(), t.second.type.numel(), paramType_, zeroStaging_.get(), stream_,
                                "ZeRO all_gather of optimizer state '" + t.first + "'");
    CUDA_CHECK(cudaMemcpyAsync(t.second.data, zeroWhole_.get(), bytes, cudaMemcpyDeviceToHost, stream_));
  });
  sync("downloading the optimizer state");
  return out;
}

std::vector<HeldTensor> CudaBackend::heldTensors() {
  std::vector<HeldTensor> out;
  std::vector<size_t> bytes;
  const std::vector<ParamState> &ps = session_.params();
  for (size_t i = 0; i < ps.size(); ++i)
    for (const StateSlot &slot : stateSlots(optimizer_, ps[i].type.shape)) {
      const ShardRange r = zero_.slices[i];
      out.push_back(
          {slot.prefix + "." + ps[i].name, TensorType{ps[i].type.dtype, slot.shape}, r.begin, r.end, nullptr});
      bytes.push_back((size_t)r.size() * dtypeSize(paramType_));
    }
  hostHeld_.clear();
  for (size_t b : bytes) hostHeld_.emplace_back(std::max<size_t>(1, b), 0);
  for (size_t i = 0; i < out.size(); ++i) out[i].data = hostHeld_[i].data();
  return out;
}

/* Without ZeRO every tensor whole (held_state.h's default); under ZeRO the slices as they are. */
std::vector<HeldTensor> CudaBackend::heldOptimizerState() {
  if (zeroRanks_ == 1) {
    std::vector<HeldTensor> out;
    for (const NamedTensor &t : optimizerState())
      out.push_back({t.first, t.second.type, 0, t.second.type.numel(), t.second.data});
    return out;
  }
  std::vector<HeldTensor> out = heldTensors();
  size_t k = 0;
  for (size_t i = 0; i < session_.params().size(); ++i)
    for (size_t j = 0; j < stateSlots(optimizer_, session_.params()[i].type.shape).size(); ++j, ++k)
      if (out[k].end > out[k].begin)
        CUDA_CHECK(cudaMemcpyAsync(hostHeld_[k].data(), stateAt(j ? v_ : m_, (int)i),
                                   (size_t)(out[k].end - out[k].begin) * dtypeSize(paramType_),
                                   cudaMemcpyDeviceToHost, stream_));
  sync("downloading the optimizer state's slices");
  return out;
}

/* The slices are uploaded with the parameters (uploadParams: a restore ends with it). */
std::vector<HeldTensor> CudaBackend::beginHeldRestore(int64_t updates) {
  // On a tensor-parallel mesh a slice is a flat run of the rank's block, not of the logical
  // tensor the shards hold: restored whole (beginRestore) and sliced, as the CPU does.
  if (zeroRanks_ == 1 || !tensorSplit_.empty()) return {};
  if (updates < 0) fail("%s: update count %lld is negative", optimizer_.kind.c_str(), (long long)updates);
  updates_ = updates;
  heldRestorePending_ = true;
  return heldTensors();
}

std::vector<NamedTensor> CudaBackend::beginRestore(int64_t updates) {
  if (updates < 0) fail("%s: update count %lld is negative", optimizer_.kind.c_str(), (long long)updates);
  updates_ = updates;
  std::vector<NamedTensor> out = momentTensors();
  for (HostBytes &b : hostMoments_) std::fill(b.begin(), b.end(), 0);
  return out;
}

void CudaBackend::finishRestore() {
  std::vector<NamedTensor> in = momentTensors();
  forEachStateSlot(session_.params(), optimizer_, in, [&](NamedTensor &t, int param, int slot) {
    if (zeroRanks_ == 1) {  // every state tensor whole (Adafactor's factored ones smaller than the parameter)
      CUDA_CHECK(cudaMemcpyAsync(stateAt(slot ? v_ : m_, param), t.second.data, (size_t)t.second.type.bytes(),
                                 cudaMemcpyHostToDevice, stream_));
      return;
    }
    // Under ZeRO this rank's slice of the whole tensor.
    const ShardRange r = zero_.slices[(size_t)param];
    const size_t eb = dtypeSize(paramType_);
    if (r.size() > 0)
      CUDA_CHECK(cudaMemcpyAsync(stateAt(slot ? v_ : m_, param),
                                 static_cast<const char *>(t.second.data) + (size_t)r.begin * eb, (size_t)r.size() * eb,
                                 cudaMemcpyHostToDevice, stream_));
  });
  sync("uploading the optimizer state");
}

// --- the provider -------------------------------------------------------------------

void probe(const DeviceOptions &options) { openDevice(options.index); }

std::vector<std::string> listDevices() {
  std::string why = unavailableReason();
  if (!why.empty()) fail("no CUDA GPU is usable on this machine: %s", why.c_str());
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) lines.push_back(openDevice(i).str());
  return lines;
}

}  // namespace

std::unique_ptr<Backend> createBackend(Session &session, const DeviceOptions &options) {
  return std::make_unique<CudaBackend>(session, options);
}

const BackendProvider &provider() {
  static const BackendProvider p = {"cuda", probe, createBackend, listDevices};
  return p;
}

}  // namespace lmrt::cuda
