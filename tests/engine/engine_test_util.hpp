// Shared fixtures of the engine tests: small three-tier topologies for any world size, a tiny GPT
// whose sizes divide nothing, synthetic token data, and the single-process reference run.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "comm/thread_world.hpp"
#include "data/data_loader.hpp"
#include "engine/sharded_engine.hpp"
#include "plan/partition_plan.hpp"
#include "topology/topology.hpp"
#include "train/train_run.hpp"
#include "train/trainer_single.hpp"

namespace tz::test {

// gcd x f0, node x f1, system x f2 (host tier: node), Frontier's figures.
inline Topology three_tier(int f0, int f1, int f2) {
  nlohmann::json doc = {{"name", fmt::format("t{}x{}x{}", f0, f1, f2)},
                        {"tiers",
                         {{{"name", "gcd"}, {"fanout", f0}, {"bandwidth_GBps", 200}, {"latency_us", 2}},
                          {{"name", "node"}, {"fanout", f1}, {"bandwidth_GBps", 50}, {"latency_us", 3}},
                          {{"name", "system"}, {"fanout", f2}, {"bandwidth_GBps", 12.5}, {"latency_us", 5}}}},
                        {"host_tier", "node"}};
  return Topology::from_json(doc, "test").resolve(f0 * f1 * f2);
}

// A topology per world size of the parity tests: odd sizes and fan-outs of 1 included.
inline Topology topology_for_world(int world) {
  switch (world) {
    case 1:
      return three_tier(1, 1, 1);
    case 2:
      return three_tier(2, 1, 1);
    case 3:
      return three_tier(1, 1, 3);
    case 4:
      return three_tier(2, 2, 1);
    case 6:
      return three_tier(2, 1, 3);
    case 8:
      return three_tier(2, 2, 2);
    default:
      return three_tier(1, 1, world);
  }
}

// Vocabulary 61, width 24, 3 heads: no size divides a world of 8 (or most others).
inline GptConfig tiny_gpt() {
  return GptConfig{.n_layer = 2, .n_embd = 24, .n_head = 3, .n_positions = 16, .vocab_size = 61};
}

// A Llama: RMSNorm, rotary on whole heads, grouped-query attention 4:1, SwiGLU of width 40, no biases,
// an untied head; vocabulary 61 and width 32 divide no world of 3, 6 or 8.
inline GptConfig tiny_llama() {
  return GptConfig{.n_layer = 2,
                   .n_embd = 32,
                   .n_head = 4,
                   .n_positions = 16,
                   .vocab_size = 61,
                   .family = ModelFamily::llama,
                   .norm = NormKind::rmsnorm,
                   .norm_bias = false,
                   .norm_eps = 1e-6,
                   .positions = PositionKind::rotary,
                   .n_kv_head = 1,
                   .qkv_bias = false,
                   .attn_out_bias = false,
                   .mlp = MlpKind::swiglu,
                   .mlp_hidden = 40,
                   .mlp_bias = false,
                   .tied_embeddings = false};
}

// A GPT-NeoX: LayerNorm with bias, rotary on a quarter of each head, the parallel residual, exact GELU,
// biases, an untied head; 3 heads of 8.
inline GptConfig tiny_neox() {
  return GptConfig{.n_layer = 2,
                   .n_embd = 24,
                   .n_head = 3,
                   .n_positions = 16,
                   .vocab_size = 61,
                   .family = ModelFamily::gpt_neox,
                   .positions = PositionKind::rotary,
                   .rotary_fraction = 0.25,
                   .mlp = MlpKind::gelu_exact,
                   .residual = ResidualKind::parallel,
                   .tied_embeddings = false};
}

// The three families by name, for suites parameterised over them.
inline GptConfig tiny_model(const std::string& family) {
  if (family == "llama") return tiny_llama();
  if (family == "gpt_neox") return tiny_neox();
  return tiny_gpt();
}

inline std::vector<std::int32_t> synthetic_tokens(std::size_t n, int vocab, std::uint64_t seed = 7) {
  // A repetitive stream with noise, so a model can learn something in a few steps.
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>((i * 7 + (rng() % 3)) % vocab);
  return t;
}

struct RunSpec {
  int seq = 8;
  int micro_batch = 2;
  int grad_accum = 1;
  int steps = 10;
  float grad_clip = 1.0f;
  std::uint64_t seed = 99;
};

// The training configuration of a test run: what a user would write for it.
inline TrainConfig train_config(const RunSpec& s) {
  TrainConfig c;
  c.micro_batch = s.micro_batch;
  c.grad_accum = s.grad_accum;
  c.seq_len = s.seq;
  c.train_steps = s.steps;
  c.grad_clip = s.grad_clip;
  c.seed = s.seed;
  c.adamw = {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  c.schedule = ScheduleConfig{};
  c.schedule.warmup_steps = 2;
  c.schedule.total_steps = s.steps;
  c.schedule.min_lr_ratio = 0.1;
  return c;
}

// The run that configuration makes (make_train_run, as `tierzero train` does) for a `world`-rank
// world of the tiny model; its plan is the configuration's default, tests pick their own plans.
inline TrainRun train_run(const RunSpec& s, int world = 1) {
  return make_train_run(train_config(s), tiny_gpt(), Topology::load("flat").resolve(world), world);
}

inline EngineOptions engine_options(const RunSpec& s) {
  return train_run(s).engine;
}

// The single-process reference of a `world`-rank run: batch world x B from union_of_ranks.
struct ReferenceRun {
  std::vector<StepRecord> steps;
  std::vector<float> params;
};
inline ReferenceRun reference_run(const GptConfig& config, const std::vector<std::int32_t>& tokens, int world,
                                  const RunSpec& s) {
  SingleTrainer trainer(config, reference_options(train_run(s, world)));
  DataLoader loader = DataLoader::union_of_ranks(tokens, s.micro_batch, s.seq, world, s.seed);
  ReferenceRun out;
  for (int i = 0; i < s.steps; ++i)
    out.steps.push_back(trainer.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); }));
  out.params.assign(trainer.params().begin(), trainer.params().end());
  return out;
}

