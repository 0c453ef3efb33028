/* Implements: StopSignals and guardBusErrors (see signals.h). */
#include "runtime/train/signals.h"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>
#include <pthread.h>

#include "base/tensor.h"

namespace lmrt {
namespace {

std::atomic<int> gStop{0};           // the first signal a StopSignals recorded
std::atomic<int> gCount{0};          // and how many came since
std::atomic<bool> gStopping{false};  // a StopSignals lives: signals are recorded

sigset_t stopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

/* The signal thread: takes SIGTERM and SIGINT as they come, in order. */
void *takeStopSignals(void *) {
  const sigset_t set = stopSet();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    // Once a loop has recorded a stop, a late second signal (it stopped, and the
    // process is on its way out) still only counts.
    if ((gStopping.load() || gStop.load() != 0) && ++gCount <= StopSignals::kRecorded) {
      int none = 0;
      gStop.compare_exchange_strong(none, sig);
      continue;
    }
    // The default action, for the whole process: this thread unblocks the signal
    // with its default disposition and sends it to itself.
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
  }
  return nullptr;
}

thread_local sigjmp_buf *tGuard = nullptr;

void onBus(int sig) {
  if (tGuard) siglongjmp(*tGuard, 1);
  // Not a guarded read: the default action (core dump) is the honest answer.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void routeStopSignals() {
  static std::once_flag once;
  std::call_once(once, [] {
    const sigset_t set = stopSet();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, takeStopSignals, nullptr) != 0) {
      // Without the thread the signals would stay blocked: leave them as they were.
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    }
    pthread_attr_destroy(&attr);
  });
}

StopSignals::StopSignals() {
  routeStopSignals();
  gStop = 0;
  gCount = 0;
  gStopping = true;
}

StopSignals::~StopSignals() { gStopping = false; }

int StopSignals::pending() const { return gStop.load(); }

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
