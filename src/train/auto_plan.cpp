#include "train/auto_plan.hpp"

#include "core/error.hpp"
#include "train/plan_config.hpp"
#include "train/train_run.hpp"

namespace tz {
namespace {

// A key that fixes part of the plan contradicts "auto": refuse it rather than silently override it.
void check_nothing_fixed(const TrainConfig& c) {
  auto refuse = [](const char* key) {
    fail_input(
        "config: {} fixes part of the plan, but tierzero.plan is \"auto\" (the planner chooses it): "
        "remove one of them",
        key);
  };
  if (!c.placement.w_fwd.empty()) refuse("tierzero.W_fwd");
  if (!c.placement.w_bwd.empty()) refuse("tierzero.W_bwd");
  if (!c.placement.g.empty()) refuse("tierzero.G");
  if (!c.placement.o.empty()) refuse("tierzero.O");
  if (c.qwz) refuse("qwz (tierzero.qwz or zero_optimization.zero_quantized_weights)");
  if (c.qgz) refuse("qgz (tierzero.qgz or zero_optimization.zero_quantized_gradients)");
  if (c.hpz || c.hpz_partition_size > 0)
    refuse("hpz (tierzero.hpz or zero_optimization.zero_hpz_partition_size)");
  if (c.mics_shard_size > 0) refuse("zero_optimization.mics_shard_size");
  if (!c.collectives.empty()) refuse("tierzero.collectives");
}

}  // namespace

AutoPlan choose_auto_plan(const TrainConfig& config, const GptConfig& model, const Topology& topo) {
  TZ_CHECK(config.plan == kAutoPlan, "choose_auto_plan for plan '{}'", config.plan);
  check_nothing_fixed(config);
  if (!topo.resolved()) fail_input("--plan auto: topology {} is not resolved to a world size", topo.name());
  const int seq = config.seq_len > 0 ? config.seq_len : model.n_positions;
  if (seq > model.n_positions)
    fail_input("config: tierzero.sequence_length {} exceeds the model's n_positions {}", seq,
               model.n_positions);
  AutoPlan out;
  out.model.name = "run";
  out.model.config = model;
  out.model.seq = seq;
  // The options the search keeps fixed are the run's, read as the run would read them.
  TrainConfig fixed = config;
  fixed.plan = "ddp";
  const PlanOptions base = plan_from_config(fixed, model, topo).options();
  out.cost_options.recompute = config.activation_recompute;
  out.cost_options.runtime = perf::Runtime::tierzero;
  out.cost_options.boundary =
      perf::BoundaryMode::pipelined;  // as the engine runs the boundary (its step graph)
  out.ranked = perf::search_plans(out.model, topo, base, out.cost_options);
  if (out.ranked.empty()) fail_input("--plan auto: no consistent plan over topology {}", topo.name());
  const PartitionPlan& best = out.ranked.front().plan;
  out.config = with_plan(config, best, topo);
  // The run must be the plan that was priced: build it the way the run will.
  const PartitionPlan built = plan_from_config(out.config, model, topo);
  TZ_CHECK(same_plan(built, best), "plan from config {} differs from the chosen {}", built.name(),
           best.name());
  return out;
}

}  // namespace tz
