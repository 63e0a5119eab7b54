// Laying a topology over a world size from the options of `plan`, `simulate` and `topology`
// (--nodes or --world-size, never both: the options exclude each other): the product of the
// fan-outs is computed without overflow and bounded by kMaxWorldRanks, so `--nodes 536870913` is an
// error naming --nodes and the world it would make, not a silent wrap-around.
#pragma once

#include <optional>
#include <string>

#include "topology/topology.hpp"

namespace tz::cli {

constexpr long long kMaxWorldRanks = 1LL << 20;

// `nodes`: units of the outermost tier; `world_size`: ranks in all. Neither: the topology must fix
// its own size (InputError naming both options otherwise).
Topology resolve_topology(const std::string& name, std::optional<int> nodes, std::optional<int> world_size);

// The ranks `nodes` outer units make on `topo`, checked: InputError naming --nodes past kMaxWorldRanks.
int world_of_nodes(const Topology& topo, long long nodes);

}  // namespace tz::cli
