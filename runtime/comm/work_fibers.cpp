/* Implements: work_fibers.h, on POSIX ucontext (glibc): one context for the work, one
   stack reused by every item (each runs to its end before the next starts). */
#include "runtime/comm/work_fibers.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/tensor.h"

namespace lmrt::comm {
namespace {

/* The work is a collective kernel: a few frames of lmrt and of MPI's non-blocking calls,
   buffers on the heap. A guard page below catches an overflow (a fault, not corruption). */
constexpr size_t kStackBytes = size_t(1) << 20;

/* The queue whose work runs on this thread's fiber right now (WorkFibers::current). */
thread_local WorkFibers *tlsRunning = nullptr;

}  // namespace

struct WorkFibers::Fiber {
  ucontext_t caller{}, work{};
  char *mapping = nullptr;
  size_t mappingBytes = 0, guardBytes = 0;
};

WorkFibers::WorkFibers() : fiber_(std::make_unique<Fiber>()) {
  Fiber &f = *fiber_;
  f.guardBytes = (size_t)sysconf(_SC_PAGESIZE);
  f.mappingBytes = f.guardBytes + kStackBytes;
  void *p = mmap(nullptr, f.mappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) fail("cannot map the %zu-byte stack of the collectives' fiber: %s", f.mappingBytes, std::strerror(errno));
  f.mapping = static_cast<char *>(p);
  if (mprotect(f.mapping, f.guardBytes, PROT_NONE) != 0)
    fail("cannot protect the guard page of the collectives' fiber: %s", std::strerror(errno));
}

WorkFibers::~WorkFibers() {
  try {
    waitAll();  // no work may stay suspended on the stack about to be unmapped
  } catch (...) {
  }
  munmap(fiber_->mapping, fiber_->mappingBytes);
}

WorkFibers *WorkFibers::current() { return tlsRunning; }

uint64_t WorkFibers::submit(std::function<void()> work) {
  if (current()) fail("a collective was started from inside another collective's work");
  work_.push_back(std::move(work));
  ++submitted_;
  if (work_.size() == 1) progress();
  return submitted_;
}

void WorkFibers::progress() {
  if (current()) fail("the collectives' fiber was progressed from inside its own work");
  while (!work_.empty() && !error_) {
    resume();
    if (running_) return;  // it yields: back to the executor
  }
  dropAfterError();
}

void WorkFibers::wait(uint64_t ticket) {
  if (current()) fail("a collective's work waited for the collectives' fiber it runs on");
  struct Reset {
    bool &flag;
    ~Reset() { flag = false; }
  } reset{waiting_};
  waiting_ = true;
  // A work that still yields (it tests rather than blocks) is resumed at once.
  while (done_ < ticket && !work_.empty() && !error_) resume();
  dropAfterError();
  if (error_) std::rethrow_exception(error_);
}

void WorkFibers::dropAfterError() {
  if (!error_ || running_) return;
  done_ += work_.size();
  work_.clear();
}

void WorkFibers::yield() {
  if (tlsRunning != this) fail("a collective yielded outside its fiber");
  swapcontext(&fiber_->work, &fiber_->caller);
}

void WorkFibers::resume() {
  Fiber &f = *fiber_;
  if (!running_) {  // a fresh context for the front work, on the shared stack
    if (getcontext(&f.work) != 0) fail("getcontext failed for the collectives' fiber: %s", std::strerror(errno));
    f.work.uc_stack.ss_sp = f.mapping + f.guardBytes;
    f.work.uc_stack.ss_size = kStackBytes;
    f.work.uc_link = nullptr;  // entry() never returns: it switches back itself
    makecontext(&f.work, &WorkFibers::entry, 0);
    running_ = true;
  }
  tlsRunning = this;
  swapcontext(&f.caller, &f.work);
  tlsRunning = nullptr;
  if (!running_) {  // it ended
    work_.pop_front();
    ++done_;
  }
}

/* The fiber's body: the front work, its error kept. Everything it owns is destroyed
   before the last switch (the std::function is work_'s, popped by resume()). */
void WorkFibers::entry() {
  WorkFibers &q = *tlsRunning;
  try {
    q.work_.front()();
  } catch (...) {
    if (!q.error_) q.error_ = std::current_exception();
  }
  q.running_ = false;
  setcontext(&q.fiber_->caller);
}

}  // namespace lmrt::comm
