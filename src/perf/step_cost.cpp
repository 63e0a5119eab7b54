#include "perf/step_cost.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "perf/activation_memory.hpp"
#include "perf/collective_time.hpp"
#include "perf/model_ranges.hpp"
#include "perf/overlap_schedule.hpp"
#include "perf/step_flops.hpp"

namespace tz::perf {
namespace {

// Prices every step on its tier's link (a flat step: the outermost tier of its group, as a ring that
// crosses that tier runs at its per-rank bandwidth) and books the time under the step's label.
double collective_seconds(const ScheduledCollective& c, const Topology& topo,
                          const std::vector<std::string>& labels, std::vector<double>* busy) {
  double s = 0;
  for (const TierStep& step : c.steps) {
    const double t = collective_time_s(step.kind, double(step.payload_bytes), step.group_size,
                                       link_of(topo.tier(step.tier)));
    (*busy)[std::find(labels.begin(), labels.end(), step.label) - labels.begin()] += t;
    s += t;
  }
  return s;
}

}  // namespace

PlannedStep plan_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan) {
  const ModelRanges mr = model_ranges(model.config);
  std::vector<RangeSpec> ranges;
  for (std::size_t i = 0; i < mr.names.size(); ++i) ranges.push_back(RangeSpec{mr.names[i], mr.numel[i]});
  ShardLayout layout(std::move(ranges), topo, plan);
  StepSchedule schedule(layout, AcquisitionOrder{mr.forward, mr.backward});
  return PlannedStep{std::move(layout), std::move(schedule)};
}

