#include "cli/command_registry.hpp"

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
