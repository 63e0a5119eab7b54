#include "perf/cost_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tz::perf {
namespace {

constexpr double kGiB = double(1ull << 30);

}  // namespace

std::string placement_summary(const Topology& topo, const PartitionPlan& p) {
  std::string s;
  for (ModelState st : kModelStates) {
    if (!s.empty()) s += ' ';
    s.append(placement_name(topo, p.tier(st)));
  }
  return s;
}

std::string quant_summary(const PartitionPlan& p) {
  if (p.options().qwz && p.options().qgz) return "qwZ+qgZ";
  if (p.options().qwz) return "qwZ";
  return p.options().qgz ? "qgZ" : "-";
}

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
  std::size_t plan_w = 4, place_w = std::string("W_fwd W_bwd G O").size();
  for (const auto& r : rows) {
    plan_w = std::max(plan_w, r.plan.name().size());
    place_w = std::max(place_w, placement_summary(topo, r.plan).size());
  }
  std::vector<std::size_t> col_w;
  for (const auto& c : columns) col_w.push_back(std::max<std::size_t>(10, c.size() + 3));
  std::string out = fmt::format("{:<{}} {:<{}} {:<7} {:<4} {:>7} {:>4}", "plan", plan_w, "W_fwd W_bwd G O",
                                place_w, "quant", "coll", "mem_GiB", "fit");
  for (std::size_t i = 0; i < columns.size(); ++i)
    out += fmt::format(" {:>{}}", columns[i] + "_GB", col_w[i]);
  out += fmt::format(" {:>8} {:>9} {:>9} {:>8}\n", "step_s", "compute_s", "exposed_s", "TFLOPS");
  for (const auto& r : rows) {
    out += fmt::format("{:<{}} {:<{}} {:<7} {:<4} {:>7.1f} {:>4}", r.plan.name(), plan_w,
                       placement_summary(topo, r.plan), place_w, quant_summary(r.plan),
                       r.plan.options().collectives == CollectiveAlgo::flat ? "flat" : "hier",
                       double(r.cost.memory.peak_bytes()) / kGiB, r.cost.fits ? "yes" : "NO");
    for (std::size_t i = 0; i < columns.size(); ++i)
      out += fmt::format(" {:>{}.2f}", traffic_bytes(r.cost, columns[i]) / 1e9, col_w[i]);
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
  nlohmann::json comms = nlohmann::json::array();
  for (const auto& r : c.comms)
    comms.push_back({{"purpose", r.purpose},
                     {"kind", r.kind},
                     {"tier", r.label},
                     {"collectives", r.collectives},
                     {"messages", r.messages},
                     {"bytes", r.bytes},
                     {"busy_s", r.busy_s},
                     {"exposed_s", r.exposed_s},
                     {"latency_s", r.latency_s},
                     {"bandwidth_s", r.bandwidth_s},
                     {"reduce_s", r.reduce_s},
                     {"kernel_s", r.kernel_s},
                     {"measured_curve", r.measured},
                     {"bound_tier", r.bound_tier}});
  return {{"plan", plan.to_json(topo)},
          {"runtime", c.runtime},
          {"boundary", c.boundary},
          {"world_size", c.world_size},
          {"step_s", c.step_s},
          {"compute_s", c.compute_s},
          {"collective_cpu_s", c.collective_cpu_s},
          {"exposed_comm_s", c.exposed_comm_s},
          {"optimizer_s", c.optimizer_s},
          {"kernel_s", c.kernel_s},
          {"kernels_priced", c.kernels_priced},
          {"bound", c.bound},
          {"collectives", comms},
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

std::string format_critical_path(const StepCost& c) {
  if (c.critical_path.empty()) return {};
  const auto& path = c.critical_path;
  // Time on the path per kind, in order of first appearance.
  std::vector<std::pair<std::string, std::pair<double, int>>> kinds;
  double total = 0;
  for (const CriticalStep& s : path) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == s.group; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {s.group, {0.0, 0}});
    it->second.first += s.seconds;
    it->second.second += 1;
    total += s.seconds;
  }
  std::string out = fmt::format(
      "\ncritical path of the steady step (the operations that decided when the next step starts): "
      "{:.4f} s (step {:.4f} s)\n",
      total, c.step_s);
  for (const auto& [group, t] : kinds)
    out += fmt::format("  {:<28} {:>10.4f} s  {:>5.1f}%  {} ops\n", group, t.first,
                       c.step_s > 0 ? 100 * t.first / c.step_s : 0.0, t.second);
  // The chain, consecutive operations of a kind on one line.
  std::vector<std::string> rows;
  for (std::size_t i = 0; i < path.size();) {
    std::size_t j = i + 1;
    double seconds = path[i].seconds;
    while (j < path.size() && path[j].group == path[i].group) seconds += path[j++].seconds;
    const std::string what = j - i == 1 ? path[i].what : path[i].what + " .. " + path[j - 1].what;
    rows.push_back(fmt::format("{:>10.4f} {:>10.4f}  {:<8} {:>5}  {}\n", path[i].start_s, seconds,
                               path[i].compute ? "compute" : "comm", j - i, what));
    i = j;
  }
  out += fmt::format("{:>10} {:>10}  {:<8} {:>5}  {}\n", "start_s", "seconds", "stream", "ops", "operations");
  constexpr std::size_t kEnds = 12;  // rows shown at each end of a long chain
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows.size() > 2 * kEnds && i == kEnds) {
      out += fmt::format("{:>10} {:>10}  ({} rows more)\n", "...", "", rows.size() - 2 * kEnds);
      i = rows.size() - kEnds;
    }
    out += rows[i];
  }
  return out;
}

