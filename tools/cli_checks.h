/* Implements: the command-line rules `lmc` and `lmrt` share, applied once in each
   tool's main rather than flag by flag (docs/runtime.md, "Paths"):
   - an empty flag value (`--seed ''`, `-o ''`) is an error naming the flag, never
     the flag's default: a script whose variable came out empty must not train
     with seed 1 or write `x.plan` in the current directory;
   - standard output is checked when the command ends: a result printed into a
     full disk or a closed pipe is lost, and the exit status says so. */
#pragma once
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

namespace lmc_tools {

/* Adds the empty-value check to every option that takes a value, in `app` and
   all of its subcommands; `textOptions` are those whose empty value means
   something (lmrt sample's `--prompt ''`: no prompt). Call after every option
   is added. */
inline void refuseEmptyValues(CLI::App &app, const std::set<std::string> &textOptions) {
  CLI::Validator nonEmpty(
      [](std::string &value) {
        return value.empty() ? std::string("an empty value; give one, or leave the flag out for its default")
                             : std::string();
      },
      "NONEMPTY", "non-empty");
  for (CLI::Option *opt : app.get_options())
    if (opt->get_type_size() != 0 && !textOptions.count(opt->get_name())) opt->check(nonEmpty);
  for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
    refuseEmptyValues(*sub, textOptions);
}

/* Flushes stdout (stdio, and so std::cout) and returns 0 when everything printed
   reached it; otherwise prints "TOOL: error: cannot write to standard output:
   WHY" on stderr and returns 1, the command's exit status. */
inline int finishStdout(const char *tool) {
  int error = std::fflush(stdout) != 0 ? errno : 0;
  if (!error && !std::ferror(stdout)) return 0;
  std::fprintf(stderr, "%s: error: cannot write to standard output: %s\n", tool,
               error ? std::strerror(error) : "an earlier write failed");
  return 1;
}

}  // namespace lmc_tools
