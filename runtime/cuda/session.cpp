/* Implements: CudaSession (session.h). */
#include "runtime/cuda/session.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "contract/plan_types.h"
#include "contract/op_table.h"

namespace lmrt::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/* AdamW's chunks: no block gets more than this many elements. */
constexpr int64_t kChunkElems = 1 << 16;

}  // namespace

struct CudaSession::Step {
  const CudaKernelDef *def = nullptr;  // a library kernel, or
  int generated = -1;                  // a generated one ("fused" steps)
  kernels::Attrs attrs;
  std::vector<int> in, out;
  std::string where;  // "program 'train_step', step 17 (matmul, from gpt.lm:12:5)"
};

struct CudaSession::Program {
  const plan::Program *prog = nullptr;
  std::vector<DevTensor> buffers;  // every buffer's device address and type, fixed for the session
  std::vector<Step> steps;
};

CudaSession::CudaSession(Session &host, const std::string &origin, const DeviceOptions &options,
                         const DeviceInfo &device)
    : host_(host), options_(options), device_(device), origin_(origin) {
  const plan::Plan &plan = host.plan();
  const char *sync = std::getenv("LMRT_CUDA_SYNC");
  syncEveryStep_ = sync && *sync && std::strcmp(sync, "0") != 0;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<Gemm>(stream_, options.tf32);
  generated_ = GeneratedModule::load(plan, origin_, device.smCount);

  // Parameters: one flat layout shared by values, gradients and both moments.
  std::vector<ParamState> &ps = host.params();
  if (!ps.empty()) paramType_ = ps[0].type.dtype;
  std::vector<AdamWChunk> chunks;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].type.dtype != paramType_)
      fail("plan '%s': parameter '%s' is %s while '%s' is %s; the CUDA backend keeps all parameters in one "
           "precision", origin_.c_str(), ps[i].name.c_str(), dtypeName(ps[i].type.dtype), ps[0].name.c_str(),
           dtypeName(paramType_));
    paramOffset_.push_back(paramElems_);
    const int64_t n = ps[i].type.numel();
    // A frozen parameter gets no AdamW chunk: the update never touches it.
    for (int64_t b = 0; !ps[i].frozen && b < n; b += kChunkElems)
      chunks.push_back({paramElems_ + b, paramElems_ + std::min(n, b + kChunkElems), ps[i].weightDecay ? 1 : 0});
    paramElems_ += (int64_t)(alignUp((size_t)n * dtypeSize(paramType_)) / dtypeSize(paramType_));
  }
  const size_t paramBytes = std::max<size_t>(kAlign, (size_t)paramElems_ * dtypeSize(paramType_));
  params_ = DeviceBuffer(paramBytes, "the parameters");
  grads_ = DeviceBuffer(paramBytes, "the gradients");
  m_ = DeviceBuffer(paramBytes, "AdamW's first moments");
  v_ = DeviceBuffer(paramBytes, "AdamW's second moments");
  numChunks_ = (int64_t)chunks.size();
  chunks_ = DeviceBuffer(std::max<size_t>(1, chunks.size()) * sizeof(AdamWChunk), "AdamW's chunk table");
  if (!chunks.empty())
    CUDA_CHECK(cudaMemcpy(chunks_.get(), chunks.data(), chunks.size() * sizeof(AdamWChunk), cudaMemcpyHostToDevice));
  norm_ = DeviceBuffer((kNormBlocks + 2) * sizeof(double), "the gradient norm");

  // Arena, constants, inputs; then each program's buffers resolved to addresses.
  int64_t arenaBytes = 0;
  size_t constBytes = 0;
  for (const plan::Program &prog : plan.programs()) {
    arenaBytes = std::max(arenaBytes, prog.arena_bytes());
    for (const plan::Buffer &b : prog.buffers())
      if (b.kind() == plan::Buffer::CONSTANT) constBytes += alignUp(b.data().size());
  }
  arena_ = DeviceBuffer(std::max<size_t>(kAlign, (size_t)arenaBytes), "the activation arena");
  CUDA_CHECK(cudaMemset(arena_.get(), 0, arena_.size()));
  constants_ = DeviceBuffer(std::max<size_t>(kAlign, constBytes), "the plan's constants");
  std::map<std::string, int> paramIndex;
  for (size_t i = 0; i < ps.size(); ++i) paramIndex[ps[i].name] = (int)i;

  size_t constOff = 0, scratchBytes = 0;
  for (const plan::Program &prog : plan.programs()) {
    auto p = std::make_unique<Program>();
    p->prog = &prog;
    for (const plan::Input &in : prog.inputs()) {
      TensorType t = toTensorType(in.type());
      inputs_.emplace(prog.name() + "/" + in.name(),
                      DeviceBuffer(std::max<size_t>(kAlign, (size_t)t.bytes()), "a program input"));
    }
    for (int i = 0; i < prog.buffers_size(); ++i) {
      const plan::Buffer &b = prog.buffers(i);
      DevTensor t{nullptr, toTensorType(b.type())};
      const size_t elem = dtypeSize(paramType_);
      switch (b.kind()) {
      case plan::Buffer::ARENA: t.data = arena_.bytes() + b.offset(); break;
      case plan::Buffer::PARAM: t.data = params_.bytes() + paramOffset_[paramIndex.at(b.name())] * elem; break;
      case plan::Buffer::GRAD: t.data = grads_.bytes() + paramOffset_[paramIndex.at(b.name())] * elem; break;
      case plan::Buffer::INPUT: t.data = inputs_.at(prog.name() + "/" + b.name()).get(); break;
      case plan::Buffer::CONSTANT:
        t.data = constants_.bytes() + constOff;
        if (!b.data().empty())
          CUDA_CHECK(cudaMemcpy(t.data, b.data().data(), b.data().size(), cudaMemcpyHostToDevice));
        constOff += alignUp(b.data().size());
        break;
      case plan::Buffer::STATE: break;  // allocated by the first run that reads it (run())
      default: fail("plan '%s': program '%s', buffer %d has an unknown kind", origin_.c_str(), prog.name().c_str(), i);
      }
      p->buffers.push_back(t);
    }
    for (int si = 0; si < prog.steps_size(); ++si) {
      const plan::Step &st = prog.steps(si);
      Step s;
      s.attrs = decodeAttrs(st);
      s.in.assign(st.inputs().begin(), st.inputs().end());
      s.out.assign(st.outputs().begin(), st.outputs().end());
      s.where = "program '" + prog.name() + "', step " + std::to_string(si) + " (" + st.op() +
                (st.loc().empty() ? "" : ", from " + st.loc()) + ")";
      if (st.op() == ops::kFusedOpName) {
        s.generated = (int)st.attrs().at("kernel").i();
      } else {
        s.def = findCudaKernel(st.op());
        if (!s.def) fail("plan '%s': %s: no CUDA kernel for op '%s'", origin_.c_str(), s.where.c_str(), st.op().c_str());
        std::vector<TensorType> inT, outT;
        for (int id : s.in) inT.push_back(p->buffers[id].type);
        for (int id : s.out) outT.push_back(p->buffers[id].type);
        scratchBytes = std::max(scratchBytes, s.def->scratchBytes(inT, outT, s.attrs));
      }
      p->steps.push_back(std::move(s));
    }
    programs_[prog.name()] = std::move(p);
  }
  scratch_ = DeviceBuffer(std::max<size_t>(kAlign, alignUp(scratchBytes)), "kernel scratch");
  // The memsets and copies above ran on the legacy stream, which our non-blocking stream does not wait for.
  CUDA_CHECK(cudaDeviceSynchronize());
}

