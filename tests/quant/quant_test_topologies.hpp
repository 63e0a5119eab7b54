// Topologies for the quantized-collective tests: frontier-mini's three tiers (gcd, node, system)
// with fan-outs chosen to give world sizes 1, 2, 3, 4, 6 and 8 (8 = frontier-mini itself).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <vector>

#include "topology/topology.hpp"

namespace tz::quant_test {

inline Topology frontier_mini_with(std::array<int, 3> fanouts) {
  nlohmann::json doc = Topology::load("frontier-mini").to_json();
  for (int t = 0; t < 3; ++t) doc["tiers"][t]["fanout"] = fanouts[t];
  return Topology::from_json(doc, "frontier-mini-variant");
}

inline std::vector<Topology> test_topologies() {
  return {frontier_mini_with({1, 1, 1}),  frontier_mini_with({2, 1, 1}), frontier_mini_with({1, 3, 1}),
          frontier_mini_with({2, 2, 1}),  frontier_mini_with({2, 3, 1}), frontier_mini_with({3, 1, 2}),
          Topology::load("frontier-mini")};
}

inline std::vector<int> tiers_of(const Topology& topo, TierSet tiers) {
  std::vector<int> out;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if (tiers & tier_bit(t)) out.push_back(t);
  return out;
}

}  // namespace tz::quant_test
