// Memory one rank of a training run needs, from sizes alone (nothing is allocated): the model states
// and working buffers of the plan (plan/memory_plan.hpp, what the engine allocates for states exactly)
// plus the activations the model allocates (model/activation_floats.hpp). Checked against the memory
// a rank may use before the engine is built, so a micro-batch of 10^9 is an error naming the option
// or key that set it, not std::bad_alloc.
#pragma once

#include <string>

#include "model/gpt_config.hpp"
#include "plan/memory_plan.hpp"
#include "topology/topology.hpp"
#include "train/train_run.hpp"

namespace tz {

struct RunMemory {
  MemoryPlan plan;              // states and working buffers (activations not included)
  double activation_bytes = 0;  // fp32 activations of one micro-batch
  double total_bytes() const { return double(plan.state_bytes() + plan.working_bytes()) + activation_bytes; }
};

RunMemory run_memory_per_rank(const GptConfig& model, const Topology& topo, const TrainRun& run);

// InputError when `need` exceeds `available_bytes`, naming the micro-batch and sequence length (and
// `micro_batch_origin`, the option or key that set the micro-batch), each part, and the memory there is.
void check_run_memory(const RunMemory& need, double available_bytes, const TrainRun& run,
                      const std::string& micro_batch_origin);

}  // namespace tz