std::string format_explain(const Topology& topo, const PartitionPlan& plan, const StepCost& c) {
  std::string out =
      fmt::format("plan {} ({}; {} collectives) on {} x {} ranks, run as {} runs it, step boundary {}\n",
                  plan.name(), placement_summary(topo, plan),
                  plan.options().collectives == CollectiveAlgo::flat ? "flat" : "hierarchical", topo.name(),
                  c.world_size, c.runtime, c.boundary);
  out += fmt::format(
      "step {:.4f} s = compute {:.4f}{} + quantization kernels {:.4f} + optimizer {:.4f} + exposed "
      "communication "
      "{:.4f};  {:.1f} TFLOPS per device{}\n",
      c.step_s, c.compute_s,
      c.collective_cpu_s > 0
          ? fmt::format(" (of which collectives' CPU on the shared cores {:.4f})", c.collective_cpu_s)
          : std::string(),
      c.kernel_s, c.optimizer_s, c.exposed_comm_s, c.tflops_per_device,
      c.kernels_priced ? "" : "  (quantization kernels unpriced: the device gives no memory bandwidth)");
  out += fmt::format("bound: {}\n\n", c.bound.empty() ? "-" : c.bound);
  out += fmt::format("{:<26} {:<20} {:<12} {:>5} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11} {:>9} {:>9}  {}\n",
                     "collective", "kind", "tier", "coll", "msgs", "GB/rank", "busy_s", "exposed_s",
                     "latency_s", "bandwidth_s", "reduce_s", "kernel_s", "priced by");
  double exposed = 0, busy = 0, bytes = 0;
  for (const auto& r : c.comms) {
    const std::string priced =
        r.measured ? "measured curve" : fmt::format("closed form, {} links", r.bound_tier);
    out += fmt::format(
        "{:<26} {:<20} {:<12} {:>5} {:>7} {:>10.3f} {:>10.4f} {:>10.4f} {:>10.4f} {:>11.4f} {:>9.4f} "
        "{:>9.4f}  {}\n",
        r.purpose, r.kind, r.label, r.collectives, r.messages, r.bytes / 1e9, r.busy_s, r.exposed_s,
        r.latency_s, r.bandwidth_s, r.reduce_s, r.kernel_s, priced);
    exposed += r.exposed_s, busy += r.busy_s, bytes += r.bytes;
  }
  out += fmt::format("{:<26} {:<20} {:<12} {:>5} {:>7} {:>10.3f} {:>10.4f} {:>10.4f}\n", "total", "", "", "",
                     "", bytes / 1e9, busy, exposed);
  out += fmt::format("check: compute + kernels + optimizer + exposed = {:.4f} s (step {:.4f} s)\n",
                     c.compute_s + c.kernel_s + c.optimizer_s + exposed, c.step_s);
  out += format_critical_path(c);
  return out;
}

}  // namespace tz::perf
