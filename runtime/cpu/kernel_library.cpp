/* Implements: KernelLibrary (kernel_library.h). */
#include "runtime/cpu/kernel_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lmrt {

bool cpuSupportsTarget(const std::string &target) {
#if defined(__x86_64__)
  return target == "cpu-x86-64";
#else
  return false;
#endif
}

std::unique_ptr<KernelLibrary> KernelLibrary::load(const plan::Plan &plan, const std::string &origin) {
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary());
  if (plan.kernels_size() == 0) return lib;
  auto error = [&](const std::string &msg) { return Error("plan '" + origin + "': " + msg); };

  const plan::KernelLibrary *chosen = nullptr;
  std::string built;
  for (const plan::KernelLibrary &l : plan.kernel_libraries()) {
    built += (built.empty() ? "" : ", ") + l.target();
    if (!chosen && cpuSupportsTarget(l.target())) chosen = &l;
  }
  if (!chosen)
    throw error("its generated kernels were compiled for " + (built.empty() ? std::string("no target") : built) +
                ", and none of these runs on this CPU; recompile it here (lmc compile --target cpu)");
  lib->target_ = chosen->target();

  // dlopen needs a file: an anonymous in-memory one, gone when it is closed.
  lib->fd_ = memfd_create("lmc-kernels", MFD_CLOEXEC);
  if (lib->fd_ < 0) throw error(std::string("cannot create an in-memory file for its kernels: ") + strerror(errno));
  const std::string &image = chosen->image();
  for (size_t off = 0; off < image.size();) {
    ssize_t n = write(lib->fd_, image.data() + off, image.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw error(std::string("cannot stage its kernels in memory: ") + strerror(errno));
    }
    off += (size_t)n;
  }
  std::string path = "/proc/self/fd/" + std::to_string(lib->fd_);
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_)
    throw error("cannot load its " + chosen->target() + " kernel library: " + std::string(dlerror()));

  for (int i = 0; i < plan.kernels_size(); ++i) {
    const plan::Kernel &k = plan.kernels(i);
    kernels::GeneratedKernel g;
    g.schedule = k.schedule() == plan::Kernel::COLUMN_REDUCE     ? kernels::GeneratedKernel::Schedule::ColumnReduce
                 : k.schedule() == plan::Kernel::MATMUL_EPILOGUE ? kernels::GeneratedKernel::Schedule::MatmulEpilogue
                                                                 : kernels::GeneratedKernel::Schedule::Elementwise;
    g.rows = k.rows();
    g.cols = k.cols();
    g.product = k.product_arg();
    g.lhs = k.lhs_arg();
    g.rhs = k.rhs_arg();
    g.transposeRhs = k.transpose_rhs();
    void *entry = dlsym(lib->handle_, k.name().c_str());
    if (!entry)
      throw error("kernel " + std::to_string(i) + " '" + k.name() + "' is not in its " + chosen->target() +
                  " kernel library");
    g.outputs = k.args_size() - k.num_inputs();
    if (g.schedule == kernels::GeneratedKernel::Schedule::ColumnReduce) {
      // Column reduces take row chunks (generated.h); a library without the combine
      // entry is from an lmc whose column reduces took column ranges instead.
      const std::string combine = k.name() + "_combine";
      g.reduce = reinterpret_cast<kernels::ColumnReduceFn>(entry);
      g.combine = reinterpret_cast<kernels::ColumnCombineFn>(dlsym(lib->handle_, combine.c_str()));
      if (!g.combine)
        throw error("kernel " + std::to_string(i) + " '" + combine + "' is not in its " + chosen->target() +
                    " kernel library (it was compiled by an older lmc; recompile the plan)");
    } else {
      g.fn = reinterpret_cast<kernels::GeneratedFn>(entry);
    }
    lib->kernels_.push_back(g);
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace lmrt
