/* Implements: the `lmrt` main, a thin CLI11 shell over the subcommands that
   register themselves from cmd_*.cpp (see commands.h). Every failure ends as
   "lmrt: error: <what and where>" and exit status 1; bad flags (an empty value
   included) get CLI11's message and a non-zero status, and a result that could
   not be written to stdout is a failure (tools/cli_checks.h). */
#include <pthread.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/tensor.h"
#include "contract/plan_trust.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/exec/bound_plan.h"
#include "runtime/train/signals.h"
#include "tools/cli_checks.h"
#include "tools/lmrt/commands.h"

namespace {

/* lmrt re-executes itself once, at the start, for two things that must be in
   place before the shared libraries' constructors run, which is before main:
   - SIGTERM and SIGINT blocked (signals.h): OpenBLAS starts its worker threads in
     its constructor, and a thread inherits its creator's mask; a signal mask
     survives exec, so in the new image every thread has them blocked and only
     the signal thread (routeStopSignals) takes them;
   - GOMP_SPINCOUNT: an idle OpenMP thread spins 300,000 rounds (milliseconds)
     before it sleeps. On a machine shared with other jobs that spinning holds the
     cores the team is waiting for: with 10 other runnable jobs a GPT training step
     took 1.8 s instead of 0.6 s with a 10,000-round spin, while on an idle machine
     the two are equally fast (docs/runtime.md, "Threads"). libgomp reads it once,
     when it loads; the user's own spin count or wait policy is kept.
   The image started with the signals blocked is the re-executed one (or one whose
   parent blocked them, which serves as well). Under valgrind (which would not
   follow the exec) nothing is done. */
void reexecWithSignalsBlocked(char **argv) {
  sigset_t now;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &now) != 0) return;
  if (sigismember(&now, SIGTERM) && sigismember(&now, SIGINT)) return;
  const char *preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "vgpreload")) return;
  if (!std::getenv("GOMP_SPINCOUNT") && !std::getenv("OMP_WAIT_POLICY")) setenv("GOMP_SPINCOUNT", "10000", 1);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  execv("/proc/self/exe", argv);
  // Only on failure: carry on, with the signals taken by the signal thread from now on.
}

/* "lmrt: error: ..." (with the rank in a run of several processes); then, in such a
   run, every rank is ended (MPI_Abort), so that none waits forever in a collective
   this one will never join (docs/distributed.md, "Errors"). */
int reportError(const char *what) {
  std::fflush(stdout);
  lmrt::comm::Communicator &world = lmrt::comm::world();
  if (world.size() > 1) {
    std::fprintf(stderr, "lmrt: error: rank %d of %d: %s\n", world.rank(), world.size(), what);
    std::fflush(stderr);
    world.abort(1);
  } else {
    std::fprintf(stderr, "lmrt: error: %s\n", what);
  }
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  reexecWithSignalsBlocked(argv);
  lmrt::routeStopSignals();
  // Started by mpirun or srun as one of several processes: the ranks join over MPI
  // before anything else (docs/distributed.md).
  try {
    lmrt::comm::LaunchEnv env = lmrt::comm::launchEnv();
    if (env.size > 1) lmrt::comm::setWorld(lmrt::comm::makeMpiCommunicator(env));
  } catch (const lmrt::Error &e) {
    return reportError(e.what());
  }
  CLI::App app{"lmrt: runs plans compiled by lmc (train, evaluate, sample, check gradients)"};
  app.name("lmrt");
  app.require_subcommand(1);
  app.fallthrough();  // the global options below may follow the subcommand too
  // Plan trust (docs/plan-format.md, "Trust"): the keys are read as they are parsed,
  // before any subcommand loads a plan.
  std::vector<std::string> trustKeyPaths;
  if (const char *env = std::getenv("LMRT_TRUSTED_KEYS")) {
    std::string list = env;
    for (size_t at = 0; at <= list.size();) {
      size_t colon = std::min(list.find(':', at), list.size());
      if (colon > at) trustKeyPaths.push_back(list.substr(at, colon - at));
      at = colon + 1;
    }
  }
  auto trust = [&trustKeyPaths] { lmrt::setTrustedPlanKeys(lmrt::readTrustedKeys(trustKeyPaths)); };
  app.add_option_function<std::vector<std::string>>(
         "--trust-key",
         [&](const std::vector<std::string> &paths) {
           trustKeyPaths.insert(trustKeyPaths.end(), paths.begin(), paths.end());
           trust();
         },
         "Run only plans signed by this Ed25519 public key (PEM; repeatable; also $LMRT_TRUSTED_KEYS, "
         "colon-separated): a plan is native code")
      ->trigger_on_parse();
  std::vector<lmrt::Command> commands = lmrt::commandRegistry();
  std::sort(commands.begin(), commands.end(), [](const lmrt::Command &a, const lmrt::Command &b) {
    return std::string(a.name) < b.name;
  });
  for (const lmrt::Command &c : commands) c.add(app);
  // The prompt is text, and the empty text is a prompt (a new document).
  lmc_tools::refuseEmptyValues(app, {"--prompt"});
  try {
    if (!trustKeyPaths.empty()) trust();
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  } catch (const lmrt::Error &e) {
    return reportError(e.what());
  } catch (const std::bad_alloc &) {
    return reportError("out of memory");
  } catch (const std::exception &e) {
    return reportError(e.what());
  }
  // What the command printed (samples, an inspection, eval's numbers) must have
  // reached stdout, or the run did not do its job.
  return lmc_tools::finishStdout("lmrt");
}
