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

// A plan's placements as the tables print them, "W_fwd W_bwd G O" (e.g. "gcd node system system"),
// and its quantization ("qwZ", "qgZ", "qwZ+qgZ" or "-").
std::string placement_summary(const Topology& topo, const PartitionPlan& plan);
std::string quant_summary(const PartitionPlan& plan);

// One row per plan; a "coll" column says hierarchical (hier) or flat collectives. Every column is as
// wide as its longest entry (a long placement such as "system+node gcd node system" or a user's tier
// names keep the table aligned).
std::string format_cost_table(const Topology& topo, const std::vector<CostRow>& rows);
nlohmann::json cost_to_json(const Topology& topo, const PartitionPlan& plan, const StepCost& cost);

// `plan --explain`: the step total and its parts, what bounds it, then one row per collective purpose
// and tier: scheduled collectives, messages, bytes, busy time split into latency, bandwidth,
// reductions and kernels, exposed time, and how it was priced (a measured curve or the closed form).
// The rows' exposed times plus compute, kernels and optimizer add up to the step time.
// Ends with the critical path (format_critical_path).
std::string format_explain(const Topology& topo, const PartitionPlan& plan, const StepCost& cost);
// The steady step's critical path, consecutive operations of one kind on one line (start, seconds,
// stream, how many, the first and last); its total equals the step time. Empty without overlap.
std::string format_critical_path(const StepCost& cost);

}  // namespace tz::perf
