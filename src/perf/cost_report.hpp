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

std::string format_cost_table(const Topology& topo, const std::vector<CostRow>& rows);
nlohmann::json cost_to_json(const Topology& topo, const PartitionPlan& plan, const StepCost& cost);

}  // namespace tz::perf