inline double normalized_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Preset `name` on `topo` in fp32 with the given quantization and 32-element quantization blocks
// (small enough that the tiny model's ranges take the quantized paths).
inline PartitionPlan fp32_quantized_plan(const std::string& name, const Topology& topo, int micro_batch,
                                         bool qwz, bool qgz) {
  PartitionPlan p = PartitionPlan::preset(name, topo);
  PlanOptions o = p.options();
  o.dtype_mode = DTypeMode::fp32;
  o.micro_batch_size = micro_batch;
  o.qwz = qwz;
  o.qgz = qgz;
  o.quant_block = 32;
  return p.with_options(o);
}

// A plan by name, made for whichever topology a test runs on.
struct PlanCase {
  std::string name;
  std::function<PartitionPlan(const Topology&)> make;
};

// Every preset without quantization: zeropp as hpZ alone (qwZ and qgZ off), and three-level also
// with flat collectives. hsdp is left out: it places every state exactly as mics does.
inline std::vector<PlanCase> unquantized_presets() {
  auto preset = [](std::string name) {
    return [name](const Topology& t) { return PartitionPlan::preset(name, t); };
  };
  return {
      {"ddp", preset("ddp")},
      {"zero1", preset("zero1")},
      {"zero2", preset("zero2")},
      {"zero3", preset("zero3")},
      {"hpz",
       [](const Topology& t) {
         PartitionPlan p = PartitionPlan::preset("zeropp", t);
         PlanOptions o = p.options();
         o.qwz = o.qgz = false;
         return p.with_options(o).with_name("zeropp-hpz-only");
       }},
      {"mics", preset("mics")},
      {"three-level", preset("three-level")},
      // Flat collectives: one ring over each multi-tier group (gradients over gcd+node, refresh over
      // node+system), ranks ordered by shard index so the layout is the hierarchical one.
      {"three-level-flat",
       [](const Topology& t) {
         PartitionPlan p = PartitionPlan::preset("three-level", t);
         PlanOptions o = p.options();
         o.collectives = CollectiveAlgo::flat;
         return p.with_options(o).with_name("three-level-flat");
       }},
  };
}

// `p` with a run's micro-batch size and accumulation, in `mode`, prefetching `prefetch` ranges ahead.
inline PartitionPlan with_run_options(PartitionPlan p, const RunSpec& s, DTypeMode mode, int prefetch = 1) {
  PlanOptions o = p.options();
  o.dtype_mode = mode;
  o.micro_batch_size = s.micro_batch;
  o.grad_accum_steps = s.grad_accum;
  o.prefetch_depth = prefetch;
  return p.with_options(o);
}

// What rank 0 saw of an engine run on a thread world of `topo` (each rank's transport wrapped by
// `wrap`, if given): its steps and the gathered master weights at the end.
struct EngineRun {
  std::vector<EngineStep> steps;
  std::vector<float> params;
};

inline EngineRun run_engine(const Topology& topo, const PartitionPlan& plan, const GptConfig& config,
                            const std::vector<std::int32_t>& tokens, const RunSpec& s,
                            const EngineOptions& opts, const CommOptions& comm = {},
                            const TransportWrap& wrap = {}) {
  EngineRun out;
  std::mutex mu;
  run_thread_mesh(
      topo,
      [&](Mesh& mesh) {
        ShardedEngine engine(mesh, config, plan, opts);
        DataLoader loader(tokens, s.micro_batch, s.seq, mesh.world().rank(), mesh.world().size(), s.seed);
        std::vector<EngineStep> steps;
        for (int i = 0; i < s.steps; ++i)
          steps.push_back(engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); }));
        std::vector<float> params = engine.gather_master_params();
        if (mesh.world().rank() == 0) {
          std::lock_guard lock(mu);
          out.steps = std::move(steps);
          out.params = std::move(params);
        }
      },
      comm, wrap);
  return out;
}

// run_engine of the tiny model with its state, activations and collectives' buffers on `device`.
inline EngineRun run_engine_on_device(DeviceKind device, const Topology& topo, const PartitionPlan& plan,
                                      const RunSpec& s, const std::vector<std::int32_t>& tokens,
                                      double timeout_s, const GptConfig& config = tiny_gpt()) {
  EngineOptions opts = engine_options(s);
  opts.device = device;
  CommOptions comm;
  comm.device = device;
  comm.timeout_s = timeout_s;
  return run_engine(topo, plan, config, tokens, s, opts, comm);
}

}  // namespace tz::test