StepCost predict_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                      const CostOptions& options) {
  TZ_CHECK(topo.resolved(), "cost model needs a resolved topology");
  const DeviceSpec& dev = topo.device();
  if (!(dev.peak_tflops > 0))
    fail_input("topology {}: device.peak_tflops is needed by the cost model (calibrate or add it)",
               topo.name());
  if (!(options.achievable_fraction > 0 && options.achievable_fraction <= 1))
    fail_input("cost model: achievable fraction of peak must be in (0, 1], got {}",
               options.achievable_fraction);

  const GptConfig& cfg = model.config;
  const PlanOptions& po = plan.options();
  const int seq = model.seq_len(), b = po.micro_batch_size, accum = po.grad_accum_steps;

  const ModelRanges mr = model_ranges(cfg);
  const PlannedStep planned = plan_step(model, topo, plan);
  const ShardLayout& layout = planned.layout;
  const StepSchedule& schedule = planned.schedule;

  // Compute per acquisition of one micro-batch: forward then backward.
  const double rate = dev.peak_tflops * 1e12 * options.achievable_fraction;
  const double layer_fwd = layer_forward_flops(cfg, seq) * b / rate;
  const double head_fwd = head_forward_flops(cfg, seq) * b / rate;
  auto is_head = [&](const std::vector<int>& order, std::size_t i) {
    if (order[i] != mr.embeddings) return false;
    return (i > 0 && order[i - 1] == mr.final_ln) || (i + 1 < order.size() && order[i + 1] == mr.final_ln);
  };
  std::vector<double> micro;
  for (std::size_t i = 0; i < mr.forward.size(); ++i)
    micro.push_back(is_block_range(cfg, mr.forward[i]) ? layer_fwd : is_head(mr.forward, i) ? head_fwd : 0.0);
  for (std::size_t i = 0; i < mr.backward.size(); ++i)
    micro.push_back(is_block_range(cfg, mr.backward[i]) ? (options.recompute ? 3 : 2) * layer_fwd
                    : is_head(mr.backward, i)           ? 2 * head_fwd
                                                        : 0.0);
  const int per_micro = static_cast<int>(micro.size()), nf = static_cast<int>(mr.forward.size());
  std::vector<double> compute;
  for (int m = 0; m < accum; ++m) compute.insert(compute.end(), micro.begin(), micro.end());

  // Last backward acquisition of every range (where its gradient is complete).
  std::vector<int> last_bwd(mr.names.size(), -1);
  for (std::size_t i = 0; i < mr.backward.size(); ++i) last_bwd[mr.backward[i]] = static_cast<int>(i);

  const std::vector<std::string>& labels = schedule.labels();
  std::vector<double> busy(labels.size(), 0.0), boundary_busy(labels.size(), 0.0);
  std::vector<CommItem> items;
  std::vector<int> fwd_seen(accum, 0), bwd_seen(accum, 0);
  double boundary_s = 0;
  for (const ScheduledCollective& c : schedule.collectives()) {
    if (c.phase == StepPhase::boundary || c.phase == StepPhase::scalar) {
      boundary_s += collective_seconds(c, topo, labels, &boundary_busy);
      continue;
    }
    TZ_CHECK(c.micro_batch >= 0 && c.micro_batch < accum, "micro-batch {}", c.micro_batch);
    const int base = c.micro_batch * per_micro;
    CommItem item;
    item.seconds = collective_seconds(c, topo, labels, &busy);
    switch (c.purpose) {
      case CollectivePurpose::weight_gather_fwd:
        item.kind = CommItem::Kind::gather;
        item.acquisition = base + fwd_seen[c.micro_batch]++;
        break;
      case CollectivePurpose::weight_gather_bwd:
        item.kind = CommItem::Kind::gather;
        item.acquisition = base + nf + schedule.reused_in_backward() + bwd_seen[c.micro_batch]++;
        break;
      case CollectivePurpose::grad_reduce:
        item.kind = CommItem::Kind::reduce;
        TZ_CHECK(c.range >= 0 && last_bwd.at(c.range) >= 0, "range {} never acquired in backward", c.range);
        item.acquisition = base + nf + last_bwd[c.range];
        break;
      default:
        TZ_CHECK(false, "unexpected {} in a pass", collective_purpose_name(c.purpose));
    }
    items.push_back(item);
  }
  const OverlapResult passes = schedule_overlap(compute, items, po.prefetch_depth, options.overlap);

  StepCost out;
  out.plan = plan.name();
  out.world_size = topo.world_size();
  const MemoryPlan mem0 = plan_memory(layout);
  const double o_elements = double(mem0.optim_bytes) / 12.0;
  out.optimizer_s = dev.memory_bandwidth_gbps > 0
                        ? o_elements * kAdamBytesPerElement / (dev.memory_bandwidth_gbps * 1e9)
                        : 0.0;
  out.compute_s = passes.compute_s;
  out.step_s = passes.total_s + boundary_s + out.optimizer_s;
  out.exposed_comm_s = passes.exposed_comm_s() + boundary_s;
  const StepFlops flops = step_flops(cfg, seq, b, accum, options.recompute);
  out.model_flops = flops.model;
  out.executed_flops = flops.executed;
  out.tflops_per_device = flops.model / out.step_s / 1e12;
  out.tokens_per_step = double(seq) * b * accum * topo.world_size();

  const auto bytes = schedule.bytes_per_tier();
  for (std::size_t t = 0; t < labels.size(); ++t) {
    TierCost tc;
    tc.name = labels[t];
    tc.bytes = bytes.at(tc.name);
    tc.busy_s = busy[t] + boundary_busy[t];
    // Exposed pass time is shared among tiers in proportion to their busy time in the passes.
    tc.exposed_s =
        boundary_busy[t] + (passes.comm_s > 0 ? passes.exposed_comm_s() * busy[t] / passes.comm_s : 0.0);
    out.tiers.push_back(tc);
  }

  const ActivationBytes act = activation_bytes(cfg, seq, b, options.recompute);
  out.memory = plan_memory(layout, static_cast<std::size_t>(act.total()));
  out.capacity_bytes = dev.memory_gib * double(1ull << 30);
  out.fits = out.capacity_bytes <= 0 || double(out.memory.peak_bytes()) <= out.capacity_bytes;
  return out;
}

}  // namespace tz::perf
