// qwZ and qgZ beside their unquantized forms (`tierzero bench qcomm`): for each size, time per call
// (median over iterations, rank 0's clock, a barrier before each call) and the bytes per rank that
// the traffic ledger recorded on each tier, with the ratio against the bf16 form:
//   qwz_all_gather (INT8)  vs  Mesh::all_gather of bf16
//   qgz_reduce_scatter (INT4, fp32 in/out)  vs  Mesh::reduce_scatter of bf16 (and of fp32, timed)
// All over one tier set of the mesh (default: every tier, the hierarchical form).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "comm/mesh.hpp"
#include "core/quant_format.hpp"

namespace tz {

struct QuantCommBenchOptions {
  std::vector<std::size_t> shard_elements = {1 << 14, 1 << 17, 1 << 20};  // elements per shard
  TierSet tiers = ~TierSet{0};                                            // clipped to the topology's tiers
  int iters = 5;
  QuantOptions qwz = kQwzDefaultOptions;
  QuantOptions qgz = kQgzDefaultOptions;
};

// A collective over the mesh: every rank must call it. Returns rows (JSON) on every rank.
nlohmann::json run_quant_comm_bench(Mesh& mesh, const QuantCommBenchOptions& opts);
std::string format_quant_comm_bench(const nlohmann::json& rows);

}  // namespace tz
