/* Implements: the `lmrt` main, a thin CLI11 shell over the subcommands that
   register themselves from cmd_*.cpp (see commands.h). Every failure ends as
   "lmrt: error: <what and where>" and exit status 1; bad flags get CLI11's
   message and a non-zero status. */
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/tensor.h"
#include "tools/lmrt/commands.h"

namespace {

/* An idle OpenMP thread spins 300,000 rounds (milliseconds) before it sleeps. On a
   machine shared with other jobs that spinning holds the cores the team is waiting
   for: with 10 other runnable jobs a GPT training step took 1.8 s instead of 0.6 s
   with a 10,000-round spin, while on an idle machine the two are equally fast
   (docs/runtime.md, "Threads"). libgomp reads GOMP_SPINCOUNT once, when it loads,
   before main, so lmrt re-executes itself with it set, unless the user chose a
   spin count or a wait policy, or valgrind runs it (it would not follow the exec). */
void shortOpenMPSpin(char **argv) {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  const char *preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "vgpreload")) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the defaults
}

}  // namespace

int main(int argc, char **argv) {
  shortOpenMPSpin(argv);
  CLI::App app{"lmrt: runs plans compiled by lmc (train, evaluate, sample, check gradients)"};
  app.name("lmrt");
  app.require_subcommand(1);
  std::vector<lmrt::Command> commands = lmrt::commandRegistry();
  std::sort(commands.begin(), commands.end(), [](const lmrt::Command &a, const lmrt::Command &b) {
    return std::string(a.name) < b.name;
  });
  for (const lmrt::Command &c : commands) c.add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  } catch (const lmrt::Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lmrt: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc &) {
    std::fflush(stdout);
    std::fprintf(stderr, "lmrt: error: out of memory\n");
    return 1;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lmrt: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
