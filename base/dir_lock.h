/* Implements: one process at a time per directory. A run that writes into a
   directory other runs might write into too (lmrt run's --checkpoint-dir: two jobs
   there would delete each other's checkpoints as stale or replace them) holds an
   exclusive flock(2) on DIR/lmrt.lock for as long as it lives. The file records the
   holder (PID, host, start time) for the message a second run gets. The kernel
   drops the lock when its holder exits, however it exits, so the lock of a killed
   run is simply taken over; the file itself stays. */
#pragma once
#include <memory>
#include <string>

namespace lmrt {

class DirectoryLock {
public:
  static constexpr const char *kFileName = "lmrt.lock";
  /* Creates `dir` if needed and locks it, or throws Error naming `role` ("--checkpoint-dir"),
     the directory and the holder's PID, host and start time. */
  static std::unique_ptr<DirectoryLock> acquire(const std::string &dir, const std::string &role);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock &) = delete;
  DirectoryLock &operator=(const DirectoryLock &) = delete;

private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace lmrt
