//===- KernelCompiler.cpp - Generated kernel source to machine code -------===//

#include "codegen/KernelCompiler.h"

#include "base/hash.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir;
using namespace mlir::lm;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string cacheRoot(const KernelCompileOptions &options) {
  if (!options.cacheDir.empty())
    return options.cacheDir;
  if (std::optional<std::string> dir = llvm::sys::Process::GetEnv("LMC_CACHE_DIR"))
    return *dir;
  llvm::SmallString<256> path;
  if (std::optional<std::string> xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME")) {
    path = *xdg;
  } else if (llvm::sys::path::home_directory(path)) {
    llvm::sys::path::append(path, ".cache");
  } else {
    llvm::sys::path::system_temp_directory(/*erasedOnReboot=*/false, path);
  }
  llvm::sys::path::append(path, "lmc");
  return std::string(path);
}

/// The compiler to run: an explicit path, $ENV, or `name` on PATH (then `extra`).
llvm::Expected<std::string> findCompiler(const std::string &explicitPath, const char *env, llvm::StringRef name,
                                         llvm::ArrayRef<llvm::StringRef> extra) {
  std::string wanted = explicitPath;
  if (wanted.empty())
    if (std::optional<std::string> fromEnv = llvm::sys::Process::GetEnv(env))
      wanted = *fromEnv;
  if (wanted.empty())
    wanted = name.str();
  if (llvm::sys::path::has_parent_path(wanted)) {
    if (llvm::sys::fs::can_execute(wanted))
      return wanted;
    return error("the compiler '" + wanted + "' (from " + (explicitPath.empty() ? env : "the options") +
                 ") is not an executable file");
  }
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(wanted))
    return *found;
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(wanted, extra))
    return *found;
  return error("no '" + wanted + "' on PATH to compile the generated kernels" +
               (name == "nvcc" ? " for CUDA (install the CUDA toolkit, set LMC_NVCC, or compile with --target cpu)"
                               : " (install g++, or set LMC_CXX)"));
}

/// Changes when the compiler binary does: its path, size and modification time.
std::string compilerStamp(const std::string &path) {
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st))
    return path;
  return llvm::formatv("{0}|{1}|{2}", path, st.getSize(),
                       st.getLastModificationTime().time_since_epoch().count())
      .str();
}

llvm::Expected<std::string> readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read '" + path + "': " + buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

llvm::Error writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return error("cannot write '" + path + "': " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error())
    return error("cannot write '" + path + "': " + os.error().message());
  return llvm::Error::success();
}

} // namespace

llvm::StringRef mlir::lm::getKernelTargetName(KernelTarget target) {
  switch (target) {
  case KernelTarget::Cpu:
    // Baseline x86-64: the entry points carry target clones (AVX-512, AVX2),
    // so the library runs on any x86-64 machine at that machine's width.
    return "cpu-x86-64";
  case KernelTarget::Cuda:
    return "cuda";
  }
  llvm_unreachable("unknown kernel target");
}

std::optional<KernelTarget> mlir::lm::parseKernelTargetName(llvm::StringRef name) {
  for (KernelTarget target : {KernelTarget::Cpu, KernelTarget::Cuda})
    if (name == getKernelTargetName(target))
      return target;
  return std::nullopt;
}

