// A training run as its configuration asks for it on a world: the validated partition plan, the
// engine's options and the loop's own settings. make_train_run is the one place a TrainConfig
// becomes them, for `tierzero train`, the tests and anything else that trains; the single-process
// reference trainer's options come from the same run (reference_options), so no caller re-derives
// options by hand.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/sharded_engine.hpp"
#include "model/gpt_config.hpp"
#include "plan/partition_plan.hpp"
#include "topology/topology.hpp"
#include "train/train_config.hpp"
#include "train/trainer_single.hpp"

namespace tz {

// When and where the loop saves checkpoints (TrainConfig's save_dir, save_every, keep).
struct SaveSchedule {
  std::string dir;  // empty: no checkpoints
  int every = 0;    // after every N-th step; 0: only after the last
  int keep = 0;     // complete checkpoints kept; 0: all
};

struct TrainRun {
  PartitionPlan plan;    // validated against the topology and the world
  EngineOptions engine;  // seq, AdamW, schedule, clipping, seed, recomputation, non-finite limit
  int steps = 0;         // optimizer steps
  int log_every = 1;     // steps between log lines
  int micro_batch = 1;   // sequences per rank per micro-batch
  int grad_accum = 1;    // micro-batches per step
  int world_size = 1;
  SaveSchedule save;
  int global_batch() const { return micro_batch * grad_accum * world_size; }  // sequences per step
};

// The partition plan the configuration asks for over `topo` (preset, DeepSpeed options, tier
// overrides, options), validated. InputError naming the key on bad values.
PartitionPlan plan_from_config(const TrainConfig& config, const GptConfig& model, const Topology& topo);

// DeepSpeed's warmup_max_lr default (WarmupLR, WarmupDecayLR).
constexpr double kDeepSpeedWarmupMaxLr = 1e-3;

// The prefetch depth that zero_optimization.stage3_prefetch_bucket_size (parameter elements fetched
// ahead of use) stands for: how many of the model's largest ranges fit, at most all but one.
int prefetch_depth_for(long long prefetch_elements, const GptConfig& model);

// Checks the configuration against the model and the world (sequence length, train_batch_size) and
// builds the run. InputError naming the key and values.
TrainRun make_train_run(const TrainConfig& config, const GptConfig& model, const Topology& topo,
                        int world_size);

// The single-process trainer that stands in for `run` on one rank: batch world x micro-batch, fed
// from DataLoader::union_of_ranks, trains the same model (the engine's parity reference).
TrainOptions reference_options(const TrainRun& run);

// Bytes per rank per step by ledger label that `plan` moves for `model` on `topo`.
std::map<std::string, double> step_bytes_per_tier(const GptConfig& model, const Topology& topo,
                                                  const PartitionPlan& plan);

}  // namespace tz
