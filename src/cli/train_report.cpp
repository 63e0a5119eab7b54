#include "cli/train_report.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "model/flops.hpp"
#include "model/parameter_layout.hpp"
#include "optim/lr_schedule.hpp"
#include "plan/memory_plan.hpp"

namespace tz::cli {
namespace {

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

void print_bytes_table(std::FILE* out, const Topology& topo, const PartitionPlan& plan,
                       const std::map<std::string, double>& bytes, const PartitionPlan& compare,
                       const std::map<std::string, double>& compare_bytes) {
  auto at = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  fmt::print(out, "bytes per rank per step by tier:\n  {:<10} {:>14} {:>14}\n", "tier", plan.name(),
             compare.name());
  for (const auto& tier : topo.tiers())
    fmt::print(out, "  {:<10} {:>14} {:>14}\n", tier.name, format_bytes(at(bytes, tier.name)),
               format_bytes(at(compare_bytes, tier.name)));
}

std::string describe_optimizer(const AdamWParams& a) {
  return fmt::format("{} (betas {}, {}, eps {:g}, {} weight decay {:g})", a.decoupled ? "AdamW" : "Adam",
                     a.beta1, a.beta2, a.eps, a.decoupled ? "decoupled" : "L2", a.weight_decay);
}

std::string describe_schedule(const LrSchedule& s, int steps) {
  const std::string warmup = s.warmup_type == WarmupType::log ? "log" : "linear";
  const int W = std::max(2, s.warmup_steps);
  switch (s.kind) {
    case LrScheduleKind::cosine:
      return fmt::format("cosine (tierzero's): {} linear warmup steps to {:.3g}, cosine to {:.3g} at step {}",
                         s.warmup_steps, s.max_lr, s.min_lr, s.decay_steps);
    case LrScheduleKind::warmup:
      return fmt::format("WarmupLR (DeepSpeed's): {} {} warmup steps from {:.3g} to {:.3g}, then constant", W,
                         warmup, s.min_lr, s.max_lr);
    case LrScheduleKind::warmup_decay:
      return fmt::format(
          "WarmupDecayLR (DeepSpeed's): {} {} warmup steps from {:.3g} to {:.3g}, linear decay to {:.3g} at "
          "step {}",
          W, warmup, s.min_lr, s.max_lr, s.min_lr, s.decay_steps);
    case LrScheduleKind::warmup_cosine:
      return fmt::format(
          "WarmupCosineLR (DeepSpeed's): {} {} warmup steps from {:.3g} to {:.3g}, cosine to {:.3g} at step "
          "{}{}",
          W, warmup, s.max_lr * s.warmup_min_ratio, s.max_lr, s.max_lr * s.cos_min_ratio, s.decay_steps,
          steps > s.decay_steps ? " (and up again after it, as DeepSpeed's does)" : "");
  }
  return "?";
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

std::map<std::string, double> bytes_per_collective_kind(const StepSchedule& schedule) {
  std::map<std::string, double> out;
  for (const auto& c : schedule.collectives())
    out[std::string(collective_purpose_name(c.purpose))] += c.bytes();
  return out;
}

void print_run_header(std::FILE* out, const RunHeader& h) {
  const ParameterLayout& pl = h.engine.params();
  const GptConfig& m = h.model;
  for (const auto& note : h.notes) fmt::print(out, "note: {}\n", note);
  fmt::print(out, "model: {} layers, width {}, {} heads, vocab {}, {} parameters; sequence {}\n", m.n_layer,
             m.n_embd, m.n_head, m.vocab_size, pl.total_numel(), h.run.engine.seq);
  fmt::print(out, "data: {}; unigram entropy {:.4f} nats/token (the loss to beat)\n", h.data,
             h.unigram_entropy_nats);
  if (!h.val_data.empty()) fmt::print(out, "validation: {}\n", h.val_data);
  fmt::print(out, "world: {} ranks on topology {}; global batch {} x {} x {} = {} sequences per step\n",
             h.run.world_size, h.topology.name(), h.run.micro_batch, h.run.grad_accum, h.run.world_size,
             h.run.global_batch());
  fmt::print(out, "optimizer: {}; gradient clipping {}\n", describe_optimizer(h.run.engine.adamw),
             h.run.engine.grad_clip > 0 ? fmt::format("at norm {:g}", h.run.engine.grad_clip) : "off");
  fmt::print(out, "lr schedule: {}\n", describe_schedule(h.run.engine.schedule, h.run.steps));
  fmt::print(out, "MFU peak: {}\n", h.peak.source);
  fmt::print(out, "{}\n", h.run.plan.describe(h.topology));
  fmt::print(out, "{}", h.engine.predicted_memory().describe());
  const EngineMemory mem = h.engine.allocated_memory();
  fmt::print(out, "  engine allocated: states {}, working buffers {}, activations {}\n",
             format_bytes(mem.states()),
             format_bytes(mem.gather_buffers + mem.grad_buffers + mem.boundary_buffers),
             format_bytes(mem.activations));
  print_bytes_table(out, h.topology, h.run.plan, h.engine.schedule().bytes_per_tier(), h.compare,
                    h.compare_bytes_per_tier);
  const auto kinds = bytes_per_collective_kind(h.engine.schedule());
  fmt::print(out, "bytes per rank per step by collective kind:{}",
             kinds.empty() ? " none (nothing is sharded)" : "");
  for (const auto& [kind, bytes] : kinds) fmt::print(out, " {} {};", kind, format_bytes(bytes));
  fmt::print(out, "\n");
  std::fflush(out);
}

void print_plan_only(std::FILE* out, const GptConfig& model, const Topology& topo, const TrainRun& run,
                     const PartitionPlan& compare) {
  const ParameterLayout pl(model);  // sizes only: nothing of the model is allocated
  fmt::print(out, "model: {} layers, width {}, {} heads, vocab {}, {} parameters; sequence {}\n",
             model.n_layer, model.n_embd, model.n_head, model.vocab_size, pl.total_numel(), run.engine.seq);
  fmt::print(out, "world: {} ranks on topology {}; global batch {} x {} x {} = {} sequences per step\n",
             run.world_size, topo.name(), run.micro_batch, run.grad_accum, run.world_size,
             run.global_batch());
  fmt::print(out, "{}\n", run.plan.describe(topo));
  std::vector<RangeSpec> ranges;
  for (const auto& r : pl.ranges()) ranges.push_back({r.name, r.numel});
  fmt::print(out, "{}", plan_memory(ShardLayout(ranges, topo, run.plan)).describe());
  print_bytes_table(out, topo, run.plan, step_bytes_per_tier(model, topo, run.plan), compare,
                    step_bytes_per_tier(model, topo, compare));
  std::fflush(out);
}

StepReporter::StepReporter(std::FILE* out, const Topology& topology, const TrainRun& run,
                           const ShardedEngine& engine, PeakRate peak, std::string metrics_path,
                           bool progress_bar)
    : out_(out),
      topo_(topology),
      run_(run),
      peak_(std::move(peak)),
      bytes_per_kind_(bytes_per_collective_kind(engine.schedule())),
      metrics_path_(std::move(metrics_path)),
      start_(std::chrono::steady_clock::now()) {
  const GptConfig& model = engine.params().config();
  flops_per_token_ = training_step_flops(model, run.micro_batch, run.engine.seq) /
                     (static_cast<double>(run.micro_batch) * run.engine.seq);
  if (!metrics_path_.empty()) {
    metrics_.emplace(metrics_path_, "--metrics", OutputMode::in_place);
  }
  if (progress_bar) bar_ = ProgressBar::open_terminal();
}

void StepReporter::write_metrics(const nlohmann::json& line, const std::string& what) {
  if (!metrics_) return;
  try {
    metrics_->write(line.dump() + "\n");
    metrics_->flush();
  } catch (const InputError& e) {
    fail_input("{} (writing {})", e.what(), what);
  }
}

void StepReporter::on_step(const TrainStep& t, double mem) {
  const EngineStep& st = t.engine;
  const int s = st.step;
  const double elapsed = seconds_since(start_);
  const double eta = elapsed / (s + 1) * (run_.steps - s - 1);
  // MFU = model FLOPs per second of this rank / its peak = tokens/s x FLOPs per token / (world x peak).
  const double mfu =
      peak_.flops_per_s > 0 ? st.tokens_per_s * flops_per_token_ / (run_.world_size * peak_.flops_per_s) : 0;
  if (mfu > 1 && !warned_mfu_) {
    warned_mfu_ = true;
    if (bar_) bar_->clear();
    fmt::print(out_,
               "note: MFU above 100% at step {}: this run computes faster than the peak it is measured "
               "against ({}); pass --peak-tflops with the real peak\n",
               s + 1, peak_.source);
  }
  if (s % run_.log_every == 0 || s + 1 == run_.steps || st.skipped) {
    if (bar_) bar_->clear();
    fmt::print(
        out_,
        "step {:>5}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {:.0f} tok/s | MFU {:.1f}% | step "
        "{:.0f} ms (ranks {:.0f}-{:.0f}) | bytes {} | mem {} (peak RSS {}) | ETA {}{}\n",
        s + 1, run_.steps, st.loss, st.lr, st.grad_norm, st.tokens_per_s, 100 * mfu, 1e3 * st.seconds,
        1e3 * t.min_step_s, 1e3 * t.max_step_s, traffic_line(topo_, st.traffic), format_bytes(mem),
        format_bytes(peak_rss_bytes()), format_eta(eta), st.skipped ? " | SKIPPED (non-finite)" : "");
    std::fflush(out_);
  }
  nlohmann::json j = {{"event", "step"},
                      {"step", s + 1},
                      {"loss", st.loss},
                      {"lr", st.lr},
                      {"grad_norm", st.grad_norm},
                      {"tokens_per_s", st.tokens_per_s},
                      {"gflops", st.gflops},
                      {"mfu", mfu},
                      {"peak_flops_per_s", peak_.flops_per_s},
                      {"flops_per_token", flops_per_token_},
                      {"world_size", run_.world_size},
                      {"seconds", st.seconds},
                      {"min_step_s", t.min_step_s},
                      {"max_step_s", t.max_step_s},
                      {"exposed_gather_s", st.exposed_gather_s},
                      {"exposed_boundary_s", st.exposed_boundary_s},
                      {"skipped", st.skipped},
                      {"nonfinite_quant_blocks", st.nonfinite_quant_blocks},
                      {"nonfinite",
                       {{"loss_ranks", st.nonfinite.loss_ranks},
                        {"grad_ranks", st.nonfinite.grad_ranks},
                        {"quant_blocks", st.nonfinite.quant_blocks},
                        {"optim_values", st.nonfinite.optim_values}}},
                      {"memory_bytes", mem},
                      {"peak_rss_bytes", peak_rss_bytes()},
                      {"bytes_per_tier", nlohmann::json::object()},
                      {"seconds_per_tier", nlohmann::json::object()},
                      {"bytes_per_kind", bytes_per_kind_},
                      {"collectives_by_kind", TrafficLedger::to_json(st.by_kind)}};
  for (const auto& [tier, tt] : st.traffic) {
    j["bytes_per_tier"][tier] = tt.bytes;
    j["seconds_per_tier"][tier] = tt.seconds;
  }
  nlohmann::json& cpu = j["cpu_s_per_term"] = nlohmann::json::object();
  for (int t = 0; t < kCpuTermCount; ++t)
    cpu[std::string(cpu_term_name(static_cast<CpuTerm>(t)))] = st.cpu.cpu_s[t];
  j["cpu_s"] = st.cpu.total_cpu_s();
  j["wait_wall_s"] = st.cpu.wait_wall_s;
  nlohmann::json& by_rank = j["cpu_s_per_term_by_rank"] = nlohmann::json::array();
  for (const CpuTermSeconds& r : t.cpu_by_rank) {
    nlohmann::json terms = nlohmann::json::object();
    for (int k = 0; k < kCpuTermCount; ++k)
      terms[std::string(cpu_term_name(static_cast<CpuTerm>(k)))] = r.cpu_s[k];
    terms["wait_wall_s"] = r.wait_wall_s;
    by_rank.push_back(std::move(terms));
  }
  write_metrics(j, fmt::format("step {}", s + 1));
  if (bar_) bar_->draw(s + 1, run_.steps, elapsed);
}

void StepReporter::on_eval(const EvalRecord& e) {
  last_eval_ = e;
  if (bar_) bar_->clear();
  fmt::print(out_, "eval  {:>5}/{} | val loss {:.4f} | {:.0f} ms\n", e.step, run_.steps, e.loss,
             1e3 * e.seconds);
  std::fflush(out_);
  write_metrics({{"event", "eval"}, {"step", e.step}, {"val_loss", e.loss}, {"seconds", e.seconds}},
                fmt::format("the evaluation at step {}", e.step));
}

void StepReporter::finish(const std::vector<TrainStep>& steps, double unigram_entropy_nats, int skipped,
                          const PartitionPlan& compare, const std::map<std::string, double>& compare_bytes,
                          const std::string& weights_out) {
  if (metrics_) {
    metrics_->close();
    metrics_.reset();
  }
  if (steps.empty()) return;
  double tokens = 0, seconds = 0;
  for (const auto& t : steps) {
    tokens += t.engine.tokens_per_s * t.engine.seconds;
    seconds += t.engine.seconds;
  }
  fmt::print(out_,
             "done: final loss {:.4f} vs unigram entropy {:.4f} nats{}; {:.0f} tokens/s over the run; {} "
             "skipped steps\n",
             steps.back().engine.loss, unigram_entropy_nats,
             last_eval_ ? fmt::format("; val loss {:.4f}", last_eval_->loss) : "",
             seconds > 0 ? tokens / seconds : 0.0, skipped);
  // Time in collectives per step by kind, the first step (set-up, first touches) left out when
  // there are more.
  std::map<std::string, TierTraffic> kinds;
  const std::size_t first = steps.size() > 1 ? 1 : 0;
  for (std::size_t i = first; i < steps.size(); ++i)
    for (const auto& [kind, k] : steps[i].engine.by_kind) {
      kinds[kind].seconds += k.seconds;
      kinds[kind].ops += k.ops;
    }
  std::string kind_line;
  for (const auto& [kind, k] : kinds)
    if (k.ops > 0)
      kind_line += fmt::format("{}{} {:.2f} ms ({:.0f} ops)", kind_line.empty() ? "" : ", ", kind,
                               1e3 * k.seconds / double(steps.size() - first),
                               double(k.ops) / double(steps.size() - first));
  if (!kind_line.empty())
    fmt::print(out_, "collective time per step by kind (rank 0, summed durations): {}\n", kind_line);
  std::map<std::string, TierTraffic> cmp;
  for (const auto& [k, v] : compare_bytes) cmp[k].bytes = v;
  fmt::print(out_, "bytes per rank per step: {} ({}); {} would move {}\n",
             traffic_line(topo_, steps.back().engine.traffic), run_.plan.name(), compare.name(),
             traffic_line(topo_, cmp));
  if (!weights_out.empty())
    fmt::print(out_, "wrote the trained weights to {} and {}.json\n", weights_out, weights_out);
  std::fflush(out_);
}

}  // namespace tz::cli
