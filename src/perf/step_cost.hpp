// The cost model of one training step (docs/cost_model.md): for a model, a resolved topology and a
// partition plan, the step time with its breakdown, the bytes per tier, TFLOPS per device and the
// memory per rank, and whether it fits.
//   bytes     the plan's StepSchedule (plan/step_schedule.hpp): the very list of collectives the
//             engine issues, priced tier step by tier step; bytes per tier are its bytes_per_tier().
//   comm time each tier step by perf/collective_time.hpp from the tier's bandwidth and latency; a
//             flat collective over a set of tiers (PlanOptions::collectives) is one ring over the
//             whole group at the outermost tier's per-rank bandwidth and latency.
//   compute   executed FLOPs (perf/step_flops.hpp) at achievable_fraction x the device's peak
//             (a roofline's compute roof: GPT matmuls at these shapes are compute-bound; the
//             fraction is a documented input, not fitted).
//   overlap   perf/overlap_schedule.hpp for the forward/backward collectives; the step-boundary
//             exchange, the scalars and the optimizer run exposed, one after another.
//   optimizer AdamW streams its O shard through memory once: kAdamBytesPerElement bytes per
//             element (fp32 master, m, v read and written, fp32 gradient read, compute-dtype weight
//             written) at the device's memory bandwidth.
//   memory    plan/memory_plan.hpp's states and buffers + perf/activation_memory.hpp's activations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "perf/model_shape.hpp"
#include "plan/memory_plan.hpp"
#include "plan/partition_plan.hpp"
#include "plan/shard_layout.hpp"
#include "plan/step_schedule.hpp"
#include "topology/topology.hpp"

namespace tz::perf {

inline constexpr double kAdamBytesPerElement = 4 * 3 * 2 + 4 + 2;

struct CostOptions {
  // Fraction of the device's peak FLOP/s the model's matmuls achieve. Default: the 38.4% of peak
  // Dash et al. (2023), "Optimizing Distributed Training on Frontier for Large Language Models",
  // measured for a 22B GPT on Frontier's MI250X.
  double achievable_fraction = 0.384;
  bool recompute = true;  // full activation recomputation (needed for a 20B model at s = 2048)
  bool overlap = true;    // overlap per-range gathers and reductions with compute
};

struct TierCost {
  std::string name;
  double bytes = 0;      // per rank per step (StepSchedule::bytes_per_tier)
  double busy_s = 0;     // time spent in this tier's collective steps
  double exposed_s = 0;  // share of the step's exposed communication (see docs/cost_model.md)
};

struct StepCost {
  std::string plan;
  int world_size = 0;
  double step_s = 0;
  double compute_s = 0;       // forward + backward (+ recompute)
  double exposed_comm_s = 0;  // step_s - compute_s - optimizer_s
  double optimizer_s = 0;
  double model_flops = 0;  // per rank per step
  double executed_flops = 0;
  double tflops_per_device = 0;  // model FLOPs / step time
  double tokens_per_step = 0;    // whole world
  // The schedule's labels (StepSchedule::labels): the topology's tiers innermost first, then the
  // flat groups of a plan with collectives = flat ("world", "gcd+node", ...).
  std::vector<TierCost> tiers;
  MemoryPlan memory;
  double capacity_bytes = 0;  // device memory; 0 = unknown
  bool fits = true;
};

// The shard layout and step schedule of a plan for the model (ranges and acquisition order from
// model/): what the engine runs and what the cost model and the simulator price.
struct PlannedStep {
  ShardLayout layout;
  StepSchedule schedule;
};
PlannedStep plan_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan);

// `topo` must be resolved; the plan's options give micro-batch size, accumulation, prefetch depth.
StepCost predict_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                      const CostOptions& options = {});

}  // namespace tz::perf
