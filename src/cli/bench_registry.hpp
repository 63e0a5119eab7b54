// Benchmarks under `tierzero bench <name>` register themselves, like subcommands
// (cli/command_registry.hpp): each cli/bench_<name>.cpp defines
//   const bool <name>_registered = tz::cli::register_bench({"<name>", "one-line help", setup});
// where setup(CLI::App& sub) declares the benchmark's options and returns the function that runs it.
// cmd_bench.cpp turns every registered benchmark into a sub-subcommand of `tierzero bench`.
#pragma once

#include "cli/command_registry.hpp"

namespace tz::cli {

bool register_bench(CommandSpec spec);
const std::vector<CommandSpec>& registered_benches();

}  // namespace tz::cli
