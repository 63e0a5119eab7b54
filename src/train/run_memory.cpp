#include "train/run_memory.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/activation_floats.hpp"
#include "model/parameter_layout.hpp"
#include "plan/shard_layout.hpp"

namespace tz {
namespace {

std::string gib(double bytes) {
  return fmt::format("{:.3g} GiB", bytes / double(1ull << 30));
}

}  // namespace

RunMemory run_memory_per_rank(const GptConfig& model, const Topology& topo, const TrainRun& run) {
  const ParameterLayout params(model);
  std::vector<RangeSpec> ranges;
  for (const auto& r : params.ranges()) ranges.push_back({r.name, r.numel});
  RunMemory m;
  m.plan = plan_memory(ShardLayout(ranges, topo, run.plan));
  m.activation_bytes =
      4.0 * gpt_activation_floats(model, run.micro_batch, run.engine.seq, run.engine.recompute);
  return m;
}

void check_run_memory(const RunMemory& need, double available_bytes, const TrainRun& run,
                      const std::string& micro_batch_origin) {
  if (need.total_bytes() <= available_bytes) return;
  fail_input(
      "micro-batch {} ({}) x sequence {} needs {} per rank: activations {}, model states {}, working buffers "
      "{}; a rank here may use {} (this host's memory over its ranks): lower the micro-batch{}",
      run.micro_batch, micro_batch_origin, run.engine.seq, gib(need.total_bytes()),
      gib(need.activation_bytes), gib(double(need.plan.state_bytes())),
      gib(double(need.plan.working_bytes())), gib(available_bytes),
      run.engine.recompute ? "" : " or turn on --recompute");
}

}  // namespace tz
