// The `tierzero` command line as a function, so that tests run it in-process: builds the app from
// every registered subcommand (cli/command_registry.hpp), parses, runs the chosen one, and turns
// what it throws into one line on stderr and an exit code (cli/exit_codes.hpp). A bad option value
// or an unknown option is exit code 2 (bad input), like every other bad input; --help is 0.
#pragma once

#include <CLI/CLI.hpp>

#include <map>

#include "cli/command_registry.hpp"

namespace tz::cli {

// Declares every subcommand and its options on `app`; returns each subcommand's run function.
// Clears and refills option_rules() (cli/cli_options.hpp).
std::map<CLI::App*, RunFn> build_app(CLI::App& app);

int run_cli(int argc, const char* const* argv);

}  // namespace tz::cli
