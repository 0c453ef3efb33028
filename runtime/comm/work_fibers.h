/* Implements: the overlap of the collectives with the computation without a second
   thread (docs/distributed.md, "Buckets and overlap"). Work submitted here (a collective
   step, or a bucket of them) runs on a fiber of the calling thread: when it would wait
   for the other ranks it starts MPI's non-blocking call and yields back to the executor,
   which computes the next step and resumes it between steps (progress) to test the call
   and go on (the bucket's rank-order sum, the next MPI call, the copy back); a wait
   resumes it until it ends, its MPI calls now blocking.

   Why fibers and not a communication thread: with one core per rank (the 2-core
   machine, `--bind-to core`), Open MPI's busy-polling on a communication thread took the
   core from the backward, and the step ran 3x slower; here MPI only runs when the
   executor hands it the thread, for one MPI_Test between steps. Why fibers and not a
   state machine per collective: the work stays the ordinary code of the collective kernels
   (its buffers and counts stay on its stack while it is suspended), so every collective
   the executor starts overlaps, whatever its layout.

   The work runs one item at a time, in submission order, each to its end before the next
   starts, so the collectives of a program start in the same order on every rank whatever
   the timing, and they reuse one stack. Work that throws ends the queue: the later items
   are dropped (a collective after a failed one would wait for ranks that are not coming)
   and every wait rethrows the error. Not thread-safe: one thread submits, progresses and
   waits. */
#pragma once
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>

namespace lmrt::comm {

class WorkFibers {
public:
  WorkFibers();
  ~WorkFibers();  // finishes the submitted work, dropping its errors
  WorkFibers(const WorkFibers &) = delete;
  WorkFibers &operator=(const WorkFibers &) = delete;

  /* Queues `work`; when nothing runs before it, starts it at once (it runs until it
     first yields or ends). */
  uint64_t submit(std::function<void()> work);
  /* Resumes the running work once; when it ends, starts the next, and so on until one
     yields or none is left. Returns at once when there is none (cheap between steps). */
  void progress();
  /* Returns once the work of `ticket` and all before it has run; rethrows its error. */
  void wait(uint64_t ticket);
  /* wait() for everything submitted so far. */
  void waitAll() { wait(submitted_); }
  bool idle() const { return done_ == submitted_; }

  /* On a work's fiber: its queue; null elsewhere (the thread's own code). */
  static WorkFibers *current();
  /* On a work's fiber: whether the thread waits for this work (wait()): the work then
     blocks in MPI instead of yielding. */
  bool waiting() const { return waiting_; }
  /* On a work's fiber: gives the thread back to the code that resumed it (submit,
     progress); returns when it is resumed. */
  void yield();

private:
  struct Fiber;  // the context and the stack (ucontext), one for all work
  /* Runs the front work until it yields or ends; on its end, counts it done. */
  void resume();
  /* After an error: the work not started yet counts as done, never to run. */
  void dropAfterError();
  static void entry();

  std::unique_ptr<Fiber> fiber_;
  std::deque<std::function<void()>> work_;
  bool running_ = false;  // work_.front() has started and not ended
  bool waiting_ = false;
  uint64_t submitted_ = 0, done_ = 0;
  std::exception_ptr error_;
};

}  // namespace lmrt::comm
