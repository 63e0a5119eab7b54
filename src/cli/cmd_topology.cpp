// `tierzero topology`: print a topology (preset or file), its tiers, groups and domains.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/command_registry.hpp"
#include "topology/topology.hpp"

namespace tz::cli {
namespace {

struct TopologyArgs {
  std::string topology = "frontier-mini";
  int world_size = 0;
  std::string format = "text";
};

int run_topology(const TopologyArgs& args) {
  Topology topo = Topology::load(args.topology);
  if (args.world_size > 0 || topo.resolved())
    topo = topo.resolve(args.world_size > 0 ? args.world_size : topo.world_size());
  if (args.format == "json") {
    fmt::print("{}\n", topo.to_json().dump(2));
    return 0;
  }
  fmt::print("topology {}: {}\n", topo.name(), topo.description());
  fmt::print("{:<4} {:<10} {:>7} {:>15} {:>11}\n", "tier", "name", "fanout", "bandwidth_gbps", "latency_us");
  for (int t = 0; t < topo.num_tiers(); ++t) {
    const Tier& tier = topo.tier(t);
    fmt::print("{:<4} {:<10} {:>7} {:>15g} {:>11g}{}\n", t, tier.name, tier.fanout, tier.bandwidth_gbps,
               tier.latency_us, t == topo.host_tier() ? "   (one host)" : "");
  }
  if (!topo.resolved()) {
    fmt::print("outermost fan-out is \"auto\": pass --world-size to lay out ranks\n");
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

const bool registered = register_command(
    {"topology", "Show a topology preset or file: tiers, rank coordinates, groups",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<TopologyArgs>();
       sub.add_option("topology", args->topology, "preset name or JSON file")->capture_default_str();
       sub.add_option("--world-size", args->world_size,
                      "resolve an \"auto\" outer fan-out to this many ranks");
       sub.add_option("--format", args->format, "text or json")
           ->check(CLI::IsMember({"text", "json"}))
           ->capture_default_str();
       return [args] { return run_topology(*args); };
     }});

}  // namespace
}  // namespace tz::cli
