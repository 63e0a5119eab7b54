#include "train/plan_config.hpp"

#include "collective/collective_plan.hpp"

namespace tz {

TrainConfig with_plan(TrainConfig c, const PartitionPlan& plan, const Topology& topo) {
  const PlanOptions& o = plan.options();
  c.plan = kCustomPlan;
  c.plan_name = plan.name();
  c.placement = {
      placement_name(topo, plan.tier(ModelState::w_fwd)), placement_name(topo, plan.tier(ModelState::w_bwd)),
      placement_name(topo, plan.tier(ModelState::grad)), placement_name(topo, plan.tier(ModelState::optim))};
  c.qwz = o.qwz;
  c.qgz = o.qgz;
  c.hpz.reset();
  c.hpz_partition_size = 0;
  c.mics_shard_size = 0;
  c.collectives = std::string(collective_algo_name(o.collectives));
  c.prefetch_depth = o.prefetch_depth;
  c.quant_block_size = o.quant_block;
  c.micro_batch = o.micro_batch_size;
  c.grad_accum = o.grad_accum_steps;
  c.global_batch.reset();  // the world decides it; a stale train_batch_size would contradict
  c.bf16 = o.dtype_mode == DTypeMode::bf16;
  return c;
}

nlohmann::json plan_config_json(const PartitionPlan& plan, const Topology& topo, bool activation_recompute) {
  const PlanOptions& o = plan.options();
  nlohmann::json t = {{"plan", kCustomPlan}, {"plan_name", plan.name()}};
  for (ModelState s : kModelStates) t[std::string(model_state_name(s))] = placement_name(topo, plan.tier(s));
  t["qwz"] = o.qwz;
  t["qgz"] = o.qgz;
  t["collectives"] = std::string(collective_algo_name(o.collectives));
  t["prefetch_depth"] = o.prefetch_depth;
  t["quant_block_size"] = o.quant_block;
  t["activation_recompute"] = activation_recompute;
  return {{"train_micro_batch_size_per_gpu", o.micro_batch_size},
          {"gradient_accumulation_steps", o.grad_accum_steps},
          {"bf16", {{"enabled", o.dtype_mode == DTypeMode::bf16}}},
          {"tierzero", t}};
}

bool same_plan(const PartitionPlan& a, const PartitionPlan& b) {
  const PlanOptions &x = a.options(), &y = b.options();
  return a.tiers() == b.tiers() && x.qwz == y.qwz && x.qgz == y.qgz && x.quant_block == y.quant_block &&
         x.prefetch_depth == y.prefetch_depth && x.grad_accum_steps == y.grad_accum_steps &&
         x.micro_batch_size == y.micro_batch_size && x.dtype_mode == y.dtype_mode &&
         x.collectives == y.collectives;
}

}  // namespace tz
