#include "cli/auto_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "perf/cost_report.hpp"
#include "train/plan_config.hpp"

namespace tz::cli {
namespace {

// One sentence on why `best` ranks above `next`: memory first (the ranking's first key), then the
// step-time term that differs most.
std::string why_first(const perf::PlanCandidate& best, const perf::PlanCandidate* next) {
  const perf::StepCost& b = best.cost;
  if (!next)
    return fmt::format("\"{}\" is the only consistent plan: predicted step {:.4g} s", best.plan.name(),
                       b.step_s);
  const perf::StepCost& n = next->cost;
  if (b.fits && !n.fits)
    return fmt::format(
        "\"{}\" fits the device's memory ({:.2f} GiB predicted) and the runner-up \"{}\" does not ({:.2f} "
        "GiB)",
        best.plan.name(), double(b.memory.peak_bytes()) / double(1ull << 30), next->plan.name(),
        double(n.memory.peak_bytes()) / double(1ull << 30));
  struct Term {
    const char* name;
    double best, next;
  };
  const Term terms[] = {{"exposed communication", b.exposed_comm_s, n.exposed_comm_s},
                        {"compute", b.compute_s, n.compute_s},
                        {"quantization kernels", b.kernel_s, n.kernel_s},
                        {"optimizer", b.optimizer_s, n.optimizer_s}};
  const Term* most = &terms[0];
  for (const Term& t : terms)
    if (t.next - t.best > most->next - most->best) most = &t;
  std::string s = fmt::format(
      "\"{}\" predicts a step of {:.4g} s against {:.4g} s for the runner-up \"{}\" ({:.3f}x); the largest "
      "difference is {}: {:.4g} s against {:.4g} s",
      best.plan.name(), b.step_s, n.step_s, next->plan.name(), b.step_s > 0 ? n.step_s / b.step_s : 1.0,
      most->name, most->best, most->next);
  if (!b.fits) s += " (no plan fits the device's memory: the smallest step time among them all was taken)";
  return s;
}

}  // namespace

void print_auto_plan(std::FILE* out, const Topology& topo, const AutoPlan& choice, int top) {
  const auto& ranked = choice.ranked;
  const perf::ModelShape& m = choice.model;
  const PlanOptions& o = ranked.front().plan.options();
  const DeviceSpec& dev = topo.device();
  const std::string memory =
      dev.memory_gib > 0 ? fmt::format("{:g} GiB per rank", dev.memory_gib) : "memory not given: not checked";
  fmt::print(out,
             "plan auto: {} consistent plans for {} layers, width {}, sequence {}, micro-batch {} x "
             "accumulation {} on {} x {} ranks ({}, {:g} TFLOPS peak, {}), priced as tierzero's engine runs "
             "them (boundary {}, recompute {}, {:.3g} of peak); fitting plans first, by step time:\n",
             ranked.size(), m.config.n_layer, m.config.n_embd, m.seq_len(), o.micro_batch_size,
             o.grad_accum_steps, topo.name(), topo.world_size(), dev.name.empty() ? "device" : dev.name,
             dev.peak_tflops, memory, perf::boundary_mode_name(choice.cost_options.boundary),
             choice.cost_options.recompute ? "on" : "off", choice.cost_options.achievable_fraction);
  std::vector<perf::CostRow> rows;
  for (std::size_t i = 0; i < ranked.size() && int(i) < top; ++i)
    rows.push_back({ranked[i].plan, ranked[i].cost});
  fmt::print(out, "{}", perf::format_cost_table(topo, rows));
  // The table's seconds have three decimals; small models need the figures in full.
  std::string steps;
  for (std::size_t i = 0; i < rows.size(); ++i)
    steps += fmt::format("{}{}. {:.4g} s", i ? ", " : "", i + 1, rows[i].cost.step_s);
  fmt::print(out, "predicted step time: {}\n", steps);
  fmt::print(out, "why the first: {}\n\n", why_first(ranked[0], ranked.size() > 1 ? &ranked[1] : nullptr));
  fmt::print(out, "{}\n", perf::format_explain(topo, ranked[0].plan, ranked[0].cost));
  fmt::print(out, "as configuration (train --config): {}\n\n",
             plan_config_json(ranked[0].plan, topo, choice.config.activation_recompute).dump());
  std::fflush(out);
}

}  // namespace tz::cli
