/* Implements: StopSignals and guardBusErrors (see signals.h). */
#include "runtime/train/signals.h"

#include <csetjmp>
#include <csignal>
#include <cstring>

#include "base/tensor.h"

namespace lmrt {
namespace {

volatile sig_atomic_t gStop = 0;
struct sigaction gOldTerm, gOldInt;

void onStop(int sig) {
  gStop = sig;
  // The next SIGTERM/SIGINT gets the default action: a second Ctrl-C stops at once.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &dfl, nullptr);
  sigaction(SIGINT, &dfl, nullptr);
}

thread_local sigjmp_buf *tGuard = nullptr;

void onBus(int sig) {
  if (tGuard) siglongjmp(*tGuard, 1);
  // Not a guarded read: the default action (core dump) is the honest answer.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

StopSignals::StopSignals() {
  gStop = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &gOldTerm);
  sigaction(SIGINT, &sa, &gOldInt);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &gOldTerm, nullptr);
  sigaction(SIGINT, &gOldInt, nullptr);
}

int StopSignals::pending() const { return gStop; }

void guardBusErrors(const std::string &what, const std::function<void()> &read) {
  struct sigaction sa, old;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onBus;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGBUS, &sa, &old);
  sigjmp_buf buf;
  sigjmp_buf *outer = tGuard;
  if (sigsetjmp(buf, 1) != 0) {
    tGuard = outer;
    sigaction(SIGBUS, &old, nullptr);
    throw Error(what + " changed under the run (it was truncated or rewritten while memory-mapped; "
                       "reading it raised SIGBUS)");
  }
  tGuard = &buf;
  try {
    read();
  } catch (...) {
    tGuard = outer;
    sigaction(SIGBUS, &old, nullptr);
    throw;
  }
  tGuard = outer;
  sigaction(SIGBUS, &old, nullptr);
}

}  // namespace lmrt
