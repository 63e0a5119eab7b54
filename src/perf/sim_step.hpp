// A step's communication on the simulated transport: every tier step of every collective of the
// plan's StepSchedule runs through the real collective code (comm/) on a Mesh of simulated ranks
// (comm/transport/sim_transport.hpp), one after another, with buffers of the scheduled sizes. The result is
// the simulated time per tier (and per flat group) beside the closed-form time the cost model charges for the
// same steps (perf/collective_time.hpp), and the ledger's bytes per tier beside the schedule's. Threads: one
// per rank, so this is for small worlds (the CLI allows up to 64 ranks).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "comm/transport/sim_transport.hpp"
#include "perf/step_cost.hpp"

namespace tz::perf {

struct SimTierResult {
  std::string name;
  double simulated_s = 0;    // rank 0's time in this tier's steps
  double closed_form_s = 0;  // the cost model's time for the same steps
  double ledger_bytes = 0;   // rank 0's traffic ledger
  double schedule_bytes = 0;
};

struct SimStepResult {
  std::vector<SimTierResult> tiers;  // StepSchedule::labels(): the tiers, then flat groups
  double simulated_total_s = 0;      // the slowest rank, start to end
  double closed_form_total_s = 0;
};

SimStepResult simulate_step_comm(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                                 SimOptions options = {});

}  // namespace tz::perf
