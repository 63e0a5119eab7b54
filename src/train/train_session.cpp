#include "train/train_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/timing.hpp"
#include "train/config_agreement.hpp"

namespace tz {
namespace {

EvalRecord evaluate(ShardedEngine& engine, const Evaluation& eval, int step) {
  const auto t0 = std::chrono::steady_clock::now();
  if (eval.rewind) eval.rewind();
  EvalRecord r;
  r.step = step;
  r.loss = engine.evaluate(eval.next_batch, eval.batches);
  r.seconds = seconds_since(t0);
  return r;
}

void save_now(ShardedEngine& engine, const Checkpointing& c) {
  CheckpointMeta meta = c.meta;
  meta.data = c.cursor();
  const SaveResult saved = save_checkpoint(*c.world, engine, meta, c.save);
  if (c.on_save) c.on_save(saved);
}

// "key: a -> b" for every leaf that differs between two JSON documents.
void json_diffs(const nlohmann::json& was, const nlohmann::json& now, const std::string& at,
                std::vector<std::string>& out) {
  if (was.is_object() && now.is_object()) {
    for (const auto& [k, v] : was.items())
      json_diffs(v, now.contains(k) ? now.at(k) : nlohmann::json(), at.empty() ? k : at + "." + k, out);
    for (const auto& [k, v] : now.items())
      if (!was.contains(k)) json_diffs(nlohmann::json(), v, at.empty() ? k : at + "." + k, out);
    return;
  }
  if (was != now) out.push_back(fmt::format("{}: {} -> {}", at, was.dump(), now.dump()));
}

}  // namespace

void check_run_agreement(Mesh& mesh, const TrainConfig& config, const GptConfig& model, const TrainRun& run,
                         std::string_view data_identity) {
  const Topology& topo = mesh.topology();
  check_config_agreement(mesh.world(), config.to_json().dump() + model.to_json().dump() +
                                           topo.to_json().dump() + run.plan.to_json(topo).dump() +
                                           fmt::format("{}:{}", data_identity, run.engine.seq));
}

CheckpointMeta checkpoint_meta(const TrainConfig& config, const Topology& topo, const TrainRun& run) {
  CheckpointMeta m;
  m.train_config = config.to_json();
  m.topology = topo.to_json();
  m.plan = run.plan.to_json(topo);
  m.schedule = run.engine.schedule;
  m.init_seed = run.engine.seed;
  return m;
}

std::vector<TrainStep> run_training(Mesh& mesh, ShardedEngine& engine, const TrainRun& run,
                                    const BatchFn& next_batch, const TrainHooks& hooks) {
  const StopControl& stop = hooks.stop;
  const Checkpointing* checkpointing = hooks.checkpointing;
  TZ_CHECK(stop.flag == nullptr || stop.world != nullptr, "a stop flag needs the world to agree over");
  std::vector<TrainStep> steps;
  steps.reserve(static_cast<std::size_t>(std::max(0, run.steps - engine.steps_done())));
  Communicator& world = mesh.world();
  std::vector<double> times(static_cast<std::size_t>(world.size()));
  // Per rank and step, gathered in one call: the step's seconds, its CPU time by term, its wait
  // wall time.
  constexpr std::size_t kPerRank = 2 + kCpuTermCount;
  std::vector<double> mine(kPerRank), gathered(kPerRank * times.size());
  const int first = engine.steps_done();
  auto maybe_eval = [&](int done) {
    if (!hooks.eval) return;
    const int every = hooks.eval->every;
    if (done == first || done == run.steps || (every > 0 && done % every == 0)) {
      const EvalRecord r = evaluate(engine, *hooks.eval, done);
      if (hooks.on_eval) hooks.on_eval(r);
    }
  };
  maybe_eval(first);
  // A run of no steps from scratch (weights imported with --init-from) saves its starting state: a
  // model file becomes a checkpoint.
  bool save_pending = checkpointing && run.steps == 0 && engine.steps_done() == 0;
  if (save_pending) {
    save_now(engine, *checkpointing);
    save_pending = false;
  }
  // After each step: its record (on_step), the evaluation, the checkpoint save, then the stop vote.
  while (engine.steps_done() < run.steps) {
    TrainStep t;
    t.engine = engine.step(next_batch);
    mine[0] = t.engine.seconds;
    std::copy(t.engine.cpu.cpu_s.begin(), t.engine.cpu.cpu_s.end(), mine.begin() + 1);
    mine[kPerRank - 1] = t.engine.cpu.wait_wall_s;
    world.all_gather(mine.data(), gathered.data(), kPerRank * sizeof(double), DType::u8).wait();
    t.cpu_by_rank.resize(times.size());
    for (std::size_t r = 0; r < times.size(); ++r) {
      const double* g = gathered.data() + r * kPerRank;
      times[r] = g[0];
      std::copy(g + 1, g + 1 + kCpuTermCount, t.cpu_by_rank[r].cpu_s.begin());
      t.cpu_by_rank[r].wait_wall_s = g[kPerRank - 1];
    }
    t.min_step_s = *std::min_element(times.begin(), times.end());
    t.max_step_s = *std::max_element(times.begin(), times.end());
    steps.push_back(std::move(t));
    if (hooks.on_step) hooks.on_step(steps.back());
    const int done = engine.steps_done();
    const bool skipped = steps.back().engine.skipped;
    maybe_eval(done);
    bool saved_this_step = false;
    if (checkpointing) {
      save_pending =
          save_pending || (checkpointing->every > 0 && done % checkpointing->every == 0) || done == run.steps;
      // Every rank knows the step was skipped (the engine agreed on it), so all skip the save together.
      if (save_pending && !skipped) {
        save_now(engine, *checkpointing);
        save_pending = false;
        saved_this_step = true;
      }
    }
    if (stop.flag == nullptr || done == run.steps) continue;
    const StopDecision decision = agree_stop(*stop.world, *stop.flag);
    if (!decision.stop()) continue;
    // Stopped on request: the state after this step is kept when saving is configured, whether or not
    // a save was due (unless this step's save just happened, or its update was skipped: then the last
    // good checkpoint stands).
    if (checkpointing && !saved_this_step && !skipped) save_now(engine, *checkpointing);
    if (stop.on_stop_requested) stop.on_stop_requested(done);
    throw StopRequested(decision, done, run.steps);
  }
  return steps;
}

ResumedRun resume_run(Mesh& mesh, ShardedEngine& engine, DataLoader& loader, const std::string& path,
                      const TrainConfig& config, const TrainRun& run, double io_timeout_s) {
  ResumedRun out;
  out.checkpoint = resume_checkpoint(mesh.world(), engine, path, {.io_timeout_s = io_timeout_s});
  const ResumeResult& r = out.checkpoint;
  loader.restore(r.data);
  const Topology& topo = mesh.topology();
  if (r.world_size != mesh.world().size())
    out.notes.push_back(fmt::format("world size: {} -> {}", r.world_size, mesh.world().size()));
  if (r.topology != topo.to_json())
    out.notes.push_back(fmt::format("topology: {} -> {}", r.topology.value("name", "?"), topo.name()));
  json_diffs(r.plan, run.plan.to_json(topo), "plan", out.notes);
  json_diffs(r.train_config, config.to_json(), "config", out.notes);
  return out;
}

}  // namespace tz
