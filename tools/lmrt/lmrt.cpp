/* Implements: the `lmrt` main, a thin CLI11 shell over the subcommands that
   register themselves from cmd_*.cpp (see commands.h). Every failure ends as
   "lmrt: error: <what and where>" and exit status 1; bad flags get CLI11's
   message and a non-zero status. */
#include <algorithm>
#include <cstdio>
#include <new>

#include "runtime/lmrt/tensor.h"
#include "tools/lmrt/commands.h"

int main(int argc, char **argv) {
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
