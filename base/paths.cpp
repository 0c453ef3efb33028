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

std::string withoutTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
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
    // writeFileAtomic truncates PATH.tmp and removeStaleTemp deletes it: it may not be an input either.
    std::string tmp = atomicTempPath(o.path);
    for (const NamedPath &in : inputs)
      if (samePath(tmp, in.path))
        fail("%s '%s' is written through the temporary '%s', which is %s '%s': refusing to overwrite an input",
             o.role.c_str(), o.path.c_str(), tmp.c_str(), in.role.c_str(), in.path.c_str());
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

bool fileStartsWith(const std::string &path, const std::string &magic) {
  std::string head;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) {
    head.resize(magic.size());
    ok = ::read(fd, head.data(), head.size()) == (ssize_t)head.size() && head == magic;
  }
  ::close(fd);
  return ok;
}

void checkOutputs(const std::vector<OutputSpec> &outputs, const std::vector<NamedPath> &inputs, bool overwrite,
                  FILE *log) {
  std::vector<NamedPath> files;
  for (const OutputSpec &o : outputs) {
    if (o.path.empty()) fail("%s: an empty path", o.role.c_str());
    if (!o.directory) files.push_back({o.role, o.path});
  }
  refuseOverlappingPaths(files, inputs);
  for (const OutputSpec &d : outputs) {
    if (!d.directory || !d.names) continue;
    for (const NamedPath &in : inputs) {
      char *resolved = in.path.empty() ? nullptr : ::realpath(in.path.c_str(), nullptr);
      std::string real = resolved ? resolved : in.path;
      std::free(resolved);
      if (!in.path.empty() && samePath(parentDirectory(real), d.path) && d.names(baseName(real)))
        fail("%s '%s' would write '%s', which is %s '%s': refusing to overwrite an input", d.role.c_str(),
             d.path.c_str(), baseName(real).c_str(), in.role.c_str(), in.path.c_str());
    }
  }
  for (const OutputSpec &o : outputs) {
    if (o.directory) {
      checkOutputDirectory({o.role, o.path});
      continue;
    }
    // The directory output the file is in, if any: errors then name the
    // directory the user gave ("--out 'hf' already holds model.safetensors").
    const OutputSpec *in = nullptr;
    for (const OutputSpec &d : outputs)
      if (d.directory && withoutTrailingSlash(parentDirectory(o.path)) == withoutTrailingSlash(d.path)) in = &d;
    // In a directory still to be created: nothing there to remove, clobber or
    // probe (the directory's own check found where it will be made).
    if (in && ::access(in->path.c_str(), F_OK) != 0) continue;
    // An OwnRule output (an appended log) is not written through a temporary.
    if (o.ifExists != IfExists::OwnRule) removeStaleTemp(o.path, log);
    checkOutputFile({o.role, o.path});
    struct stat st;
    if (overwrite || o.ifExists == IfExists::OwnRule || o.ifExists == IfExists::Replace ||
        ::stat(o.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
      continue;
    if (o.ifExists == IfExists::ReplaceEarlier && o.isEarlier && o.isEarlier(o.path)) continue;
    std::string what = in ? in->role + " '" + in->path + "' already holds " + baseName(o.path)
                          : o.role + " '" + o.path + "' exists";
    if (o.ifExists == IfExists::ReplaceEarlier) what += (in ? ", which is not " : " and is not ") + o.kind;
    fail("%s; pass --overwrite to replace it", what.c_str());
  }
}

}  // namespace lmrt
