#include "cli/topology_args.hpp"

#include "core/error.hpp"

namespace tz::cli {

int world_of_nodes(const Topology& topo, long long nodes) {
  long long inner = 1;
  for (int t = 0; t + 1 < topo.num_tiers() && inner <= kMaxWorldRanks; ++t) inner *= topo.tier(t).fanout;
  if (nodes < 1 || inner > kMaxWorldRanks || nodes > kMaxWorldRanks / inner)
    fail_input("--nodes {}: topology {} has {} ranks per {} unit, so {} ranks; at most {} are supported",
               nodes, topo.name(), inner, topo.tiers().back().name,
               static_cast<double>(nodes) * double(inner), kMaxWorldRanks);
  return static_cast<int>(nodes * inner);
}

Topology resolve_topology(const std::string& name, std::optional<int> nodes, std::optional<int> world_size) {
  Topology topo = Topology::load(name);
  if (nodes) {
    world_of_nodes(topo, *nodes);
    return topo.resolve_outer(*nodes);
  }
  if (world_size) return topo.resolve(*world_size);
  if (!topo.resolved())
    fail_input("topology {}: its outermost fan-out is \"auto\": pass --nodes N or --world-size N",
               topo.name());
  return topo.resolve(topo.world_size());
}

}  // namespace tz::cli
