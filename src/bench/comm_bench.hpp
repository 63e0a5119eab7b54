// The communication benchmark behind `tierzero bench comm`: nccl-tests-style figures for every
// collective, over message sizes, per group of a topology (each tier, the whole world flat, and the
// whole world hierarchical), beside Open MPI's own collective on the same group measured in the same
// run. Conventions (nccl-tests'): size_bytes is the full tensor of one rank (all-gather output,
// reduce-scatter input, all-reduce buffer, all-to-all send buffer, broadcast buffer); time_us is the
// median over rounds of the mean per-iteration time, taken as the slowest rank's; algbw = size /
// time; busbw = algbw x the ledger factor ((p-1)/p, 2(p-1)/p for all-reduce, 1 for broadcast).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "comm/mesh.hpp"

namespace tz {

struct CommBenchOptions {
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{64} << 20;
  int step_factor = 4;   // each size is the previous one times this
  int iters = 20;        // at most this many timed iterations per round
  double round_s = 0.1;  // ... and about this long a round (from the warmup's time), at least 1 iteration
  int warmup = 3;        // untimed iterations (fewer when one is slow)
  int rounds = 3;        // tierzero and native alternate, round by round; medians are reported
  std::vector<std::string> ops = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast"};
  std::vector<std::string> groups;  // empty: every tier, "world" and "world-hier"
  DType dtype = DType::f32;
};

// A collective over `mesh` (every rank calls it); the result document is the same on every rank.
nlohmann::json run_comm_bench(Mesh& mesh, const CommBenchOptions& options);
std::string format_comm_bench(const nlohmann::json& result);

}  // namespace tz
