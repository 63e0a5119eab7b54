// Subcommands of the `tierzero` binary register themselves: each cli/cmd_<name>.cpp defines a static
//   const bool <name>_registered = tz::cli::register_command({"<name>", "one-line help", setup});
// where setup(CLI::App& sub) declares the subcommand's options and returns the function that runs it
// (returning the process exit code). main.cpp parses, then runs the chosen one. The flag carries the
// command's name because the CI builds compile several files as one unit (CMAKE_UNITY_BUILD).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tz::cli {

using RunFn = std::function<int()>;

struct CommandSpec {
  std::string name;
  std::string help;
  std::function<RunFn(CLI::App& sub)> setup;
};

bool register_command(CommandSpec spec);
const std::vector<CommandSpec>& registered_commands();

}  // namespace tz::cli
