// tierzero: topology-aware sharded data-parallel training. The subcommands live in cli/cmd_*.cpp;
// cli/cli_main.cpp parses and runs them.
#include "cli/cli_main.hpp"

int main(int argc, char** argv) {
  return tz::cli::run_cli(argc, argv);
}
