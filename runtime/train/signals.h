/* Implements: how lmrt reacts to signals.
   - SIGTERM and SIGINT (what Slurm and a user send) never run a signal handler:
     routeStopSignals(), called first in main before any other thread exists,
     blocks them in every thread and starts one thread of their own that takes
     them with sigwait(2). Why: oneDNN 2.6's JIT GEMM kernels (Debian's, which the
     CPU backend calls) point rsp at a heap buffer while they run, so a handler
     entered on a thread inside one pushes its frame onto the heap and corrupts
     it: `lmrt run` then died on SIGTERM with "corrupted size vs. prev_size" or a
     SIGSEGV in about one run in twenty (oneDNN issue 4845, fixed in oneDNN 3.11).
   - While a training loop holds a StopSignals, SIGTERM and SIGINT only set a
     flag; the loop finishes the current step, writes a checkpoint and exits with
     status 0. A second one changes nothing (Slurm's scancel, a second Ctrl-C: the
     checkpoint being written is finished); a third ends the process at once, by
     that signal (checkpoint writes are atomic, so the previous checkpoint stays).
     Outside a training loop the signal thread ends the process by the signal, as
     the default action would.
   - SIGBUS while reading a memory-mapped shard (the file was truncated under the
     run) becomes an lmrt::Error naming the file, thrown from the reading code, so
     the loop can checkpoint and stop with a message instead of dying. (A fault is
     delivered to the faulting thread, so this handler runs on the reading thread,
     outside any JIT kernel.) */
#pragma once
#include <functional>
#include <string>

namespace lmrt {

/* Routes SIGTERM and SIGINT to the signal thread (see above). Call it before any
   thread is created: a thread that exists already keeps its own signal mask.
   Idempotent. */
void routeStopSignals();

/* While it lives, the first kRecorded SIGTERMs or SIGINTs are only recorded
   (pending()); the next one ends the process. Routes the signals itself if main
   has not. */
class StopSignals {
public:
  static constexpr int kRecorded = 2;
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