CudaSession::~CudaSession() {
  programs_.clear();
  generated_.reset();
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);  // unchecked: a destructor must not throw
}

size_t CudaSession::deviceBytes() const {
  size_t n = arena_.size() + params_.size() * 4 + constants_.size() + scratch_.size() + norm_.size() + chunks_.size();
  for (const auto &[name, b] : inputs_) n += b.size();
  return n;
}

CudaSession::Program &CudaSession::program(const std::string &name) {
  auto it = programs_.find(name);
  if (it == programs_.end()) fail("plan '%s': no program '%s'", origin_.c_str(), name.c_str());
  return *it->second;
}

void CudaSession::uploadParams() {
  const size_t elem = dtypeSize(paramType_);
  for (size_t i = 0; i < host_.params().size(); ++i) {
    const ParamState &p = host_.params()[i];
    CUDA_CHECK(cudaMemcpy(params_.bytes() + paramOffset_[i] * elem, p.value.data(), p.value.size(),
                          cudaMemcpyHostToDevice));
  }
  for (DeviceBuffer *b : {&grads_, &m_, &v_}) CUDA_CHECK(cudaMemset(b->get(), 0, b->size()));
  CUDA_CHECK(cudaDeviceSynchronize());  // cudaMemset may return before it is done
}

void CudaSession::downloadParams(bool grads) {
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  const size_t elem = dtypeSize(paramType_);
  for (size_t i = 0; i < host_.params().size(); ++i) {
    ParamState &p = host_.params()[i];
    CUDA_CHECK(cudaMemcpy(p.value.data(), params_.bytes() + paramOffset_[i] * elem, p.value.size(),
                          cudaMemcpyDeviceToHost));
    if (grads)
      CUDA_CHECK(cudaMemcpy(p.grad.data(), grads_.bytes() + paramOffset_[i] * elem, p.grad.size(),
                            cudaMemcpyDeviceToHost));
  }
}

