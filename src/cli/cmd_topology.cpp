// `tierzero topology`: print a topology (preset or file), its tiers, groups and domains.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/topology_args.hpp"
#include "topology/topology.hpp"

namespace tz::cli {
namespace {

struct TopologyArgs {
  std::string topology = "frontier";
  std::optional<int> nodes, world_size;
  std::string format = "text";
};

int run_topology(const TopologyArgs& args) {
  Topology topo = Topology::load(args.topology);
  if (args.nodes || args.world_size || topo.resolved())
    topo = resolve_topology(args.topology, args.nodes, args.world_size);
  if (args.format == "json") {
    fmt::print("{}\n", topo.to_json().dump(2));
    return 0;
  }
  fmt::print("topology {}: {}\n", topo.name(), topo.description());
  fmt::print("{:<4} {:<10} {:>7} {:>15} {:>11}\n", "tier", "name", "fanout", "bandwidth_GBps", "latency_us");
  for (int t = 0; t < topo.num_tiers(); ++t) {
    const Tier& tier = topo.tier(t);
    fmt::print("{:<4} {:<10} {:>7} {:>15g} {:>11g}{}\n", t, tier.name, tier.fanout, tier.bandwidth_GBps,
               tier.latency_us, t == topo.host_tier() ? "   (one host)" : "");
  }
  if (!topo.resolved()) {
    fmt::print("outermost fan-out is \"auto\": pass --nodes or --world-size to lay out ranks\n");
    return 0;
  }
  fmt::print("world: {} ranks\n", topo.world_size());
  for (int r = 0; r < std::min(topo.world_size(), 64); ++r) {
    fmt::print("rank {:>3}  coords [{}]", r, fmt::join(topo.coords(r), ", "));
    for (int t = 0; t < topo.num_tiers(); ++t)
      fmt::print("  {}-group {{{}}}", topo.tier(t).name, fmt::join(topo.group_ranks(r, tier_bit(t)), ","));
    fmt::print("\n");
  }
  return 0;
}

const bool topology_registered =
    register_command({"topology", "Show a topology preset or file: tiers, rank coordinates, groups",
                      [](CLI::App& sub) -> RunFn {
                        auto args = std::make_shared<TopologyArgs>();
                        OptionSet o(sub, "topology");
                        o.text("topology", args->topology, "preset name or JSON file");
                        auto* nodes = o.integer("--nodes", args->nodes, 1, kMaxWorldRanks,
                                                "units of the outermost tier (resolves an \"auto\" fan-out)",
                                                "the topology's");
                        auto* world = o.integer("--world-size", args->world_size, 1, kMaxWorldRanks,
                                                "ranks in all (instead of --nodes)", "the topology's");
                        nodes->excludes(world);
                        o.choice("--format", args->format, {"text", "json"}, "output format");
                        return [args] { return run_topology(*args); };
                      }});

}  // namespace
}  // namespace tz::cli
