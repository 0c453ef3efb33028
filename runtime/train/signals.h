/* Implements: how `lmrt run` reacts to signals.
   - SIGTERM and SIGINT (what Slurm and a user send) only set a flag; the training
     loop finishes the current step, writes a checkpoint and exits with status 0. A
     second one of either kills the process at once (checkpoint writes are atomic, so
     that is safe too).
   - SIGBUS while reading a memory-mapped shard (the file was truncated under the
     run) becomes an lmrt::Error naming the file, thrown from the reading code, so
     the loop can checkpoint and stop with a message instead of dying. */
#pragma once
#include <functional>
#include <string>

namespace lmrt {

/* Installs the SIGTERM/SIGINT handlers for its lifetime (restoring the previous
   ones after). */
class StopSignals {
public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;
  /* The signal received (SIGTERM or SIGINT), or 0. */
  int pending() const;
};

/* Runs `read` on the calling thread; a SIGBUS it raises throws Error(`what` + ...).
   Only reads that have not yet changed any state may be guarded (the read is
   abandoned midway). */
void guardBusErrors(const std::string &what, const std::function<void()> &read);

}  // namespace lmrt
