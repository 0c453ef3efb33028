/* Implements: output path checks (see paths.h). */
#include "base/paths.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_io.h"
#include "base/tensor.h"

namespace lmrt {
namespace {

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/* Canonical parent + name, for paths that do not exist (yet). */
std::string canonicalNew(const std::string &path) {
  std::string dir = parentDirectory(path);
  char *resolved = ::realpath(dir.c_str(), nullptr);
  if (!resolved) return path;
  std::string out = std::string(resolved) + "/" + baseName(path);
  std::free(resolved);
  return out;
}

}  // namespace

bool samePath(const std::string &a, const std::string &b) {
  if (a.empty() || b.empty()) return false;
  struct stat sa, sb;
  bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  return canonicalNew(a) == canonicalNew(b);
}

void refuseOverlappingPaths(const std::vector<NamedPath> &outputs, const std::vector<NamedPath> &inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath &o = outputs[i];
    if (o.path.empty()) continue;
    // A device or FIFO is written into, never replaced: /dev/null may take every output.
    struct stat st;
    if (::stat(o.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
    for (const NamedPath &in : inputs)
      if (samePath(o.path, in.path))
        fail("%s '%s' is the same file as %s '%s': refusing to overwrite an input", o.role.c_str(),
             o.path.c_str(), in.role.c_str(), in.path.c_str());
    for (size_t j = 0; j < i; ++j)
      if (samePath(o.path, outputs[j].path))
        fail("%s '%s' and %s '%s' are the same file: give each output its own path",
             outputs[j].role.c_str(), outputs[j].path.c_str(), o.role.c_str(), o.path.c_str());
  }
}

/* Creates and removes a file in `dir`: the one sure test that `path` (role `role`)
   can be written there, whatever the permission bits, mounts or ACLs say. */
static void probeWritable(const char *role, const std::string &path, const std::string &dir) {
  std::string probe = dir + "/.lmrt-probe-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0) fail("%s '%s' cannot be written: cannot create a file in '%s': %s", role, path.c_str(),
                   dir.c_str(), std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void checkOutputFile(const NamedPath &out) {
  const std::string &p = out.path;
  const char *role = out.role.c_str();
  struct stat st;
  if (::stat(p.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("%s '%s' is a directory, not a file", role, p.c_str());
    if (!S_ISREG(st.st_mode)) {  // a device or FIFO: written straight into
      if (::access(p.c_str(), W_OK) != 0)
        fail("%s '%s' is not writable: %s", role, p.c_str(), std::strerror(errno));
      return;
    }
  }
  // A regular file is replaced through a temporary in its (target's) directory.
  std::string dir = parentDirectory(atomicTempPath(p));
  struct stat ds;
  if (::stat(dir.c_str(), &ds) != 0)
    fail("%s '%s': directory '%s' does not exist", role, p.c_str(), dir.c_str());
  if (!S_ISDIR(ds.st_mode)) fail("%s '%s': '%s' is not a directory", role, p.c_str(), dir.c_str());
  probeWritable(role, p, dir);
}

void checkOutputDirectory(const NamedPath &out) {
  const std::string &p = out.path;
  const char *role = out.role.c_str();
  struct stat st;
  std::string dir = p;
  if (::stat(p.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) fail("%s '%s' exists and is not a directory", role, p.c_str());
  } else {
    dir = parentDirectory(p);
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      fail("%s '%s': parent directory '%s' does not exist", role, p.c_str(), dir.c_str());
  }
  probeWritable(role, p, dir);
}

void removeStaleTemp(const std::string &path, FILE *log) {
  std::string tmp = atomicTempPath(path);
  struct stat st;
  if (::lstat(tmp.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (::unlink(tmp.c_str()) == 0 && log)
    std::fprintf(log, "removed '%s', left by an interrupted write\n", tmp.c_str());
}

}  // namespace lmrt
