/* Implements: readWholeFile and writeFileAtomic (see file_io.h). */
#include "base/file_io.h"

#include <cerrno>
#include <algorithm>
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

namespace {

/* "64 MiB" for the bounds in messages. */
std::string byteCount(uint64_t n) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && n >= 1024 && n % 1024 == 0) n /= 1024, ++u;
  return std::to_string(n) + " " + units[u];
}

/* Opens `path` for reading without blocking (a FIFO with no writer would wait
   forever in open) and checks what the descriptor is, so a FIFO swapped in
   after a stat is still caught. -1 with `error` set on failure. */
int openRegular(const std::string &path, const char *what, uint64_t maxBytes, struct stat &st,
                std::string &error) {
  auto refuse = [&](const std::string &verb, const std::string &why) {
    error = "cannot " + verb + " " + what + " '" + path + "': " + why;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    refuse("open", std::strerror(errno));
    return -1;
  }
  if (::fstat(fd, &st) != 0) {
    refuse("open", std::strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    refuse("open", "it is a directory");
  } else if (!S_ISREG(st.st_mode)) {
    refuse("open", S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO would be waited on forever)"
                                        : "not a regular file (a device or socket is never read)");
  } else if ((uint64_t)st.st_size > maxBytes) {
    refuse("read", std::to_string((uint64_t)st.st_size) + " bytes, over the bound of " + byteCount(maxBytes));
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

}  // namespace

bool checkRegularFile(const std::string &path, const char *what, uint64_t maxBytes, std::string &error) {
  struct stat st;
  int fd = openRegular(path, what, maxBytes, st, error);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool readRegularFile(const std::string &path, const char *what, uint64_t maxBytes, std::string &bytes,
                     std::string &error) {
  struct stat st;
  int fd = openRegular(path, what, maxBytes, st, error);
  if (fd < 0) return false;
  bytes.clear();
  // stat's size is a hint only (0 for /proc files); the loop reads to the end.
  // One byte past the bound is asked for, to tell a file at the bound from one over it.
  const uint64_t cap = maxBytes == kNoSizeBound ? maxBytes : maxBytes + 1;
  bytes.resize((size_t)std::min<uint64_t>((uint64_t)st.st_size + 1, cap));
  size_t have = 0;
  for (;;) {
    if (have == bytes.size()) {
      if (have > maxBytes) break;
      bytes.resize((size_t)std::min<uint64_t>(std::max<uint64_t>(2 * (uint64_t)have, 4096), cap));
    }
    ssize_t n = ::read(fd, bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read ") + what + " '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    have += (size_t)n;
  }
  ::close(fd);
  if (have > maxBytes) {
    error = std::string("cannot read ") + what + " '" + path + "': more than the bound of " + byteCount(maxBytes);
    return false;
  }
  bytes.resize(have);
  return true;
}

std::string readWholeFile(const std::string &path, const char *what, uint64_t maxBytes) {
  std::string bytes, error;
  if (!readRegularFile(path, what, maxBytes, bytes, error)) throw Error(error);
  return bytes;
}

std::string parentDirectory(const std::string &path) {
  // "fortunes/" names the directory "fortunes": its parent is ".", not "fortunes".
  size_t end = path.find_last_not_of('/');
  if (end == std::string::npos) return path.empty() ? "." : "/";
  size_t slash = path.find_last_of('/', end);
  if (slash == std::string::npos) return ".";
  size_t parentEnd = path.find_last_not_of('/', slash);
  if (parentEnd == std::string::npos) return "/";
  return path.substr(0, parentEnd + 1);
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
