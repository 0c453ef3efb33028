/* Implements: what the fuzz targets share (docs/fuzzing.md).

   Each target is one file that defines LLVMFuzzerTestOneInput and runs the
   production reader on the input, expecting either success or an lmrt::Error:
   anything else (a crash, a sanitizer report, another exception, a leak, a hang)
   is a bug. The readers that take a path get the input through a file in a
   private scratch directory, so no target writes outside it:

     $TMPDIR/lmc-fuzz-<target>.XXXXXX   created on first use, removed at exit

   A target that needs a valid file of its own plan to start from (a checkpoint's
   meta.json, an HF config.json) makes it itself, and writes it as a seed when
   LMC_FUZZ_SEED_DIR is set (scripts/fuzz.sh does, before fuzzing). With
   LMC_FUZZ_VERBOSE set, each target prints why it refused an input. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace lmc_fuzz {

/* Aborts with a message: a broken invariant of a reader is a crash libFuzzer
   records, like a sanitizer report. */
[[noreturn]] inline void violated(const char *what, const std::string &detail = "") {
  std::fprintf(stderr, "fuzz invariant violated: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}
#define LMC_FUZZ_CHECK(cond, detail) \
  do {                               \
    if (!(cond)) ::lmc_fuzz::violated(#cond, detail); \
  } while (0)

inline std::string bytesOf(const uint8_t *data, size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

namespace detail {
inline std::string &scratchPath() {
  static std::string path;
  return path;
}
inline void removeScratch() {
  std::error_code ec;
  if (!scratchPath().empty()) std::filesystem::remove_all(scratchPath(), ec);
}
}  // namespace detail

/* The target's scratch directory (see above); `target` names it on first use. */
inline const std::string &scratchDir(const char *target) {
  std::string &path = detail::scratchPath();
  if (path.empty()) {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/lmc-fuzz-" + target + ".XXXXXX";
    if (!::mkdtemp(tmpl.data())) violated("cannot create the scratch directory", tmpl);
    path = tmpl;
    std::atexit(detail::removeScratch);
  }
  return path;
}

/* Replaces `path` with `bytes` (no fsync: the scratch directory is throwaway). */
inline void writeFile(const std::string &path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), (std::streamsize)bytes.size());
  if (!f) violated("cannot write a scratch file", path);
}

inline std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/* Writes `bytes` as seed `name` into $LMC_FUZZ_SEED_DIR when it is set. */
inline void emitSeed(const char *name, std::string_view bytes) {
  const char *dir = std::getenv("LMC_FUZZ_SEED_DIR");
  if (dir && *dir) writeFile(std::string(dir) + "/" + name, bytes);
}

/* Called with every lmrt::Error a target catches: an expected outcome, printed
   only with LMC_FUZZ_VERBOSE set (to see why a seed is refused). */
inline void rejected(const std::exception &e) {
  static const bool verbose = std::getenv("LMC_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
}

/* Little-endian integers in a byte buffer (the file formats are all little-endian,
   as is every machine LMC runs on). */
template <typename T> inline void storeLE(std::string &bytes, size_t at, T v) {
  std::memcpy(&bytes[at], &v, sizeof v);
}

}  // namespace lmc_fuzz
