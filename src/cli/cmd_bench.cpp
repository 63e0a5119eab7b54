// `tierzero bench <name>`: the group of benchmarks registered through cli/bench_registry.hpp
// (`bench comm` in cli/bench_comm.cpp; more are added by dropping in a cli/bench_<name>.cpp).
#include <map>

#include "cli/bench_registry.hpp"

namespace tz::cli {
namespace {

std::vector<CommandSpec>& benches() {
  static std::vector<CommandSpec> list;
  return list;
}

const bool bench_registered = register_command(
    {"bench", "Benchmarks: communication, kernels, ... (see bench --help)", [](CLI::App& sub) -> RunFn {
       sub.require_subcommand(1);
       auto runs = std::make_shared<std::map<CLI::App*, RunFn>>();
       for (const auto& b : registered_benches()) {
         CLI::App* app = sub.add_subcommand(b.name, b.help);
         (*runs)[app] = b.setup(*app);
       }
       return [runs]() -> int {
         for (auto& [app, run] : *runs)
           if (app->parsed()) return run();
         return 1;
       };
     }});

}  // namespace

bool register_bench(CommandSpec spec) {
  benches().push_back(std::move(spec));
  return true;
}

const std::vector<CommandSpec>& registered_benches() {
  return benches();
}

}  // namespace tz::cli
