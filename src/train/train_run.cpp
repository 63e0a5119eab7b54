#include "train/train_run.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/parameter_layout.hpp"
#include "model/range_schedule.hpp"
#include "plan/shard_layout.hpp"
#include "plan/step_schedule.hpp"

namespace tz {
namespace {

LrSchedule schedule_from_config(const TrainConfig& c) {
  const ScheduleConfig& s = c.schedule;
  const int total = s.total_steps > 0 ? s.total_steps : c.train_steps;
  const float lr = static_cast<float>(c.adamw.lr);
  const WarmupType warmup = s.warmup_type == "linear" ? WarmupType::linear : WarmupType::log;
  if (s.type == "cosine")
    return {.max_lr = lr,
            .min_lr = static_cast<float>(c.adamw.lr * s.min_lr_ratio),
            .warmup_steps = s.warmup_steps,
            .decay_steps = std::max(total, s.warmup_steps + 1)};
  if (s.type == "WarmupLR" || s.type == "WarmupDecayLR")
    return {.max_lr = static_cast<float>(s.warmup_max_lr.value_or(kDeepSpeedWarmupMaxLr)),
            .min_lr = static_cast<float>(s.warmup_min_lr),
            .warmup_steps = s.warmup_steps,
            .decay_steps = total,
            .kind = s.type == "WarmupLR" ? LrScheduleKind::warmup : LrScheduleKind::warmup_decay,
            .warmup_type = warmup};
  if (s.type == "WarmupCosineLR") {
    if (total <= std::max(2, s.warmup_steps))
      fail_input(
          "config: scheduler WarmupCosineLR needs total_num_steps ({}) above warmup_num_steps ({}, at least "
          "2 as "
          "DeepSpeed counts it): its cosine divides by their difference",
          total, std::max(2, s.warmup_steps));
    return {.max_lr = lr,
            .min_lr = 0,
            .warmup_steps = s.warmup_steps,
            .decay_steps = total,
            .kind = LrScheduleKind::warmup_cosine,
            .warmup_type = warmup,
            .warmup_min_ratio = static_cast<float>(s.warmup_min_ratio),
            .cos_min_ratio = static_cast<float>(s.cos_min_ratio)};
  }
  fail_input("config: unknown learning-rate schedule \"{}\"", s.type);
}

}  // namespace

int prefetch_depth_for(long long prefetch_elements, const GptConfig& model) {
  const ParameterLayout params(model);
  const long long largest = static_cast<long long>(params.max_range_numel());
  const long long ranges = params.num_ranges() - 1;  // beyond the one computing
  return static_cast<int>(std::clamp(prefetch_elements / std::max(1LL, largest), 0LL, ranges));
}

PartitionPlan plan_from_config(const TrainConfig& c, const GptConfig& model, const Topology& topo) {
  if (c.plan == kAutoPlan)
    fail_input(
        "config: tierzero.plan \"auto\" is resolved by the planner before the run is built "
        "(choose_auto_plan; tierzero train does it)");
  PlanSpec spec;
  spec.preset = c.plan == kCustomPlan ? std::string() : c.plan;
  spec.name = c.plan_name;
  if (c.mics_shard_size > 0) spec.preset_args.partition_size = c.mics_shard_size;
  if (c.hpz_partition_size > 0) spec.preset_args.hpz_partition_size = c.hpz_partition_size;
  if (c.hpz) {
    spec.preset_args.hpz = *c.hpz;
    spec.hpz_given = true;
  }
  auto set = [](std::optional<std::string>& dst, const std::string& v) {
    if (!v.empty()) dst = v;
  };
  set(spec.w_fwd, c.placement.w_fwd);
  set(spec.w_bwd, c.placement.w_bwd);
  set(spec.grad, c.placement.g);
  set(spec.optim, c.placement.o);
  spec.qwz = c.qwz;
  spec.qgz = c.qgz;
  if (c.quant_block_size > 0) spec.quant_block = c.quant_block_size;
  spec.prefetch_depth = c.prefetch_depth;
  if (c.prefetch_elements) spec.prefetch_depth = prefetch_depth_for(*c.prefetch_elements, model);
  spec.grad_accum_steps = c.grad_accum;
  spec.micro_batch_size = c.micro_batch;
  spec.dtype_mode = c.bf16 ? DTypeMode::bf16 : DTypeMode::fp32;
  if (!c.collectives.empty())
    spec.collectives = parse_collective_algo(c.collectives, "config: tierzero.collectives");
  return make_plan(spec, topo);
}

TrainRun make_train_run(const TrainConfig& c, const GptConfig& model, const Topology& topo, int world_size) {
  const int T = c.seq_len > 0 ? c.seq_len : model.n_positions;
  if (T > model.n_positions)
    fail_input("config: tierzero.sequence_length {} exceeds the model's n_positions {}", T,
               model.n_positions);
  if (c.global_batch && *c.global_batch != c.micro_batch * c.grad_accum * world_size)
    fail_input(
        "config: train_batch_size {} != train_micro_batch_size_per_gpu {} x gradient_accumulation_steps {} x "
        "{} ranks",
        *c.global_batch, c.micro_batch, c.grad_accum, world_size);
  TrainRun run;
  run.plan = plan_from_config(c, model, topo);
  run.steps = c.train_steps;
  run.log_every = c.steps_per_print;
  run.micro_batch = c.micro_batch;
  run.grad_accum = c.grad_accum;
  run.world_size = world_size;
  run.save = {.dir = c.save_dir, .every = c.save_every, .keep = c.keep};
  EngineOptions& eo = run.engine;
  eo.seq = T;
  eo.adamw = {.lr = static_cast<float>(c.adamw.lr),
              .beta1 = static_cast<float>(c.adamw.beta1),
              .beta2 = static_cast<float>(c.adamw.beta2),
              .eps = static_cast<float>(c.adamw.eps),
              .weight_decay = static_cast<float>(c.adamw.weight_decay)};
  eo.adamw.decoupled = c.adamw.decoupled_weight_decay;
  eo.schedule = schedule_from_config(c);
  eo.grad_clip = static_cast<float>(c.grad_clip);
  eo.seed = c.seed;
  eo.recompute = c.activation_recompute;
  eo.max_nonfinite_steps = c.max_nonfinite_steps;
  return run;
}

TrainOptions reference_options(const TrainRun& run) {
  TrainOptions o;
  o.batch = run.world_size * run.micro_batch;
  o.seq = run.engine.seq;
  o.grad_accum = run.grad_accum;
  o.adamw = run.engine.adamw;
  o.schedule = run.engine.schedule;
  o.grad_clip = run.engine.grad_clip;
  o.seed = run.engine.seed;
  o.threads = run.engine.threads;
  o.recompute = run.engine.recompute;
  return o;
}

std::map<std::string, double> step_bytes_per_tier(const GptConfig& model, const Topology& topo,
                                                  const PartitionPlan& plan) {
  const ParameterLayout params(model);
  std::vector<RangeSpec> ranges;
  for (const auto& r : params.ranges()) ranges.push_back({r.name, r.numel});
  const ShardLayout layout(ranges, topo, plan);
  return StepSchedule(layout, {forward_acquire_order(model), backward_acquire_order(model)}).bytes_per_tier();
}

}  // namespace tz
