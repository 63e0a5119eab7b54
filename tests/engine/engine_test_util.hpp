// Shared fixtures of the engine tests: small three-tier topologies for any world size, a tiny GPT
// whose sizes divide nothing, synthetic token data, and the single-process reference run.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "data/data_loader.hpp"
#include "engine/sharded_engine.hpp"
#include "model/trainer_single.hpp"
#include "topology/topology.hpp"

namespace tz::test {

// gcd x f0, node x f1, system x f2 (host tier: node), Frontier's figures.
inline Topology three_tier(int f0, int f1, int f2) {
  nlohmann::json doc = {{"name", fmt::format("t{}x{}x{}", f0, f1, f2)},
                        {"tiers",
                         {{{"name", "gcd"}, {"fanout", f0}, {"bandwidth_gbps", 200}, {"latency_us", 2}},
                          {{"name", "node"}, {"fanout", f1}, {"bandwidth_gbps", 50}, {"latency_us", 3}},
                          {{"name", "system"}, {"fanout", f2}, {"bandwidth_gbps", 12.5}, {"latency_us", 5}}}},
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

inline EngineOptions engine_options(const RunSpec& s) {
  EngineOptions o;
  o.seq = s.seq;
  o.adamw = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
  o.schedule = {.max_lr = 3e-3f, .min_lr = 3e-4f, .warmup_steps = 2, .decay_steps = s.steps};
  o.grad_clip = s.grad_clip;
  o.seed = s.seed;
  return o;
}

// The single-process reference of a `world`-rank run: batch world x B from union_of_ranks.
struct ReferenceRun {
  std::vector<StepRecord> steps;
  std::vector<float> params;
};
inline ReferenceRun reference_run(const GptConfig& config, const std::vector<std::int32_t>& tokens, int world,
                                  const RunSpec& s) {
  const EngineOptions e = engine_options(s);
  TrainOptions o;
  o.batch = world * s.micro_batch;
  o.seq = s.seq;
  o.grad_accum = s.grad_accum;
  o.adamw = e.adamw;
  o.schedule = e.schedule;
  o.grad_clip = e.grad_clip;
  o.seed = s.seed;
  SingleTrainer trainer(config, o);
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

}  // namespace tz::test
