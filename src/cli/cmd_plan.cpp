// `tierzero plan`: predicted step time, TFLOPS per device, bytes per tier and memory of every preset
// plan and of the best plans the auto-planner finds, for a model on a topology (presets or files).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/step_inputs.hpp"
#include "cli/topology_args.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "perf/auto_planner.hpp"
#include "perf/cost_report.hpp"
#include "train/plan_config.hpp"

namespace tz::cli {
namespace {

struct PlanArgs {
  std::string topology = "frontier";
  std::optional<int> nodes, world_size;
  std::string model = "gpt-20b";
  int top = 5;
  std::string format = "text";
  std::string explain;                  // a preset name or a plan JSON file
  bool emit_config = false;             // print the chosen plan as a train --config instead of the tables
  int host_cores = 0, local_ranks = 0;  // 0: not given
  double sched_slice_us = 0;            // 0: Linux's EEVDF base slice for the cores
  StepInputs step;  // --micro-batch, --grad-accum, --prefetch, --fraction, --no-recompute, --no-overlap, ...
};
int run_plan(const PlanArgs& a) {
  const Topology topo = resolve_topology(a.topology, a.nodes, a.world_size);
  const perf::ModelShape model = perf::load_model_shape(a.model);
  const PlanOptions base = a.step.plan_options();
  perf::CostOptions opt = a.step.cost_options();
  opt.host_cores = a.host_cores;
  opt.local_ranks = a.local_ranks;
  opt.sched_slice_us = a.sched_slice_us;
  if (a.emit_config && opt.runtime != perf::Runtime::tierzero)
    fail_input(
        "--emit-config: plans priced with --runtime {} are not what tierzero train runs; drop --runtime",
        a.step.runtime);
  auto emit = [&](const PartitionPlan& plan) {
    fmt::print("{}\n", plan_config_json(plan, topo, opt.recompute).dump(2));
    return 0;
  };
  if (!a.explain.empty()) {
    const PartitionPlan plan = plan_by_name_or_file(a.explain, topo, base, "--explain");
    if (a.emit_config) return emit(plan);
    const perf::StepCost cost = perf::predict_step(model, topo, plan, opt);
    if (a.format == "json")
      fmt::print("{}\n", perf::cost_to_json(topo, plan, cost).dump(2));
    else
      fmt::print(
          "model {} ({} layers, hidden {}, sequence {}), micro-batch {}, accumulation {}, {:.3g} of {} "
          "TFLOPS\n{}",
          model.name, model.config.n_layer, model.config.n_embd, model.seq_len(),
          plan.options().micro_batch_size, plan.options().grad_accum_steps, a.step.fraction,
          topo.device().peak_tflops, perf::format_explain(topo, plan, cost));
    return 0;
  }

  std::vector<perf::CostRow> presets;
  for (const auto& name : PartitionPlan::preset_names()) {
    PartitionPlan p = perf::preset_with_options(name, topo, base);
    presets.push_back({p, perf::predict_step(model, topo, p, opt)});
  }
  const auto found = perf::search_plans(model, topo, base, opt);
  if (a.emit_config) {
    if (found.empty()) fail_input("--emit-config: no consistent plan over topology {}", topo.name());
    return emit(found.front().plan);
  }
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
                            {"collectives", a.step.collectives},
                            {"runtime", a.step.runtime},
                            {"boundary", a.step.boundary},
                            {"bucket_elements", a.step.bucket_elements},
                            {"kernel_efficiency", a.step.kernel_efficiency},
                            {"message_overhead_us", a.step.message_overhead_us},
                            {"link_efficiency", a.step.link_efficiency},
                            {"host_cores", a.host_cores},
                            {"local_ranks", a.local_ranks},
                            {"scheduler_wait_s_per_call", perf::scheduler_wait_s(opt)}}},
                          {"presets", nlohmann::json::array()},
                          {"search", nlohmann::json::array()},
                          {"searched", found.size()}};
    for (const auto& r : presets) doc["presets"].push_back(perf::cost_to_json(topo, r.plan, r.cost));
    for (const auto& r : best) doc["search"].push_back(perf::cost_to_json(topo, r.plan, r.cost));
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  for (const auto& n : model.notes) fmt::print("note: model {}: accepted, not applied: {}\n", a.model, n);
  const GptConfig& mc = model.config;
  fmt::print(
      "model {} ({}, {} parameters: {} layers, hidden {}, {} heads{}, sequence {}, vocabulary {}{}) "
      "on {} x {} ranks ({})\n",
      model.name, model_family_name(mc.family), mc.parameter_count(), mc.n_layer, mc.n_embd, mc.n_head,
      mc.kv_heads() != mc.n_head ? fmt::format(" ({} key/value)", mc.kv_heads()) : "", model.seq_len(),
      mc.vocab_size, mc.tied_embeddings ? "" : ", untied head", topo.name(), topo.world_size(),
      topo.device().name);
  fmt::print(
      "inputs: micro-batch {}, accumulation {}, achievable fraction of peak {} x {} TFLOPS, recompute {}, "
      "overlap {}, preset collectives {}, run as {} runs them, boundary {}\n\n",
      a.step.micro_batch, a.step.accumulation, a.step.fraction, topo.device().peak_tflops,
      a.step.no_recompute ? "off" : "on", a.step.no_overlap ? "off" : "on", a.step.collectives,
      a.step.runtime, a.step.boundary);
  fmt::print("preset plans (GB = bytes per rank per step on each tier):\n{}\n",
             perf::format_cost_table(topo, presets));
  fmt::print(
      "auto-planner: best {} of {} consistent plans, hierarchical and flat collectives (fitting plans first, "
      "by step time):\n{}",
      best.size(), found.size(), perf::format_cost_table(topo, best));
  return 0;
}

