// A training run as `tierzero train` performs it on every rank of a Mesh: the plan built from the
// configuration, the configuration agreement, the data stream of this rank, the steps, and the
// report: per step loss, learning rate, gradient norm, tokens/s, achieved GFLOP/s, bytes per tier
// and memory (rank 0 prints; --metrics writes the same as JSON lines), a progress bar on a terminal,
// and at the end the bytes per tier per step next to what a comparison plan (zero3) would move.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "comm/mesh.hpp"
#include "engine/sharded_engine.hpp"
#include "engine/train_config.hpp"
#include "model/gpt_config.hpp"
#include "plan/partition_plan.hpp"

namespace tz {

struct TrainSessionArgs {
  TrainConfig config;
  GptConfig model;
  std::string data;  // text or token-shard file; "" = the fortunes corpus
  int threads = 1;   // model kernel threads per rank
  std::string metrics_path;
  std::string compare_plan = "zero3";  // whose bytes per tier are printed beside the plan's
  bool print_plan_only = false;        // print the plan, memory and bytes per tier, then stop
  bool progress = true;                // a progress bar on stderr when it is a terminal (rank 0)
  int inject_nan_step = -1;            // fault injection (EngineOptions), for tests
  int inject_nan_rank = 0;
};

struct TrainSummary {
  std::vector<EngineStep> steps;
  double unigram_entropy_nats = 0;
  std::map<std::string, double> bytes_per_tier;          // the plan's, per step (predicted == measured)
  std::map<std::string, double> compare_bytes_per_tier;  // the comparison plan's, per step
};

// The partition plan the configuration asks for over `topo` (preset, DeepSpeed options, tier
// overrides, options), validated. InputError naming the key on bad values.
PartitionPlan plan_from_config(const TrainConfig& config, const Topology& topo);

// Runs the session on this rank; rank 0 writes the report to `out`. Collective over the mesh.
TrainSummary run_train_session(Mesh& mesh, const TrainSessionArgs& args, std::FILE* out = stdout);

// "12.3 MiB"-style sizes for reports.
std::string format_bytes(double bytes);

}  // namespace tz
