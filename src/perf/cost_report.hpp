// Printing predicted step costs: a text table (one row per plan) and JSON, shared by `tierzero plan`
// and `tierzero simulate`. Units: seconds, GB (1e9 bytes) per rank per step, GiB of memory.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "perf/step_cost.hpp"

namespace tz::perf {

struct CostRow {
  PartitionPlan plan;
  StepCost cost;
};

// The traffic columns of a set of costs: the topology's tiers, then every flat group label a row
// has (plans with collectives = flat), in order of first appearance.
std::vector<std::string> traffic_columns(const Topology& topo, const std::vector<StepCost>& costs);
// Bytes per rank per step a cost books under `label` (0 when it has no such row).
double traffic_bytes(const StepCost& cost, const std::string& label);

// One row per plan; a "coll" column says hierarchical (hier) or flat collectives.
std::string format_cost_table(const Topology& topo, const std::vector<CostRow>& rows);
nlohmann::json cost_to_json(const Topology& topo, const PartitionPlan& plan, const StepCost& cost);

}  // namespace tz::perf
