#include "engine/train_session.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "data/data_loader.hpp"
#include "data/token_data.hpp"
#include "engine/config_agreement.hpp"
#include "model/range_schedule.hpp"

namespace tz {
namespace {

std::vector<RangeSpec> range_specs(const GptConfig& model) {
  const ParameterLayout layout(model);
  std::vector<RangeSpec> out;
  for (const auto& r : layout.ranges()) out.push_back({r.name, r.numel});
  return out;
}

std::map<std::string, double> schedule_bytes(const GptConfig& model, const Topology& topo,
                                             const PartitionPlan& plan) {
  const ShardLayout layout(range_specs(model), topo, plan);
  return StepSchedule(layout, {forward_acquire_order(model), backward_acquire_order(model)}).bytes_per_tier();
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

std::string traffic_line(const Topology& topo, const std::map<std::string, TierTraffic>& traffic) {
  std::string s;
  for (const auto& tier : topo.tiers()) {
    auto it = traffic.find(tier.name);
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", tier.name,
                     format_bytes(it == traffic.end() ? 0 : it->second.bytes));
  }
  return s;
}

void draw_progress(int done, int total, double elapsed_s) {
  const int width = 30;
  const int filled = total > 0 ? width * done / total : width;
  const double eta = done > 0 ? elapsed_s / done * (total - done) : 0;
  fmt::print(stderr, "\r[{:=<{}}{: <{}}] {}/{} steps, {:.0f}s left ", "", filled, "", width - filled, done,
             total, eta);
  if (done == total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

PartitionPlan plan_from_config(const TrainConfig& c, const Topology& topo) {
  PlanSpec spec;
  spec.preset = c.plan;
  if (c.mics_shard_size > 0) spec.preset_args.partition_size = c.mics_shard_size;
  if (c.hpz_partition_size > 0) spec.preset_args.hpz_partition_size = c.hpz_partition_size;
  if (c.hpz) {
    spec.preset_args.hpz = *c.hpz;
    spec.hpz_given = true;
  }
  auto set = [](std::optional<std::string>& dst, const std::string& v) {
    if (!v.empty()) dst = v;
  };
  set(spec.w_fwd, c.placement.w_fwd);
  set(spec.w_bwd, c.placement.w_bwd);
  set(spec.grad, c.placement.g);
  set(spec.optim, c.placement.o);
  spec.qwz = c.qwz;
  spec.qgz = c.qgz;
  if (c.quant_block_size > 0) spec.quant_block = c.quant_block_size;
  spec.prefetch_depth = c.prefetch_depth;
  spec.grad_accum_steps = c.grad_accum;
  spec.micro_batch_size = c.micro_batch;
  spec.dtype_mode = c.bf16 ? DTypeMode::bf16 : DTypeMode::fp32;
  if (!c.collectives.empty())
    spec.collectives = parse_collective_algo(c.collectives, "config: tierzero.collectives");
  return make_plan(spec, topo);
}

TrainSummary run_train_session(Mesh& mesh, const TrainSessionArgs& args, std::FILE* out) {
  const TrainConfig& c = args.config;
  const Topology& topo = mesh.topology();
  const int world = mesh.world().size(), rank = mesh.world().rank();
  const bool lead = rank == 0;
  const int T = c.seq_len > 0 ? c.seq_len : args.model.n_positions;
  if (T > args.model.n_positions)
    fail_input("config: tierzero.sequence_length {} exceeds the model's n_positions {}", T,
               args.model.n_positions);
  if (c.global_batch && *c.global_batch != c.micro_batch * c.grad_accum * world)
    fail_input(
        "config: train_batch_size {} != train_micro_batch_size_per_gpu {} x gradient_accumulation_steps {} x "
        "{} ranks",
        *c.global_batch, c.micro_batch, c.grad_accum, world);
  const PartitionPlan plan = plan_from_config(c, topo);

  TokenData data = args.data.empty() ? load_fortunes_corpus() : load_token_file(args.data);
  if (data.max_token() >= args.model.vocab_size)
    fail_input("data {}: token {} does not fit the model's vocab_size {}", data.origin, data.max_token(),
               args.model.vocab_size);
  check_config_agreement(mesh.world(), c.to_json().dump() + args.model.to_json().dump() +
                                           topo.to_json().dump() + plan.to_json(topo).dump() +
                                           fmt::format("{}:{}:{}", data.origin, data.tokens.size(), T));

  TrainSummary summary;
  summary.bytes_per_tier = schedule_bytes(args.model, topo, plan);
  PartitionPlan compare = PartitionPlan::preset(args.compare_plan, topo).with_options(plan.options());
  {
    PlanOptions o = plan.options();
    o.qwz = o.qgz = false;
    compare = compare.with_options(o);
  }
  summary.compare_bytes_per_tier = schedule_bytes(args.model, topo, compare);

  EngineOptions eo;
  eo.seq = T;
  eo.adamw = {.lr = static_cast<float>(c.adamw.lr),
              .beta1 = static_cast<float>(c.adamw.beta1),
              .beta2 = static_cast<float>(c.adamw.beta2),
              .eps = static_cast<float>(c.adamw.eps),
              .weight_decay = static_cast<float>(c.adamw.weight_decay)};
  const int decay = c.schedule.total_steps > 0 ? c.schedule.total_steps : c.train_steps;
  eo.schedule = {.max_lr = eo.adamw.lr,
                 .min_lr = static_cast<float>(c.adamw.lr * c.schedule.min_lr_ratio),
                 .warmup_steps = c.schedule.warmup_steps,
                 .decay_steps = std::max(decay, c.schedule.warmup_steps + 1)};
  eo.grad_clip = static_cast<float>(c.grad_clip);
  eo.seed = c.seed;
  eo.threads = args.threads;
  eo.recompute = c.activation_recompute;
  eo.max_nonfinite_steps = c.max_nonfinite_steps;
  eo.inject_nan_step = args.inject_nan_step;
  eo.inject_nan_rank = args.inject_nan_rank;
  ShardedEngine engine(mesh, args.model, plan, eo);

  summary.unigram_entropy_nats = unigram_entropy_nats(data.tokens);
  if (lead) {
    const ParameterLayout& pl = engine.params();
    fmt::print(out, "model: {} layers, width {}, {} heads, vocab {}, {} parameters; sequence {}\n",
               args.model.n_layer, args.model.n_embd, args.model.n_head, args.model.vocab_size,
               pl.total_numel(), T);
    fmt::print(out, "data: {} ({}, {} tokens); unigram entropy {:.4f} nats/token (the loss to beat)\n",
               data.origin, data.format, data.tokens.size(), summary.unigram_entropy_nats);
    fmt::print(out, "world: {} ranks on topology {}; global batch {} x {} x {} = {} sequences per step\n",
               world, topo.name(), c.micro_batch, c.grad_accum, world, c.micro_batch * c.grad_accum * world);
    fmt::print(out, "{}\n", plan.describe(topo));
    fmt::print(out, "{}", engine.predicted_memory().describe());
    const EngineMemory mem = engine.allocated_memory();
    fmt::print(out, "  engine allocated: states {}, working buffers {}, activations {}\n",
               format_bytes(mem.states()),
               format_bytes(mem.gather_buffers + mem.grad_buffers + mem.boundary_buffers),
               format_bytes(mem.activations));
    fmt::print(out, "bytes per rank per step by tier:\n  {:<10} {:>14} {:>14}\n", "tier", plan.name(),
               compare.name());
    for (const auto& tier : topo.tiers())
      fmt::print(out, "  {:<10} {:>14} {:>14}\n", tier.name, format_bytes(summary.bytes_per_tier[tier.name]),
                 format_bytes(summary.compare_bytes_per_tier[tier.name]));
    std::fflush(out);
  }
  if (args.print_plan_only) return summary;

  std::ofstream metrics;
  if (lead && !args.metrics_path.empty()) {
    metrics.open(args.metrics_path);
    if (!metrics) fail_input("--metrics {}: cannot open for writing", args.metrics_path);
  }
  const bool bar = lead && args.progress && isatty(fileno(stderr));
  DataLoader loader(data.tokens, c.micro_batch, T, rank, world, c.seed, data.origin);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < c.train_steps; ++s) {
    EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    const double mem = static_cast<double>(engine.allocated_memory().total());
    if (lead) {
      if (s % c.steps_per_print == 0 || s + 1 == c.train_steps || st.skipped) {
        if (bar) fmt::print(stderr, "\r{:80}\r", "");
        fmt::print(
            out,
            "step {:>5}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {:.0f} tok/s | {:.2f} GFLOP/s | "
            "bytes {} | mem {} (peak RSS {}){}\n",
            s + 1, c.train_steps, st.loss, st.lr, st.grad_norm, st.tokens_per_s, st.gflops,
            traffic_line(topo, st.traffic), format_bytes(mem), format_bytes(peak_rss_bytes()),
            st.skipped ? " | SKIPPED (non-finite)" : "");
        std::fflush(out);
      }
      if (metrics.is_open()) {
        nlohmann::json j = {{"step", s + 1},
                            {"loss", st.loss},
                            {"lr", st.lr},
                            {"grad_norm", st.grad_norm},
                            {"tokens_per_s", st.tokens_per_s},
                            {"gflops", st.gflops},
                            {"seconds", st.seconds},
                            {"exposed_gather_s", st.exposed_gather_s},
                            {"skipped", st.skipped},
                            {"memory_bytes", mem},
                            {"peak_rss_bytes", peak_rss_bytes()},
                            {"bytes_per_tier", nlohmann::json::object()}};
        for (const auto& [tier, t] : st.traffic) j["bytes_per_tier"][tier] = t.bytes;
        metrics << j.dump() << "\n";
        metrics.flush();
      }
      if (bar)
        draw_progress(s + 1, c.train_steps,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    summary.steps.push_back(std::move(st));
  }
  if (lead && !summary.steps.empty()) {
    double tok = 0;
    for (const auto& st : summary.steps) tok += st.tokens_per_s;
    fmt::print(
        out,
        "done: final loss {:.4f} vs unigram entropy {:.4f} nats; mean {:.0f} tokens/s; {} skipped steps\n",
        summary.steps.back().loss, summary.unigram_entropy_nats, tok / summary.steps.size(),
        engine.skipped_steps());
    fmt::print(out, "bytes per rank per step: {} ({}); {} would move {}\n",
               traffic_line(topo, summary.steps.back().traffic), plan.name(), compare.name(), [&] {
                 std::map<std::string, TierTraffic> t;
                 for (const auto& [k, v] : summary.compare_bytes_per_tier) t[k].bytes = v;
                 return traffic_line(topo, t);
               }());
  }
  return summary;
}

}  // namespace tz
