// `tierzero plan`: predicted step time, TFLOPS per device, bytes per tier and memory of every preset
// plan and of the best plans the auto-planner finds, for a model on a topology (presets or files).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/command_registry.hpp"
#include "cli/step_inputs.hpp"
#include "core/error.hpp"
#include "perf/auto_planner.hpp"
#include "perf/cost_report.hpp"

namespace tz::cli {
namespace {

struct PlanArgs {
  std::string topology = "frontier";
  int nodes = 0;
  int world_size = 0;
  std::string model = "gpt-20b";
  int prefetch = 1;
  int top = 5;
  std::string format = "text";
  StepInputs step;  // --micro-batch, --accumulation, --fraction, --no-recompute, --no-overlap, --collectives
};

Topology resolve_topology(const std::string& name, int nodes, int world_size) {
  Topology topo = Topology::load(name);
  if (nodes > 0) return topo.resolve_outer(nodes);
  if (world_size > 0) return topo.resolve(world_size);
  if (!topo.resolved())
    fail_input("topology {}: its outermost fan-out is \"auto\": pass --nodes or --world-size", topo.name());
  return topo.resolve(topo.world_size());
}

int run_plan(const PlanArgs& a) {
  const Topology topo = resolve_topology(a.topology, a.nodes, a.world_size);
  const perf::ModelShape model = perf::load_model_shape(a.model);
  PlanOptions base = a.step.plan_options();
  base.prefetch_depth = a.prefetch;
  const perf::CostOptions opt = a.step.cost_options();

  std::vector<perf::CostRow> presets;
  for (const auto& name : PartitionPlan::preset_names()) {
    PartitionPlan p = perf::preset_with_options(name, topo, base);
    presets.push_back({p, perf::predict_step(model, topo, p, opt)});
  }
  const auto found = perf::search_plans(model, topo, base, opt);
  std::vector<perf::CostRow> best;
  for (std::size_t i = 0; i < found.size() && int(i) < a.top; ++i)
    best.push_back({found[i].plan, found[i].cost});

  if (a.format == "json") {
    nlohmann::json doc = {{"topology", topo.name()},
                          {"world_size", topo.world_size()},
                          {"model", model.name},
                          {"inputs",
                           {{"micro_batch", a.step.micro_batch},
                            {"accumulation", a.step.accumulation},
                            {"achievable_fraction", a.step.fraction},
                            {"recompute", !a.step.no_recompute},
                            {"overlap", !a.step.no_overlap},
                            {"collectives", a.step.collectives}}},
                          {"presets", nlohmann::json::array()},
                          {"search", nlohmann::json::array()},
                          {"searched", found.size()}};
    for (const auto& r : presets) doc["presets"].push_back(perf::cost_to_json(topo, r.plan, r.cost));
    for (const auto& r : best) doc["search"].push_back(perf::cost_to_json(topo, r.plan, r.cost));
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  fmt::print("model {} ({} layers, hidden {}, {} heads, sequence {}, vocabulary {}) on {} x {} ranks ({})\n",
             model.name, model.config.n_layer, model.config.n_embd, model.config.n_head, model.seq_len(),
             model.config.vocab_size, topo.name(), topo.world_size(), topo.device().name);
  fmt::print(
      "inputs: micro-batch {}, accumulation {}, achievable fraction of peak {} x {} TFLOPS, recompute {}, "
      "overlap {}, preset collectives {}\n\n",
      a.step.micro_batch, a.step.accumulation, a.step.fraction, topo.device().peak_tflops,
      a.step.no_recompute ? "off" : "on", a.step.no_overlap ? "off" : "on", a.step.collectives);
  fmt::print("preset plans (GB = bytes per rank per step on each tier):\n{}\n",
             perf::format_cost_table(topo, presets));
  fmt::print(
      "auto-planner: best {} of {} consistent plans, hierarchical and flat collectives (fitting plans first, "
      "by step time):\n{}",
      best.size(), found.size(), perf::format_cost_table(topo, best));
  return 0;
}

const bool registered = register_command(
    {"plan",
     "Predict step time, TFLOPS, bytes per tier and memory of every preset plan, and search for the best",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<PlanArgs>();
       sub.add_option("--topology", a->topology, "topology preset or JSON file")->capture_default_str();
       sub.add_option("--nodes", a->nodes, "units of the outermost tier (resolves an \"auto\" fan-out)");
       sub.add_option("--world-size", a->world_size, "ranks in all (alternative to --nodes)");
       sub.add_option("--model", a->model, "model preset (models/) or JSON file")->capture_default_str();
       sub.add_option("--prefetch", a->prefetch, "gathered ranges in flight beyond the one computing")
           ->check(CLI::NonNegativeNumber)
           ->capture_default_str();
       a->step.add_options(
           sub,
           "how the preset plans run multi-tier collectives: hierarchical (tier by tier) or flat "
           "(one ring over the group, as DeepSpeed/NCCL); the search covers both");
       sub.add_option("--top", a->top, "how many searched plans to print")->capture_default_str();
       sub.add_option("--format", a->format, "text or json")
           ->check(CLI::IsMember({"text", "json"}))
           ->capture_default_str();
       return [a] { return run_plan(*a); };
     }});

}  // namespace
}  // namespace tz::cli
