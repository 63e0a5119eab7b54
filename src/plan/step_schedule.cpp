// Step schedule: builds the list of collectives of one training step and their per-tier bytes (see
// step_schedule.hpp for the data flow and the rules; docs/plan.md for worked figures).
// Terms: a "shard" is one rank's block of a range for a state; "payload" is what traffic.hpp counts
// for a single-tier collective (all-gather: the gathered tensor; reduce-scatter: the unreduced one;
// all-to-all: the whole send buffer; all-reduce: the buffer).
#include "plan/step_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "quant/qgz_reduce_scatter.hpp"
#include "quant/quant_format.hpp"

namespace tz {

std::size_t quantized_bytes(std::size_t numel, int bits, std::size_t block) {
  TZ_CHECK(bits == 4 || bits == 8, "bits {}", bits);
  TZ_CHECK(block > 0 && block % 2 == 0, "block {}", block);
  // One formula with the quantizer (quant/quant_format.hpp).
  return quantized_bytes(
      numel, QuantOptions{.bits = bits == 8 ? QuantBits::int8 : QuantBits::int4, .block_size = block});
}

AcquisitionOrder sequential_order(int num_ranges) {
  AcquisitionOrder order;
  for (int r = 0; r < num_ranges; ++r) order.forward.push_back(r);
  for (int r = num_ranges - 1; r >= 0; --r) order.backward.push_back(r);
  return order;
}

std::string_view step_phase_name(StepPhase p) {
  switch (p) {
    case StepPhase::forward:
      return "forward";
    case StepPhase::backward:
      return "backward";
    case StepPhase::boundary:
      return "boundary";
    case StepPhase::scalar:
      return "scalar";
  }
  return "?";
}

std::string_view collective_purpose_name(CollectivePurpose p) {
  switch (p) {
    case CollectivePurpose::weight_gather_fwd:
      return "W_fwd all-gather";
    case CollectivePurpose::weight_gather_bwd:
      return "W_bwd all-gather";
    case CollectivePurpose::grad_reduce:
      return "G reduction";
    case CollectivePurpose::grad_boundary_reduce:
      return "G->O reduce-scatter";
    case CollectivePurpose::grad_replica_reduce:
      return "O replica all-reduce";
    case CollectivePurpose::weight_refresh:
      return "W refresh all-gather";
    case CollectivePurpose::grad_norm:
      return "grad-norm all-reduce";
    case CollectivePurpose::nonfinite_flag:
      return "non-finite flag all-reduce";
    case CollectivePurpose::loss_sum:
      return "loss all-reduce";
  }
  return "?";
}

double ScheduledCollective::bytes() const {
  double b = 0;
  for (const auto& s : steps) b += s.bytes;
  return b;
}

namespace {

// Tiers of `set` that have more than one rank, innermost first.
std::vector<int> active_tiers(const Topology& topo, TierSet set) {
  std::vector<int> out;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if ((set & tier_bit(t)) && topo.tier(t).fanout > 1) out.push_back(t);
  return out;
}

TierStep make_step(const Topology& topo, CollectiveKind kind, int tier, std::size_t payload_bytes) {
  TierStep s;
  s.kind = kind;
  s.tier = tier;
  s.tiers = tier_bit(tier);
  s.label = topo.tier(tier).name;
  s.group_size = topo.tier(tier).fanout;
  s.payload_bytes = payload_bytes;
  s.bytes = algorithmic_bytes(kind, static_cast<double>(payload_bytes), s.group_size);
  return s;
}

// One flat collective over all ranks of `tiers` (at least two non-trivial tiers), priced on the
// outermost tier's link: payload as traffic.hpp defines it for `kind` over the whole group.
std::vector<TierStep> flat_steps(const Topology& topo, CollectiveKind kind, TierSet tiers,
                                 std::size_t payload_bytes) {
  const std::vector<int> ts = active_tiers(topo, tiers);
  TZ_CHECK(ts.size() > 1, "flat step over {} with {} non-trivial tiers", topo.tier_set_name(tiers),
           ts.size());
  TierStep s;
  s.kind = kind;
  s.tier = ts.back();
  s.tiers = tiers;
  s.label = topo.tier_set_name(tiers);
  s.group_size = topo.group_size(tiers);
  s.payload_bytes = payload_bytes;
  s.bytes = algorithmic_bytes(kind, static_cast<double>(payload_bytes), s.group_size);
  return {s};
}

// All-gather of a shard of `shard_bytes` over `tiers`, outermost tier first: the step on tier i
// gathers f_i pieces of shard_bytes * (product of the fan-outs of the tiers outside i).
std::vector<TierStep> all_gather_steps(const Topology& topo, TierSet tiers, std::size_t shard_bytes) {
  std::vector<TierStep> steps;
  const std::vector<int> ts = active_tiers(topo, tiers);
  std::size_t piece = shard_bytes;
  for (auto it = ts.rbegin(); it != ts.rend(); ++it) {
    piece *= static_cast<std::size_t>(topo.tier(*it).fanout);
    steps.push_back(make_step(topo, CollectiveKind::all_gather, *it, piece));
  }
  return steps;
}

// Reduce-scatter of `full_bytes` over `tiers`, innermost tier first: the data shrinks by f_i per step.
std::vector<TierStep> reduce_scatter_steps(const Topology& topo, TierSet tiers, std::size_t full_bytes) {
  std::vector<TierStep> steps;
  std::size_t data = full_bytes;
  for (int t : active_tiers(topo, tiers)) {
    steps.push_back(make_step(topo, CollectiveKind::reduce_scatter, t, data));
    data /= static_cast<std::size_t>(topo.tier(t).fanout);
  }
  return steps;
}

// All-reduce of `bytes` (a multiple of the group size), as Mesh::all_reduce runs it: reduce-scatter
// inner->outer, then all-gather outer->inner (also on a single tier: two steps).
std::vector<TierStep> all_reduce_steps(const Topology& topo, TierSet tiers, std::size_t bytes) {
  const std::vector<int> ts = active_tiers(topo, tiers);
  std::vector<TierStep> steps = reduce_scatter_steps(topo, tiers, bytes);
  std::size_t shard = bytes;
  for (int t : ts) shard /= static_cast<std::size_t>(topo.tier(t).fanout);
  for (auto& s : all_gather_steps(topo, tiers, shard)) steps.push_back(s);
  return steps;
}

// A scalar cannot be split: one all-reduce of the whole payload per tier, inner->outer.
std::vector<TierStep> scalar_all_reduce_steps(const Topology& topo, TierSet tiers, std::size_t bytes) {
  std::vector<TierStep> steps;
  for (int t : active_tiers(topo, tiers))
    steps.push_back(make_step(topo, CollectiveKind::all_reduce, t, bytes));
  return steps;
}

// qgZ over `tiers`, innermost first: the tier's input of n elements is cut into f slices of n/f, each
// quantized to INT4 on its own (padded to whole blocks), all-to-all, dequantized and summed in fp32;
// the rank's slice is the next tier's input.
std::vector<TierStep> qgz_steps(const Topology& topo, TierSet tiers, std::size_t numel, std::size_t block) {
  std::vector<TierStep> steps;
  std::size_t n = numel;
  for (int t : active_tiers(topo, tiers)) {
    const std::size_t f = static_cast<std::size_t>(topo.tier(t).fanout);
    const std::size_t slice = n / f;
    steps.push_back(make_step(topo, CollectiveKind::all_to_all, t, f * quantized_bytes(slice, 4, block)));
    n = slice;
  }
  return steps;
}

void check_order(const ShardLayout& layout, const AcquisitionOrder& order) {
  const int n = layout.num_ranges();
  std::vector<int> fwd(n, 0), bwd(n, 0);
  for (int r : order.forward) {
    if (r < 0 || r >= n)
      fail_input("acquisition order: forward names range {} but the model has {} ranges", r, n);
    ++fwd[r];
  }
  for (int r : order.backward) {
    if (r < 0 || r >= n)
      fail_input("acquisition order: backward names range {} but the model has {} ranges", r, n);
    ++bwd[r];
  }
  for (int r = 0; r < n; ++r) {
    if (fwd[r] == 0)
      fail_input("acquisition order: range {} '{}' is never acquired in forward", r, layout.ranges()[r].name);
    if (bwd[r] == 0)
      fail_input(
          "acquisition order: range {} '{}' is never acquired in backward (its gradient would never be "
          "reduced)",
          r, layout.ranges()[r].name);
  }
}

}  // namespace

StepSchedule::StepSchedule(const ShardLayout& layout, const AcquisitionOrder& order) {
  check_order(layout, order);
  const Topology& topo = layout.topology();
  const PartitionPlan& plan = layout.plan();
  const PlanOptions& opt = plan.options();
  const DType wdt = compute_dtype(opt.dtype_mode);
  const std::size_t wbytes = dtype_bytes(wdt);
  const std::size_t block = static_cast<std::size_t>(opt.quant_block);
  for (const auto& t : topo.tiers()) labels_.push_back(t.name);

  // The plan's collectives over a tier set: hierarchical compositions, or one flat step.
  auto gather_steps = [&](TierSet tiers, std::size_t shard_bytes) {
    if (!layout.runs_flat(tiers)) return all_gather_steps(topo, tiers, shard_bytes);
    return flat_steps(topo, CollectiveKind::all_gather, tiers,
                      shard_bytes * static_cast<std::size_t>(topo.group_size(tiers)));
  };
  auto scatter_steps = [&](TierSet tiers, std::size_t full_bytes) {
    return layout.runs_flat(tiers) ? flat_steps(topo, CollectiveKind::reduce_scatter, tiers, full_bytes)
                                   : reduce_scatter_steps(topo, tiers, full_bytes);
  };
  auto reduce_steps = [&](TierSet tiers, std::size_t bytes) {
    return layout.runs_flat(tiers) ? flat_steps(topo, CollectiveKind::all_reduce, tiers, bytes)
                                   : all_reduce_steps(topo, tiers, bytes);
  };

  // A collective over one rank, or of a range of 0 elements, moves nothing and is not listed.
  auto add = [&](ScheduledCollective c) {
    if (!c.steps.empty() && (c.range < 0 || layout.padded_numel(c.range) > 0))
      collectives_.push_back(std::move(c));
  };

  // Backward acquisitions that reuse the forward's last gathered buffers.
  const int keep = 1 + opt.prefetch_depth;
  const int nf = static_cast<int>(order.forward.size());
  const int nb = static_cast<int>(order.backward.size());
  while (reused_ < std::min({keep, nf, nb}) && order.backward[reused_] == order.forward[nf - 1 - reused_])
    ++reused_;
  std::vector<int> last_bwd(layout.num_ranges(), -1);
  for (int j = 0; j < nb; ++j) last_bwd[order.backward[j]] = j;

  const bool bwd_from_primary = !plan.has_secondary_weights();
  for (int m = 0; m < opt.grad_accum_steps; ++m) {
    for (int r : order.forward) {
      ScheduledCollective c{.phase = StepPhase::forward,
                            .purpose = CollectivePurpose::weight_gather_fwd,
                            .micro_batch = m,
                            .range = r,
                            .kind = CollectiveKind::all_gather,
                            .tiers = layout.forward_gather_tiers(),
                            .dtype = wdt};
      c.count = layout.shard_numel(ModelState::w_fwd, r);
      if (opt.qwz) c.quant_bits = 8;
      const std::size_t shard_bytes = opt.qwz ? quantized_bytes(c.count, 8, block) : c.count * wbytes;
      c.steps = gather_steps(c.tiers, shard_bytes);
      add(std::move(c));
    }
    for (int j = 0; j < nb; ++j) {
      const int r = order.backward[j];
      if (j >= reused_) {
        ScheduledCollective c{.phase = StepPhase::backward,
                              .purpose = CollectivePurpose::weight_gather_bwd,
                              .micro_batch = m,
                              .range = r,
                              .kind = CollectiveKind::all_gather,
                              .tiers = layout.backward_gather_tiers(),
                              .dtype = wdt};
        c.count = layout.shard_numel(ModelState::w_bwd, r);
        const bool quantized = opt.qwz && bwd_from_primary;
        if (quantized) c.quant_bits = 8;
        const std::size_t shard_bytes = quantized ? quantized_bytes(c.count, 8, block) : c.count * wbytes;
        c.steps = gather_steps(c.tiers, shard_bytes);
        add(std::move(c));
      }
      if (last_bwd[r] == j) {
        ScheduledCollective c{.phase = StepPhase::backward,
                              .purpose = CollectivePurpose::grad_reduce,
                              .micro_batch = m,
                              .range = r,
                              .tiers = layout.grad_reduce_tiers()};
        c.count = layout.shard_numel(ModelState::grad, r);
        const QuantOptions qgz{.bits = QuantBits::int4, .block_size = block};
        if (opt.qgz && qgz_quantized_path(topo, c.tiers, c.count, qgz)) {
          c.kind = CollectiveKind::all_to_all;
          c.dtype = DType::f32;
          c.quant_bits = 4;
          c.steps = qgz_steps(topo, c.tiers, layout.padded_numel(r), block);
        } else {
          // Unquantized; qgZ's fallback (slices too small for quantization to pay) runs it in fp32,
          // hierarchically like the rest of qgZ.
          c.kind = CollectiveKind::reduce_scatter;
          c.dtype = opt.qgz ? DType::f32 : wdt;
          const std::size_t full_bytes = layout.padded_numel(r) * dtype_bytes(c.dtype);
          c.steps =
              opt.qgz ? reduce_scatter_steps(topo, c.tiers, full_bytes) : scatter_steps(c.tiers, full_bytes);
        }
        add(std::move(c));
      }
    }
  }

  // Boundary: every range's G -> O reduce-scatter, then every range's replica all-reduce.
  const std::size_t f32 = sizeof(float);
  for (int r = 0; r < layout.num_ranges(); ++r) {
    ScheduledCollective rs{.phase = StepPhase::boundary,
                           .purpose = CollectivePurpose::grad_boundary_reduce,
                           .range = r,
                           .kind = CollectiveKind::reduce_scatter,
                           .tiers = layout.boundary_reduce_tiers(),
                           .dtype = DType::f32};
    rs.count = layout.shard_numel(ModelState::optim, r);
    rs.steps = scatter_steps(rs.tiers, layout.shard_numel(ModelState::grad, r) * f32);
    add(std::move(rs));
  }
  for (int r = 0; r < layout.num_ranges(); ++r) {
    ScheduledCollective ar{.phase = StepPhase::boundary,
                           .purpose = CollectivePurpose::grad_replica_reduce,
                           .range = r,
                           .kind = CollectiveKind::all_reduce,
                           .tiers = layout.replica_tiers(),
                           .dtype = DType::f32};
    ar.count = layout.shard_numel(ModelState::optim, r);
    ar.steps = reduce_steps(ar.tiers, ar.count * f32);
    add(std::move(ar));
  }
  const TierSet world = tiers_up_to(topo.num_tiers() - 1);
  auto scalar = [&](CollectivePurpose purpose, TierSet tiers) {
    ScheduledCollective c{.phase = StepPhase::scalar,
                          .purpose = purpose,
                          .kind = CollectiveKind::all_reduce,
                          .tiers = tiers,
                          .dtype = DType::f64,
                          .count = 1};
    c.steps = scalar_all_reduce_steps(topo, tiers, dtype_bytes(DType::f64));
    add(std::move(c));
  };
  scalar(CollectivePurpose::grad_norm, layout.norm_tiers());
  scalar(CollectivePurpose::nonfinite_flag, world);
  for (int r = 0; r < layout.num_ranges(); ++r) {
    ScheduledCollective c{.phase = StepPhase::boundary,
                          .purpose = CollectivePurpose::weight_refresh,
                          .range = r,
                          .kind = CollectiveKind::all_gather,
                          .tiers = layout.refresh_gather_tiers(),
                          .dtype = wdt};
    c.count = layout.shard_numel(ModelState::optim, r);
    c.steps = gather_steps(c.tiers, c.count * wbytes);
    add(std::move(c));
  }
  scalar(CollectivePurpose::loss_sum, world);
  for (const auto& c : collectives_)
    for (const auto& st : c.steps)
      if (std::find(labels_.begin(), labels_.end(), st.label) == labels_.end()) labels_.push_back(st.label);
}

std::map<std::string, double> StepSchedule::bytes_per_tier() const {
  std::map<std::string, double> out;
  for (const auto& name : labels_) out[name] = 0;
  for (const auto& c : collectives_)
    for (const auto& s : c.steps) out[s.label] += s.bytes;
  return out;
}

std::map<std::string, double> StepSchedule::bytes_per_tier(StepPhase phase) const {
  std::map<std::string, double> out;
  for (const auto& name : labels_) out[name] = 0;
  for (const auto& c : collectives_)
    if (c.phase == phase)
      for (const auto& s : c.steps) out[s.label] += s.bytes;
  return out;
}

double StepSchedule::total_bytes() const {
  double b = 0;
  for (const auto& c : collectives_) b += c.bytes();
  return b;
}

std::string StepSchedule::describe(const Topology& topo) const {
  // Aggregate by purpose, in first-seen order.
  struct Row {
    CollectivePurpose purpose;
    std::string kind;
    int count = 0;
    std::vector<double> bytes;
  };
  std::vector<Row> rows;
  for (const auto& c : collectives_) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.purpose == c.purpose; });
    if (it == rows.end()) {
      std::string kind = std::string(collective_name(c.kind));
      if (c.quant_bits)
        kind += fmt::format(" INT{}", c.quant_bits);
      else
        kind += fmt::format(" {}", dtype_name(c.dtype));
      kind += " over " + topo.tier_set_name(c.tiers);
      if (c.steps.size() == 1 && c.steps[0].label != topo.tier(c.steps[0].tier).name) kind += " (flat)";
      rows.push_back(Row{c.purpose, kind, 0, std::vector<double>(labels_.size(), 0.0)});
      it = rows.end() - 1;
    }
    ++it->count;
    for (const auto& s : c.steps)
      it->bytes[std::find(labels_.begin(), labels_.end(), s.label) - labels_.begin()] += s.bytes;
  }
  std::string out = fmt::format("{:<28} {:<38} {:>6}", "collective", "kind", "count");
  for (const auto& n : labels_) out += fmt::format(" {:>14}", n + " bytes");
  out += "\n";
  for (const auto& r : rows) {
    out += fmt::format("{:<28} {:<38} {:>6}", collective_purpose_name(r.purpose), r.kind, r.count);
    for (double b : r.bytes) out += fmt::format(" {:>14.0f}", b);
    out += "\n";
  }
  out += fmt::format("{:<28} {:<38} {:>6}", "total per rank per step", "", collectives_.size());
  const auto totals = bytes_per_tier();
  for (const auto& n : labels_) out += fmt::format(" {:>14.0f}", totals.at(n));
  out += "\n";
  if (reused_ > 0)
    out += fmt::format(
        "({} backward acquisition(s) per micro-batch reuse the forward's last gathered ranges)\n", reused_);
  return out;
}

}  // namespace tz
