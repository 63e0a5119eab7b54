#include "perf/cost_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tz::perf {
namespace {

constexpr double kGiB = double(1ull << 30);

std::string placements(const Topology& topo, const PartitionPlan& p) {
  std::string s;
  for (ModelState st : kModelStates) {
    if (!s.empty()) s += ' ';
    s.append(placement_name(topo, p.tier(st)));
  }
  return s;
}

std::string quant(const PartitionPlan& p) {
  if (p.options().qwz && p.options().qgz) return "qwZ+qgZ";
  if (p.options().qwz) return "qwZ";
  return p.options().qgz ? "qgZ" : "-";
}

}  // namespace

std::vector<std::string> traffic_columns(const Topology& topo, const std::vector<StepCost>& costs) {
  std::vector<std::string> out;
  for (const Tier& t : topo.tiers()) out.push_back(t.name);
  for (const auto& c : costs)
    for (const auto& t : c.tiers)
      if (std::find(out.begin(), out.end(), t.name) == out.end()) out.push_back(t.name);
  return out;
}

double traffic_bytes(const StepCost& cost, const std::string& label) {
  for (const auto& t : cost.tiers)
    if (t.name == label) return t.bytes;
  return 0.0;
}

std::string format_cost_table(const Topology& topo, const std::vector<CostRow>& rows) {
  std::vector<StepCost> costs;
  for (const auto& r : rows) costs.push_back(r.cost);
  const std::vector<std::string> columns = traffic_columns(topo, costs);
  std::string out = fmt::format("{:<34} {:<28} {:<7} {:<4} {:>7} {:>4}", "plan", "W_fwd W_bwd G O", "quant",
                                "coll", "mem_GiB", "fit");
  for (const auto& c : columns) out += fmt::format(" {:>10}", c + "_GB");
  out += fmt::format(" {:>8} {:>9} {:>9} {:>8}\n", "step_s", "compute_s", "exposed_s", "TFLOPS");
  for (const auto& r : rows) {
    out += fmt::format("{:<34} {:<28} {:<7} {:<4} {:>7.1f} {:>4}", r.plan.name(), placements(topo, r.plan),
                       quant(r.plan), r.plan.options().collectives == CollectiveAlgo::flat ? "flat" : "hier",
                       double(r.cost.memory.peak_bytes()) / kGiB, r.cost.fits ? "yes" : "NO");
    for (const auto& c : columns) out += fmt::format(" {:>10.2f}", traffic_bytes(r.cost, c) / 1e9);
    out += fmt::format(" {:>8.3f} {:>9.3f} {:>9.3f} {:>8.1f}\n", r.cost.step_s, r.cost.compute_s,
                       r.cost.exposed_comm_s, r.cost.tflops_per_device);
  }
  return out;
}

nlohmann::json cost_to_json(const Topology& topo, const PartitionPlan& plan, const StepCost& c) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& t : c.tiers)
    tiers.push_back({{"tier", t.name}, {"bytes", t.bytes}, {"busy_s", t.busy_s}, {"exposed_s", t.exposed_s}});
  const MemoryPlan& m = c.memory;
  return {{"plan", plan.to_json(topo)},
          {"world_size", c.world_size},
          {"step_s", c.step_s},
          {"compute_s", c.compute_s},
          {"exposed_comm_s", c.exposed_comm_s},
          {"optimizer_s", c.optimizer_s},
          {"model_flops_per_rank", c.model_flops},
          {"executed_flops_per_rank", c.executed_flops},
          {"tflops_per_device", c.tflops_per_device},
          {"tokens_per_step", c.tokens_per_step},
          {"tiers", tiers},
          {"memory_bytes",
           {{"W_fwd", m.w_fwd_bytes},
            {"W_bwd", m.w_bwd_bytes},
            {"G", m.grad_bytes},
            {"O", m.optim_bytes},
            {"gather_buffers", m.gather_buffer_bytes},
            {"grad_buffer", m.grad_buffer_bytes},
            {"activations", m.activation_bytes},
            {"peak", m.peak_bytes()},
            {"capacity", c.capacity_bytes}}},
          {"fits", c.fits}};
}

}  // namespace tz::perf