const bool plan_registered = register_command(
    {"plan",
     "Predict step time, TFLOPS, bytes per tier and memory of every preset plan, and search for the best",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<PlanArgs>();
       OptionSet o(sub, "plan");
       o.text("--topology", a->topology, "topology preset or JSON file");
       auto* nodes =
           o.integer("--nodes", a->nodes, 1, kMaxWorldRanks,
                     "units of the outermost tier (resolves an \"auto\" fan-out)", "the topology's");
       auto* world = o.integer("--world-size", a->world_size, 1, kMaxWorldRanks,
                               "ranks in all (instead of --nodes)", "the topology's");
       nodes->excludes(world);
       o.text("--model", a->model,
              "model preset of models/ (gpt-tiny, gpt2, gpt-20b, llama-3-8b, ...) or a config.json "
              "(GPT-2, Llama, GPT-NeoX)");
       a->step.add_options(
           o,
           "how the preset plans run multi-tier collectives: hierarchical (tier by tier) or flat "
           "(one ring over the group, as DeepSpeed/NCCL); the search covers both");
       o.text(
           "--explain", a->explain,
           "explain one plan (a preset name or a plan JSON file): per collective and tier, messages, bytes, "
           "time, exposed time, and what bounds the step",
           "none");
       o.integer(
           "--host-cores", a->host_cores, 1, 1 << 20,
           "cores of the host the ranks share (with --local-ranks: a scheduler wait per collective when "
           "ranks outnumber cores)",
           "none");
       o.integer("--local-ranks", a->local_ranks, 1, 1 << 20, "ranks sharing the host (with --host-cores)",
                 "none");
       o.real("--sched-slice-us", a->sched_slice_us, 0, 1e6, "scheduler time slice in microseconds",
              "Linux's EEVDF base slice for the cores", true);
       o.flag("--emit-config", a->emit_config,
              "print the auto-planner's best plan (or the --explain plan) as a training configuration "
              "(DeepSpeed-style keys and a \"tierzero\" block) that train --config accepts, instead of the "
              "tables");
       o.integer("--top", a->top, 1, 1000, "how many searched plans to print");
       o.choice("--format", a->format, {"text", "json"}, "output format");
       return [a] { return run_plan(*a); };
     }});

}  // namespace
}  // namespace tz::cli