DevTensor CudaSession::input(const std::string &programName, const std::string &name) {
  Program &p = program(programName);
  for (const plan::Input &in : p.prog->inputs())
    if (in.name() == name) return {inputs_.at(programName + "/" + name).get(), toTensorType(in.type())};
  fail("plan '%s': program '%s' reads no input '%s'", origin_.c_str(), programName.c_str(), name.c_str());
}

void CudaSession::run(const std::string &programName) {
  Program &p = program(programName);
  // States (the decode caches) take memory only once a program that uses them
  // runs: training never does. Zeroed, then kept between runs.
  for (int i = 0; i < p.prog->buffers_size(); ++i) {
    const plan::Buffer &b = p.prog->buffers(i);
    if (b.kind() != plan::Buffer::STATE || p.buffers[i].data) continue;
    auto it = states_.find(b.name());
    if (it == states_.end()) {
      DeviceBuffer d(std::max<size_t>(kAlign, (size_t)p.buffers[i].type.bytes()), "a decode cache");
      CUDA_CHECK(cudaMemset(d.get(), 0, d.size()));
      it = states_.emplace(b.name(), std::move(d)).first;
    }
    p.buffers[i].data = it->second.get();
  }
  for (const Step &s : p.steps) {
    try {
      std::vector<DevTensor> in, out;
      for (int id : s.in) in.push_back(p.buffers[id]);
      for (int id : s.out) out.push_back(p.buffers[id]);
      if (s.def) {
        OpCall call{std::move(in), std::move(out), s.attrs, stream_, scratch_.get(), *gemm_};
        s.def->run(call);
      } else {
        in.insert(in.end(), out.begin(), out.end());
        generated_->launch(s.generated, in, *gemm_, stream_);
      }
      if (syncEveryStep_) CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (const Error &e) {
      throw Error("plan '" + origin_ + "': " + s.where + ": " + e.what());
    }
  }
}

DevTensor CudaSession::output(const std::string &programName, const std::string &name) {
  Program &p = program(programName);
  for (const plan::Output &o : p.prog->outputs())
    if (o.name() == name) return p.buffers[o.buffer()];
  fail("plan '%s': program '%s' has no output '%s'", origin_.c_str(), programName.c_str(), name.c_str());
}

void CudaSession::optimizerStep(int64_t t, double lr, double maxNorm) {
  const plan::Optimizer &o = host_.plan().train().optimizer();
  double *norm = static_cast<double *>(norm_.get());
  launchGradNorm(paramType_, grads_.get(), paramElems_, norm + 2, norm, maxNorm, stream_);
  AdamWStep s{lr, o.beta1(), o.beta2(), o.eps(), o.weight_decay(), 1.0 - std::pow(o.beta1(), (double)t),
              1.0 - std::pow(o.beta2(), (double)t)};
  launchAdamW(paramType_, params_.get(), grads_.get(), m_.get(), v_.get(), static_cast<const AdamWChunk *>(chunks_.get()),
              numChunks_, norm, s, stream_);
}

}  // namespace lmrt::cuda
