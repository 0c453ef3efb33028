/* Implements: GeneratedModule (generated.h). */
#include "runtime/cuda/generated.h"

#include <algorithm>

#include "runtime/cuda/check.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/gemm_desc.h"

namespace lmrt::cuda {
namespace {

/* Row chunks of a column reduction over `rows` rows: at least 64 rows a chunk, at
   most 64 chunks; a function of the shape alone, so the order of the additions is. */
int64_t rowChunks(int64_t rows) { return std::max<int64_t>(1, std::min<int64_t>(64, rows / 64)); }

}  // namespace

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
  size_t partBytes = 0;
  try {
    const DriverApi &d = driver();
    CU_CHECK(d.moduleLoadData(&m->module_, lib->image().data()));
    for (int i = 0; i < plan.kernels_size(); ++i) {
      const plan::Kernel &k = plan.kernels(i);
      Kernel g{k.schedule(), k.rows(), k.cols(), k.product_arg(), k.lhs_arg(), k.rhs_arg(), k.transpose_rhs(),
               nullptr, nullptr, k.name()};
      CUresult r = d.moduleGetFunction(&g.fn, m->module_, k.name().c_str());
      if (r == CUDA_ERROR_NOT_FOUND)
        fail("kernel %d '%s' is not in its CUDA kernel library", i, k.name().c_str());
      CU_CHECK(r);
      if (k.schedule() == plan::Kernel::COLUMN_REDUCE) {
        const std::string combine = k.name() + "_combine";
        r = d.moduleGetFunction(&g.combine, m->module_, combine.c_str());
        if (r == CUDA_ERROR_NOT_FOUND)
          fail("kernel %d '%s' is not in its CUDA kernel library", i, combine.c_str());
        CU_CHECK(r);
        // Partial sums: chunks x (at most every output) x cols accumulators of 8 bytes.
        const size_t outputs = (size_t)(k.args_size() - k.num_inputs());
        partBytes = std::max(partBytes, (size_t)rowChunks(k.rows()) * outputs * (size_t)k.cols() * 8);
      }
      m->kernels_.push_back(g);
    }
    m->partials_ = DeviceBuffer(partBytes, "the partial sums of column reductions");
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
    g.dtype = a.type.dtype;  // bf16 or f16 operands write an f32 product (gemm_desc.h)
    checkGemmTypes(k.name.c_str(), a.type.dtype, w.type.dtype, c.type.dtype);
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
  constexpr unsigned kBlock = 256;
  if (k.schedule == plan::Kernel::COLUMN_REDUCE) {
    // Blocks of 32 columns x 8 row lanes over (column groups, row chunks), then the
    // chunks added in order (codegen/KernelEmitter.cpp, cudaEntry).
    int64_t chunks = rowChunks(k.rows), chunkRows = (k.rows + chunks - 1) / chunks;
    void *part = partials_.get();
    void *reduceParams[] = {ptrs.data(), &begin, &last, &part, &chunkRows};
    CU_CHECK(driver().launchKernel(k.fn, (unsigned)((end + 31) / 32), (unsigned)chunks, 1, 32, 8, 1, 0,
                                   (CUstream)stream, reduceParams, nullptr));
    void *combineParams[] = {ptrs.data(), &last, &part, &chunks};
    const int64_t blocks = std::min<int64_t>((end + kBlock - 1) / kBlock, (int64_t)smCount_ * 16);
    CU_CHECK(driver().launchKernel(k.combine, (unsigned)blocks, 1, 1, kBlock, 1, 1, 0, (CUstream)stream,
                                   combineParams, nullptr));
    return;
  }
  // The kernel's first parameter is lmc::Args<N>, N pointers by value: the bytes of ptrs.
  void *params[] = {ptrs.data(), &begin, &last};
  const int64_t blocks = std::min<int64_t>((end + kBlock - 1) / kBlock, (int64_t)smCount_ * 16);
  CU_CHECK(driver().launchKernel(k.fn, (unsigned)blocks, 1, 1, kBlock, 1, 1, 0, (CUstream)stream, params, nullptr));
}

}  // namespace lmrt::cuda
