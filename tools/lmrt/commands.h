/* Implements: the registry of `lmrt` subcommands. Each cmd_*.cpp file registers
   itself with a static RegisterCommand, so the main stays a thin CLI11 shell. */
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace lmrt {

struct Command {
  const char *name;
  /* Adds the subcommand (options + callback) to `app`. The callback throws
     lmrt::Error on failure; the main prints it and exits with status 1. */
  void (*add)(CLI::App &app);
};

inline std::vector<Command> &commandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

struct RegisterCommand {
  RegisterCommand(const char *name, void (*add)(CLI::App &)) {
    commandRegistry().push_back({name, add});
  }
};

}  // namespace lmrt
