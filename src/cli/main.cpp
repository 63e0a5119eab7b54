// tierzero: topology-aware sharded data-parallel training. Subcommands live in cli/cmd_*.cpp.
#include <fmt/format.h>

#include <exception>
#include <map>

#include "cli/command_registry.hpp"
#include "core/error.hpp"

namespace tz::cli {

static std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}

bool register_command(CommandSpec spec) {
  registry().push_back(std::move(spec));
  return true;
}

const std::vector<CommandSpec>& registered_commands() {
  return registry();
}

}  // namespace tz::cli

int main(int argc, char** argv) {
  CLI::App app{"tierzero: topology-aware sharded data parallelism for training large language models"};
  app.require_subcommand(1);
  std::map<CLI::App*, tz::cli::RunFn> runs;
  for (const auto& cmd : tz::cli::registered_commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    runs[sub] = cmd.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runs) {
      if (sub->parsed()) return run();
    }
  } catch (const tz::InputError& e) {
    fmt::print(stderr, "tierzero: error: {}\n", e.what());
    return 2;
  } catch (const tz::CommError& e) {
    fmt::print(stderr, "tierzero: communication error: {}\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tierzero: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
