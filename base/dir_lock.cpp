/* Implements: DirectoryLock (dir_lock.h). */
#include "base/dir_lock.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tensor.h"

namespace lmrt {

std::unique_ptr<DirectoryLock> DirectoryLock::acquire(const std::string &dir, const std::string &role) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create %s '%s': %s", role.c_str(), dir.c_str(), std::strerror(errno));
  const std::string path = dir + "/" + kFileName;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) fail("cannot open the lock file '%s' of %s: %s", path.c_str(), role.c_str(), std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[256] = {0};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK)
      fail("cannot lock '%s' (%s): %s", path.c_str(), role.c_str(), std::strerror(err));
    std::string who = n > 0 ? std::string(holder, (size_t)n) : "a process that has not said who it is";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    fail("%s '%s' is in use by another run (%s): two runs there would delete or replace each other's files; "
         "wait for it to end, stop it, or choose another directory", role.c_str(), dir.c_str(), who.c_str());
  }
  char host[256] = "unknown host";
  ::gethostname(host, sizeof host - 1);
  char when[64] = "";
  std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  std::string who = "PID " + std::to_string(::getpid()) + " on " + host + ", since " + when + "\n";
  // Rewritten in place: the file of a run that died says who held it last.
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, who.data(), who.size(), 0) != (ssize_t)who.size()) {
    // The lock holds without the note; only the message of a second run is poorer.
  }
  return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
}

DirectoryLock::~DirectoryLock() { ::close(fd_); }  // closing drops the lock

}  // namespace lmrt
