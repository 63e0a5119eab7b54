// Memory plan: bytes per rank of each model state and of the working buffers (formula in
// memory_plan.hpp and docs/plan.md), and the fits-in-device check.
#include "plan/memory_plan.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "plan/step_schedule.hpp"

namespace tz {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
std::string gib(std::size_t bytes) {
  return fmt::format("{:.3f} GiB", static_cast<double>(bytes) / kGiB);
}
}  // namespace

MemoryPlan plan_memory(const ShardLayout& layout, std::size_t activation_bytes) {
  const PartitionPlan& plan = layout.plan();
  const PlanOptions& opt = plan.options();
  const std::size_t wbytes = dtype_bytes(compute_dtype(opt.dtype_mode));
  MemoryPlan m;
  m.w_fwd_bytes = layout.state_shard_numel(ModelState::w_fwd) * wbytes;
  if (plan.has_secondary_weights()) m.w_bwd_bytes = layout.state_shard_numel(ModelState::w_bwd) * wbytes;
  m.grad_bytes = layout.state_shard_numel(ModelState::grad) * sizeof(float);
  m.optim_bytes = layout.state_shard_numel(ModelState::optim) * 3 * sizeof(float);
  if (!plan.replicated(ModelState::w_fwd)) {
    // The largest range's gathered slot (and its gathered INT8 codes + scales under qwZ).
    std::size_t slot = 0;
    const int shards = layout.shard_count(ModelState::w_fwd);
    for (int r = 0; r < layout.num_ranges(); ++r) {
      std::size_t bytes = layout.padded_numel(r) * wbytes;
      if (opt.qwz)
        bytes +=
            static_cast<std::size_t>(shards) * quantized_bytes(layout.shard_numel(ModelState::w_fwd, r), 8,
                                                               static_cast<std::size_t>(opt.quant_block));
      slot = std::max(slot, bytes);
    }
    m.gather_buffer_bytes = static_cast<std::size_t>(1 + opt.prefetch_depth) * slot;
  }
  if (!plan.replicated(ModelState::grad)) m.grad_buffer_bytes = layout.max_padded_numel() * wbytes;
  const std::size_t o_shard = layout.state_shard_numel(ModelState::optim);
  if (plan.tier(ModelState::grad) < plan.tier(ModelState::optim))
    m.boundary_buffer_bytes += o_shard * sizeof(float);
  m.boundary_buffer_bytes += o_shard * wbytes;
  m.activation_bytes = activation_bytes;
  return m;
}

std::string MemoryPlan::describe() const {
  auto row = [](std::string_view what, std::size_t bytes) {
    return fmt::format("  {:<34} {:>14} bytes  {:>12}\n", what, bytes, gib(bytes));
  };
  std::string out = "memory per rank\n";
  out += row("W_fwd shard", w_fwd_bytes);
  out += row("W_bwd secondary shard", w_bwd_bytes);
  out += row("G shard (fp32)", grad_bytes);
  out += row("O shard (fp32 master + Adam m, v)", optim_bytes);
  out += row("gather buffers", gather_buffer_bytes);
  out += row("gradient buffer", grad_buffer_bytes);
  out += row("boundary buffers", boundary_buffer_bytes);
  out += row("activations", activation_bytes);
  out += row("peak", peak_bytes());
  return out;
}

void check_fits(const MemoryPlan& m, double capacity_bytes, std::string_view plan_name) {
  if (static_cast<double>(m.peak_bytes()) <= capacity_bytes) return;
  fail_input(
      "plan {}: needs {} per rank but the device has {:.3f} GiB (W_fwd {}, W_bwd {}, G {}, O {}, gather "
      "buffers {}, "
      "gradient buffer {}, boundary buffers {}, activations {})",
      plan_name, gib(m.peak_bytes()), capacity_bytes / kGiB, gib(m.w_fwd_bytes), gib(m.w_bwd_bytes),
      gib(m.grad_bytes), gib(m.optim_bytes), gib(m.gather_buffer_bytes), gib(m.grad_buffer_bytes),
      gib(m.boundary_buffer_bytes), gib(m.activation_bytes));
}

void check_fits_device(const MemoryPlan& m, const Topology& topo, std::string_view plan_name) {
  if (topo.device().memory_gib <= 0) return;
  check_fits(m, topo.device().memory_gib * kGiB, plan_name);
}

}  // namespace tz