llvm::Expected<CompiledKernels> mlir::lm::compileKernels(llvm::StringRef source, KernelTarget target,
                                                         const KernelCompileOptions &options) {
  CompiledKernels out;
  out.target = getKernelTargetName(target).str();
  std::vector<std::string> flags;
  std::string compiler, ext;
  if (target == KernelTarget::Cpu) {
    llvm::Expected<std::string> cxx = findCompiler(options.cxx, "LMC_CXX", "c++", {});
    if (!cxx)
      return cxx.takeError();
    compiler = *cxx;
    flags = {"-std=c++17", "-O3", "-fPIC", "-shared", "-fopenmp-simd", "-fno-math-errno",
             // Without it GCC keeps the exp's selects as branches and the loops scalar.
             "-fno-trapping-math", "-w", "-march=x86-64"};
    ext = ".cpp";
  } else {
    llvm::Expected<std::string> nvcc = findCompiler(options.nvcc, "LMC_NVCC", "nvcc", {"/usr/local/cuda/bin"});
    if (!nvcc)
      return nvcc.takeError();
    compiler = *nvcc;
    flags = {"-std=c++17", "-O3", "--fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
             "arch=compute_90,code=[sm_90,compute_90]"};
    ext = ".cu";
  }
  out.compiler = llvm::sys::path::filename(compiler).str();
  for (const std::string &f : flags)
    out.compiler += " " + f;

  std::string key = source.str() + "\n" + out.target + "\n" + compilerStamp(compiler);
  for (const std::string &f : flags)
    key += "\n" + f;
  std::string hash = llvm::formatv("{0:x-16}", lmrt::fnv1a64(key.data(), key.size())).str();
  llvm::SmallString<256> dir(cacheRoot(options));
  llvm::sys::path::append(dir, "kernels");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return error("cannot create the kernel cache '" + dir + "': " + ec.message() +
                 " (set LMC_CACHE_DIR to a writable folder)");
  llvm::SmallString<256> image(dir), src(dir);
  llvm::sys::path::append(image, hash + (target == KernelTarget::Cpu ? ".so" : ".fatbin"));
  llvm::sys::path::append(src, hash + ext);

  if (llvm::sys::fs::exists(image)) {
    llvm::Expected<std::string> bytes = readFile(image);
    if (!bytes)
      return bytes.takeError();
    out.image = std::move(*bytes);
    out.cached = true;
    return out;
  }

  // Compile into unique temporaries, then rename: two lmc runs sharing the
  // cache never see each other's half-written files.
  llvm::SmallString<256> tmpSrc, tmpImage;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(src + ".%%%%%%" + ext, fd, tmpSrc))
    return error("cannot create a file in the kernel cache '" + dir + "': " + ec.message());
  ::close(fd);
  if (llvm::Error e = writeFile(tmpSrc, source))
    return std::move(e);
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(image + ".%%%%%%.tmp", fd, tmpImage))
    return error("cannot create a file in the kernel cache '" + dir + "': " + ec.message());
  ::close(fd);

  llvm::SmallString<256> log;
  llvm::sys::fs::createTemporaryFile("lmc-kernel-compile", "log", log);
  std::vector<llvm::StringRef> argv = {compiler};
  for (const std::string &f : flags)
    argv.push_back(f);
  argv.push_back("-o");
  argv.push_back(tmpImage);
  argv.push_back(tmpSrc);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(compiler, argv, std::nullopt, redirects, /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &message);
  llvm::Expected<std::string> diagnostics = readFile(log);
  llvm::sys::fs::remove(log);
  if (status != 0) {
    llvm::sys::fs::remove(tmpImage);
    std::string diag = diagnostics ? *diagnostics : std::string();
    if (!diagnostics)
      llvm::consumeError(diagnostics.takeError());
    return error("compiling the generated kernels failed: '" + out.compiler + "' on " + tmpSrc +
                 (status < 0 ? " could not run: " + message : " exited with status " + std::to_string(status)) +
                 (diag.empty() ? "" : "\n" + diag));
  }
  if (!diagnostics)
    llvm::consumeError(diagnostics.takeError());
  llvm::sys::fs::rename(tmpSrc, src);
  if (std::error_code ec = llvm::sys::fs::rename(tmpImage, image))
    return error("cannot store '" + image + "' in the kernel cache: " + ec.message());
  llvm::Expected<std::string> bytes = readFile(image);
  if (!bytes)
    return bytes.takeError();
  out.image = std::move(*bytes);
  return out;
}

void mlir::lm::setKernelImage(lmrt::plan::KernelLibrary &library, std::string image) {
  library.set_image_fnv1a(lmrt::fnv1a64(image.data(), image.size()));
  library.set_image(std::move(image));
}

llvm::Expected<KernelCompileReport> mlir::lm::compilePlanKernels(lmrt::plan::Plan &plan,
                                                                 const KernelCompileOptions &options) {
  KernelCompileReport report;
  for (lmrt::plan::KernelLibrary &library : *plan.mutable_kernel_libraries()) {
    std::optional<KernelTarget> target = parseKernelTargetName(library.target());
    if (!target)
      return error("kernel library for unknown target '" + library.target() + "'");
    llvm::Expected<CompiledKernels> compiled = compileKernels(library.source(), *target, options);
    if (!compiled)
      return compiled.takeError();
    (compiled->cached ? report.cachedLibraries : report.compiledLibraries)++;
    setKernelImage(library, std::move(compiled->image));
    library.set_compiler(std::move(compiled->compiler));
  }
  return report;
}
