// `--plan auto`: the cost model's best partition plan for a training run. The planner
// (perf/auto_planner.hpp) searches every consistent plan over the run's topology for the run's model,
// sequence length, micro-batch, accumulation, prefetch depth, quantization block and dtype, prices
// each as tierzero's engine runs it (its per-range collectives, the step boundary as the engine
// runs it today, activation recomputation as the run asks) and ranks the plans that fit the device's
// memory first, by predicted step time. The first becomes the run's plan through the same
// configuration keys a user would write (train/plan_config.hpp), so the run is exactly what
// `tierzero train --config` of the emitted block runs.
#pragma once

#include <vector>

#include "model/gpt_config.hpp"
#include "perf/auto_planner.hpp"
#include "topology/topology.hpp"
#include "train/train_config.hpp"

namespace tz {

struct AutoPlan {
  perf::ModelShape model;                   // what was priced (the run's sequence length)
  perf::CostOptions cost_options;           // how it was priced
  std::vector<perf::PlanCandidate> ranked;  // every consistent plan, best first
  TrainConfig config;                       // the input configuration with ranked[0] as its plan
};

// The planner's choice for `config` (whose plan is "auto") on the resolved `topo`. InputError when
// the configuration also fixes what the planner chooses (placements, quantization, collectives,
// ZeRO++/MiCS sizes), naming the key, or when no plan exists.
AutoPlan choose_auto_plan(const TrainConfig& config, const GptConfig& model, const Topology& topo);

}  // namespace tz
