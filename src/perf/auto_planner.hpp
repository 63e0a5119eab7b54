// The auto-planner: every consistent plan over a topology, priced by the cost model, best first.
// Search space: placements of (W_fwd, W_bwd, G, O), each a tier or replicated, that pass
// PartitionPlan::validate (tier(W_bwd) <= tier(W_fwd), tier(G) <= tier(O), ...), times qwZ on/off
// (when W_fwd is sharded) and qgZ on/off (when G is sharded), times the collective algorithm
// (hierarchical, and flat where the plan has a collective over more than one non-trivial tier; a
// plan whose collectives all stay on one tier runs the same either way and is listed once, as
// hierarchical). Options other than these (micro-batch, accumulation, prefetch, dtype) come from `base`.
// Ranking: plans that fit device memory, by predicted step time; plans that do not fit follow, also by step
// time.
#pragma once

#include <vector>

#include "perf/step_cost.hpp"

namespace tz::perf {

struct PlanCandidate {
  PartitionPlan plan;
  StepCost cost;
};

// A name for a searched plan, e.g. "W=gcd/node G=node O=system +qwZ" (" flat" appended for flat
// collectives).
std::string search_plan_name(const Topology& topo, const PartitionPlan::Tiers& tiers, bool qwz, bool qgz,
                             CollectiveAlgo collectives = CollectiveAlgo::hierarchical);

std::vector<PlanCandidate> search_plans(const ModelShape& model, const Topology& topo,
                                        const PlanOptions& base, const CostOptions& options = {});

}  // namespace tz::perf

namespace tz::perf {

// The preset `name` over `topo` with `base`'s options, keeping the quantization the preset sets
// (zeropp turns on qwZ and qgZ).
PartitionPlan preset_with_options(std::string_view name, const Topology& topo, const PlanOptions& base);

}  // namespace tz::perf
