/* Implements: readWholeFile and writeFileAtomic (see file_io.h). */
#include "base/file_io.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tensor.h"

namespace lmrt {

std::string readWholeFile(const std::string &path, const char *what) {
  auto error = [&](const std::string &verb, const std::string &why) {
    return Error("cannot " + verb + " " + what + " '" + path + "': " + why);
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw error("open", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw error("open", "it is a directory");
  if (!S_ISREG(st.st_mode)) throw error("open", "not a regular file (a FIFO or device is never read)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error("open", std::strerror(errno));
  std::string bytes((size_t)st.st_size, '\0');
  if (!f.read(bytes.data(), (std::streamsize)bytes.size())) throw error("read", "short read");
  return bytes;
}

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void fsyncPath(const std::string &path, const char *what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open %s '%s' to sync it: %s", what, path.c_str(), std::strerror(errno));
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  // EINVAL: the file system cannot sync this kind of file (some special files); nothing to do.
  if (rc != 0 && e != EINVAL) fail("cannot sync %s '%s': %s", what, path.c_str(), std::strerror(e));
}

namespace {

/* The regular file that replacing `path` means: the path itself, or the final
   target of a symlink (so the link survives). */
std::string replacementTarget(const std::string &path) {
  struct stat lst;
  if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return path;
  char *resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return path;  // a dangling link: replaced like a new file
  std::string target = resolved;
  std::free(resolved);
  return target;
}

}  // namespace

std::string atomicTempPath(const std::string &path) { return replacementTarget(path) + ".tmp"; }

void writeFileAtomic(const std::string &path, const char *what,
                     const std::function<void(std::ostream &)> &emit) {
  auto error = [&](const std::string &why) {
    return Error(std::string("cannot write ") + what + " '" + path + "': " + why);
  };
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw error("it is a directory");
    if (!S_ISREG(st.st_mode)) {
      // A device or FIFO: write into it. No O_TRUNC games, no rename.
      std::ofstream f(path, std::ios::binary | std::ios::out);
      if (!f) throw error(std::strerror(errno));
      emit(f);
      f.flush();
      if (!f) throw error("write failed");
      return;
    }
  }
  std::string target = replacementTarget(path);
  std::string tmp = target + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw error(std::strerror(errno));
    try {
      emit(f);
    } catch (...) {
      f.close();
      std::remove(tmp.c_str());
      throw;
    }
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw error("write failed (disk full?)");
    }
  }
  try {
    fsyncPath(tmp, what);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw error(why);
  }
  fsyncPath(parentDirectory(target), "directory");
}

}  // namespace lmrt
