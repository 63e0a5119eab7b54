// The step inputs `tierzero plan` and `tierzero simulate` share: their options, and the plan options
// and cost options they stand for (one place, so the two commands read them alike). The option names
// are train's: --micro-batch (alias --batch) and --grad-accum (alias --accumulation).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli/cli_options.hpp"
#include "core/json_fields.hpp"
#include "perf/auto_planner.hpp"
#include "perf/step_cost.hpp"
#include "plan/partition_plan.hpp"

namespace tz {

struct StepInputs {
  int micro_batch = 1;
  int accumulation = 1;
  int prefetch = 1;
  double fraction = perf::CostOptions{}.achievable_fraction;
  bool no_recompute = false;
  bool no_overlap = false;
  std::string collectives = "hierarchical";
  std::string runtime = "tierzero";
  std::string boundary = "pipelined";
  double bucket_elements = 0;
  double kernel_efficiency = perf::CostOptions{}.kernel_efficiency;
  double message_overhead_us = 0;
  double link_efficiency = 1;

  void add_options(cli::OptionSet& o, const std::string& collectives_help) {
    o.integer("--micro-batch,--batch", micro_batch, 1, 1 << 30,
              "sequences per micro-batch per rank (--batch is an alias)");
    o.integer("--grad-accum,--accumulation", accumulation, 1, 1 << 30,
              "micro-batches per optimizer step (--accumulation is an alias)");
    o.integer("--prefetch", prefetch, 0, 64, "gathered ranges in flight beyond the one computing");
    o.real("--fraction", fraction, 0, 1, "achievable fraction of the device's peak FLOP/s", "", true);
    o.flag("--no-recompute", no_recompute, "keep all activations (no recomputation)");
    o.flag("--no-overlap", no_overlap, "run communication and compute back to back");
    o.choice("--collectives", collectives, {"hierarchical", "flat"}, collectives_help);
    o.choice("--runtime", runtime, {"tierzero", "deepspeed"},
             "how the plans run: tierzero (its engine: a collective per range, its rings) or deepspeed "
             "(NCCL/RCCL calls over process groups, a gather per module, reduce buckets of 5e8)");
    o.choice("--boundary", boundary, {"exposed", "pipelined"},
             "the step boundary: pipelined (as the engine runs it: reductions up to O and weight refreshes "
             "overlapped with the last backward and the next forward) or exposed (all after the backward, as "
             "DeepSpeed's optimizer step)");
    o.real(
        "--bucket-elements", bucket_elements, 0, 1e15,
        "gradient-reduction bucket in elements (0 = the runtime's: tierzero one per range, deepspeed 5e8)");
    o.real(
        "--kernel-efficiency", kernel_efficiency, 1e-6, 1.0,
        "fraction of the device's memory bandwidth the quantization kernels reach (when the topology gives "
        "no device.quant_GBps)");
    o.real("--message-overhead-us", message_overhead_us, 0, 1e6,
           "host cost the runtime adds to every collective call, microseconds (0: not modelled)");
    o.real("--link-efficiency", link_efficiency, 1e-6, 1.0,
           "fraction of its priced bandwidth a collective reaches while compute shares the device (1: as "
           "benchmarked)");
  }

  // Plan options with these inputs (the rest as in PlanOptions{}).
  PlanOptions plan_options() const {
    PlanOptions base;
    base.micro_batch_size = micro_batch;
    base.grad_accum_steps = accumulation;
    base.prefetch_depth = prefetch;
    base.collectives = parse_collective_algo(collectives, "--collectives");
    return base;
  }
  perf::CostOptions cost_options() const {
    return {.achievable_fraction = fraction,
            .recompute = !no_recompute,
            .overlap = !no_overlap,
            .runtime = perf::parse_runtime(runtime, "--runtime"),
            .boundary = perf::parse_boundary_mode(boundary, "--boundary"),
            .bucket_elements = bucket_elements,
            .kernel_efficiency = kernel_efficiency,
            .message_overhead_us = message_overhead_us,
            .link_efficiency = link_efficiency};
  }
};

// A preset over `base`'s options, or a plan JSON file (plan_spec_from_json keys) whose unset
// micro-batch, accumulation, prefetch and collectives come from `base`. `option` names the option
// in errors.
inline PartitionPlan plan_by_name_or_file(const std::string& what, const Topology& topo,
                                          const PlanOptions& base, const std::string& option) {
  const auto names = PartitionPlan::preset_names();
  if (std::find(names.begin(), names.end(), what) != names.end())
    return perf::preset_with_options(what, topo, base);
  if (!std::filesystem::exists(what)) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    fail_input("{}: '{}' is neither a preset ({}) nor a plan JSON file", option, what, known);
  }
  PlanSpec spec = plan_spec_from_json(read_json_file(what), what);
  if (!spec.micro_batch_size) spec.micro_batch_size = base.micro_batch_size;
  if (!spec.grad_accum_steps) spec.grad_accum_steps = base.grad_accum_steps;
  if (!spec.prefetch_depth) spec.prefetch_depth = base.prefetch_depth;
  if (!spec.collectives) spec.collectives = base.collectives;
  return make_plan(spec, topo);
}

}  // namespace tz
