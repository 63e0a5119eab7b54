// The step inputs `tierzero plan` and `tierzero simulate` share: their options, and the plan options
// and cost options they stand for (one place, so the two commands read them alike).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "perf/step_cost.hpp"
#include "plan/partition_plan.hpp"

namespace tz {

struct StepInputs {
  int micro_batch = 1;
  int accumulation = 1;
  double fraction = perf::CostOptions{}.achievable_fraction;
  bool no_recompute = false;
  bool no_overlap = false;
  std::string collectives = "hierarchical";

  void add_options(CLI::App& sub, const std::string& collectives_help) {
    sub.add_option("--micro-batch", micro_batch, "sequences per micro-batch per rank")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub.add_option("--accumulation", accumulation, "micro-batches per optimizer step")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub.add_option("--fraction", fraction, "achievable fraction of the device's peak FLOP/s")
        ->capture_default_str();
    sub.add_flag("--no-recompute", no_recompute, "keep all activations (no recomputation)");
    sub.add_flag("--no-overlap", no_overlap, "run communication and compute back to back");
    sub.add_option("--collectives", collectives, collectives_help)
        ->check(CLI::IsMember({"hierarchical", "flat"}))
        ->capture_default_str();
  }

  // Plan options with these inputs (the rest as in PlanOptions{}).
  PlanOptions plan_options() const {
    PlanOptions base;
    base.micro_batch_size = micro_batch;
    base.grad_accum_steps = accumulation;
    base.collectives = parse_collective_algo(collectives, "--collectives");
    return base;
  }
  perf::CostOptions cost_options() const {
    return {.achievable_fraction = fraction, .recompute = !no_recompute, .overlap = !no_overlap};
  }
};

}  // namespace tz
