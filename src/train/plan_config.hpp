// A partition plan written as training configuration, so that a plan the planner chose (or any plan)
// can be handed to `tierzero train --config`: the plan's placements, quantization, collectives and
// options become the DeepSpeed-style keys (train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, bf16) and the "tierzero" section ("plan": "custom", "plan_name",
// W_fwd, W_bwd, G, O, qwz, qgz, collectives, prefetch_depth, quant_block_size). Reading the block
// back with TrainConfig::from_json and plan_from_config gives the same plan: same tiers, same
// options, same name.
#pragma once

#include <nlohmann/json.hpp>

#include "plan/partition_plan.hpp"
#include "topology/topology.hpp"
#include "train/train_config.hpp"

namespace tz {

// `config` with its plan replaced by `plan` (over `topo`): every placement named explicitly, no
// preset and no DeepSpeed ZeRO++/MiCS sizes left to reinterpret it; micro-batch, accumulation and
// dtype follow the plan. The rest of the configuration (optimizer, steps, ...) is kept.
TrainConfig with_plan(TrainConfig config, const PartitionPlan& plan, const Topology& topo);

// The configuration keys that stand for `plan`: {"train_micro_batch_size_per_gpu", ...,
// "bf16": {"enabled"}, "tierzero": {...}}; `activation_recompute` is written into the tierzero
// section (the cost model's assumption the run should share).
nlohmann::json plan_config_json(const PartitionPlan& plan, const Topology& topo, bool activation_recompute);

// True when the two plans have the same tiers and options (names may differ).
bool same_plan(const PartitionPlan& a, const PartitionPlan& b);

}  // namespace tz
