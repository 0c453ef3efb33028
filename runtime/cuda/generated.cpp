/* Implements: GeneratedModule (generated.h). */
#include "runtime/cuda/generated.h"

#include <algorithm>

#include "runtime/cuda/check.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/gemm.h"

namespace lmrt::cuda {

std::unique_ptr<GeneratedModule> GeneratedModule::load(const plan::Plan &plan, const std::string &origin,
                                                       int smCount) {
  std::unique_ptr<GeneratedModule> m(new GeneratedModule());
  m->smCount_ = std::max(1, smCount);
  if (plan.kernels_size() == 0) return m;
  const plan::KernelLibrary *lib = nullptr;
  std::string built;
  for (const plan::KernelLibrary &l : plan.kernel_libraries()) {
    built += (built.empty() ? "" : ", ") + l.target();
    if (l.target() == "cuda") lib = &l;
  }
  if (!lib)
    fail("plan '%s': its generated kernels were compiled for %s, not for CUDA; recompile it with "
         "`lmc compile --target cpu,cuda` to run it with --device cuda",
         origin.c_str(), built.empty() ? "no target" : built.c_str());
  try {
    const DriverApi &d = driver();
    CU_CHECK(d.moduleLoadData(&m->module_, lib->image().data()));
    for (int i = 0; i < plan.kernels_size(); ++i) {
      const plan::Kernel &k = plan.kernels(i);
      Kernel g{k.schedule(), k.rows(), k.cols(), k.product_arg(), k.lhs_arg(), k.rhs_arg(), k.transpose_rhs(),
               nullptr, k.name()};
      CUresult r = d.moduleGetFunction(&g.fn, m->module_, k.name().c_str());
      if (r == CUDA_ERROR_NOT_FOUND)
        fail("kernel %d '%s' is not in its CUDA kernel library", i, k.name().c_str());
      CU_CHECK(r);
      m->kernels_.push_back(g);
    }
  } catch (const Error &e) {
    throw Error("plan '" + origin + "': loading its CUDA kernels: " + e.what());
  }
  return m;
}

GeneratedModule::~GeneratedModule() {
  if (module_) driver().moduleUnload(module_);  // unchecked: a destructor must not throw
}

void GeneratedModule::launch(int index, const std::vector<DevTensor> &args, Gemm &gemm, cudaStream_t stream) const {
  const Kernel &k = kernels_.at((size_t)index);
  if (k.schedule == plan::Kernel::MATMUL_EPILOGUE) {
    const DevTensor &a = args.at(k.lhs), &w = args.at(k.rhs), &c = args.at(k.product);
    GemmArgs g;
    g.dtype = a.type.dtype;
    g.tb = k.transposeRhs;
    g.m = k.rows;
    g.n = k.cols;
    g.k = a.shape().empty() ? 1 : a.shape().back();
    g.a = a.data, g.lda = g.k;
    g.b = w.data, g.ldb = g.tb ? g.k : g.n;
    g.c = c.data, g.ldc = g.n;
    gemm.run(g);
  }
  const int64_t end = k.schedule == plan::Kernel::COLUMN_REDUCE ? k.cols : k.rows * k.cols;
  if (end == 0) return;
  int64_t begin = 0, last = end;
  std::vector<void *> ptrs(args.size());
  for (size_t i = 0; i < args.size(); ++i) ptrs[i] = args[i].data;
  // The kernel's first parameter is lmc::Args<N>, N pointers by value: the bytes of ptrs.
  void *params[] = {ptrs.data(), &begin, &last};
  constexpr unsigned kBlock = 256;
  const int64_t blocks = std::min<int64_t>((end + kBlock - 1) / kBlock, (int64_t)smCount_ * 16);
  CU_CHECK(driver().launchKernel(k.fn, (unsigned)blocks, 1, 1, kBlock, 1, 1, 0, (CUstream)stream, params, nullptr));
}

}  // namespace lmrt::cuda
