// Step schedule: builds the list of collectives of one training step and their per-tier bytes (see
// step_schedule.hpp for the data flow and the rules; docs/plan.md for worked figures).
// Terms: a "shard" is one rank's block of a range for a state; "payload" is what traffic.hpp counts
// for a single-tier collective (all-gather: the gathered tensor; reduce-scatter: the unreduced one;
// all-to-all: the whole send buffer; all-reduce: the buffer).
#include "plan/step_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/quant_format.hpp"

namespace tz {

std::size_t quantized_bytes(std::size_t numel, int bits, std::size_t block) {
  TZ_CHECK(bits == 4 || bits == 8, "bits {}", bits);
  TZ_CHECK(block > 0 && block % 2 == 0, "block {}", block);
  // One formula with the quantizer (core/quant_format.hpp).
  return quantized_bytes(
      numel, QuantOptions{.bits = bits == 8 ? QuantBits::int8 : QuantBits::int4, .block_size = block});
}

AcquisitionOrder sequential_order(int num_ranges) {
  AcquisitionOrder order;
  for (int r = 0; r < num_ranges; ++r) order.forward.push_back(r);
  for (int r = num_ranges - 1; r >= 0; --r) order.backward.push_back(r);
  order.grads_ready = order.backward;
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
  if (!order.grads_ready.empty()) {
    std::vector<int> ready(n, 0);
    for (int r : order.grads_ready) {
      if (r < 0 || r >= n)
        fail_input("acquisition order: grads_ready names range {} but the model has {} ranges", r, n);
      ++ready[r];
    }
    for (int r = 0; r < n; ++r)
      if (ready[r] != 1)
        fail_input("acquisition order: grads_ready reports range {} '{}' {} times (once per backward)", r,
                   layout.ranges()[r].name, ready[r]);
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

CollectiveRequest collective_request(const ShardLayout& layout, CollectivePurpose purpose, int range,
                                     const SharedMemoryTiers& shared_memory) {
  const PlanOptions& opt = layout.plan().options();
  const DType wdt = compute_dtype(opt.dtype_mode);
  const TierSet world = tiers_up_to(layout.topology().num_tiers() - 1);
  CollectiveRequest r{.algo = opt.collectives, .quant_block = static_cast<std::size_t>(opt.quant_block)};
  r.shared_memory = shared_memory;
  auto scalar = [&](TierSet tiers, std::size_t count = 1) {
    r.kind = CollectiveKind::all_reduce;
    r.tiers = tiers;
    r.count = count;
    r.dtype = DType::f64;
    r.whole_per_tier = true;
  };
  switch (purpose) {
    case CollectivePurpose::weight_gather_fwd:
      r.kind = CollectiveKind::all_gather;
      r.tiers = layout.forward_gather_tiers();
      r.count = layout.shard_numel(ModelState::w_fwd, range);
      r.dtype = wdt;
      r.quant_bits = opt.qwz ? 8 : 0;
      break;
    case CollectivePurpose::weight_gather_bwd:
      // A secondary partition (hpZ) travels unquantized; W_bwd = W_fwd reads the primary shards.
      r.kind = CollectiveKind::all_gather;
      r.tiers = layout.backward_gather_tiers();
      r.count = layout.shard_numel(ModelState::w_bwd, range);
      r.dtype = wdt;
      r.quant_bits = opt.qwz && !layout.plan().has_secondary_weights() ? 8 : 0;
      break;
    case CollectivePurpose::grad_reduce:
      r.kind = CollectiveKind::reduce_scatter;
      r.tiers = layout.grad_reduce_tiers();
      r.count = layout.shard_numel(ModelState::grad, range);
      r.dtype = opt.qgz ? DType::f32 : wdt;  // qgZ quantizes the fp32 gradient
      r.quant_bits = opt.qgz ? 4 : 0;
      break;
    case CollectivePurpose::grad_boundary_reduce:
      r.kind = CollectiveKind::reduce_scatter;
      r.tiers = layout.boundary_reduce_tiers();
      r.count = layout.shard_numel(ModelState::optim, range);
      r.dtype = DType::f32;
      break;
    case CollectivePurpose::grad_replica_reduce:
      r.kind = CollectiveKind::all_reduce;
      r.tiers = layout.replica_tiers();
      r.count = layout.shard_numel(ModelState::optim, range);
      r.dtype = DType::f32;
      break;
    case CollectivePurpose::weight_refresh:
      r.kind = CollectiveKind::all_gather;
      r.tiers = layout.refresh_gather_tiers();
      r.count = layout.shard_numel(ModelState::optim, range);
      r.dtype = wdt;
      break;
    case CollectivePurpose::grad_norm:
      scalar(layout.norm_tiers());
      break;
    case CollectivePurpose::nonfinite_flag:
      scalar(world, kNonfiniteVoteCount);
      break;
    case CollectivePurpose::loss_sum:
      scalar(world);
      break;
  }
  return r;
}

bool scheduled(const ShardLayout& layout, CollectivePurpose purpose, int range) {
  if (range >= 0 && layout.padded_numel(range) == 0) return false;
  return !plan_collective(layout.topology(), collective_request(layout, purpose, range)).steps.empty();
}

StepSchedule::StepSchedule(const ShardLayout& layout, const AcquisitionOrder& order,
                           const SharedMemoryTiers& shared_memory) {
  check_order(layout, order);
  const Topology& topo = layout.topology();
  const PlanOptions& opt = layout.plan().options();
  for (const auto& t : topo.tiers()) labels_.push_back(t.name);

  // One scheduled collective: the request, and its plan from the one algorithm decision. A
  // collective over one rank, or of a range of 0 elements, moves nothing and is not listed.
  auto add = [&](StepPhase phase, CollectivePurpose purpose, int micro_batch, int range) {
    ScheduledCollective c{.phase = phase, .purpose = purpose, .micro_batch = micro_batch, .range = range};
    c.request = collective_request(layout, purpose, range, shared_memory);
    c.plan = plan_collective(topo, c.request);
    c.kind = c.plan.quant == CollectiveQuant::qgz ? CollectiveKind::all_to_all : c.request.kind;
    c.tiers = c.request.tiers;
    c.dtype = c.request.dtype;
    const bool quantized = c.plan.quant == CollectiveQuant::qwz || c.plan.quant == CollectiveQuant::qgz;
    c.quant_bits = quantized ? c.request.quant_bits : 0;
    c.count = c.request.count;
    c.steps = c.plan.steps;
    if (!c.steps.empty() && (range < 0 || layout.padded_numel(range) > 0))
      collectives_.push_back(std::move(c));
  };

  // Backward acquisitions that reuse the forward's last gathered buffers.
  const int keep = 1 + opt.prefetch_depth;
  const int nf = static_cast<int>(order.forward.size());
  const int nb = static_cast<int>(order.backward.size());
  while (reused_ < std::min({keep, nf, nb}) && order.backward[reused_] == order.forward[nf - 1 - reused_])
    ++reused_;
  // The backward's grads_ready events: event k after acquisition at[k] (as early as its range's last
  // acquisition and the previous event allow).
  std::vector<int> last_bwd(layout.num_ranges(), -1);
  for (int j = 0; j < nb; ++j) last_bwd[order.backward[j]] = j;
  std::vector<int> ready = order.grads_ready;
  if (ready.empty()) {
    std::vector<int> by_last(order.backward.size(), -1);
    for (int r = 0; r < layout.num_ranges(); ++r) by_last[last_bwd[r]] = r;
    for (int r : by_last)
      if (r >= 0) ready.push_back(r);
  }
  std::vector<std::vector<int>> ready_after(nb);  // ranges reported after backward acquisition j
  for (int k = 0, at = 0; k < static_cast<int>(ready.size()); ++k) {
    at = std::max(at, last_bwd[ready[k]]);
    ready_after[at].push_back(ready[k]);
  }

  const int A = opt.grad_accum_steps;
  const int R = layout.num_ranges();
  for (int m = 0; m < A; ++m) {
    const bool last = m + 1 == A;
    for (int r : order.forward) add(StepPhase::forward, CollectivePurpose::weight_gather_fwd, m, r);
    if (last)  // the step's loss is known: sum it while backward runs
      add(StepPhase::scalar, CollectivePurpose::loss_sum, -1, -1);
    for (int j = 0, issued = 0; j < nb; ++j) {
      // Acquiring position j issues the gathers of positions up to j + prefetch_depth (prefetch).
      for (issued = std::max(issued, j); issued < std::min(nb, j + keep); ++issued)
        if (issued >= reused_)
          add(StepPhase::backward, CollectivePurpose::weight_gather_bwd, m, order.backward[issued]);
      for (int r : ready_after[j]) {
        add(StepPhase::backward, CollectivePurpose::grad_reduce, m, r);
        if (last) {  // pipelined boundary: this range's gradient is final for the step
          add(StepPhase::boundary, CollectivePurpose::grad_boundary_reduce, -1, r);
          add(StepPhase::boundary, CollectivePurpose::grad_replica_reduce, -1, r);
        }
      }
    }
  }
  // Boundary: the global norm once every range is reduced, the non-finite vote, then every range's
  // update and refresh.
  add(StepPhase::scalar, CollectivePurpose::grad_norm, -1, -1);
  add(StepPhase::scalar, CollectivePurpose::nonfinite_flag, -1, -1);
  for (int r = 0; r < R; ++r) add(StepPhase::boundary, CollectivePurpose::weight_refresh, -1, r);
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

std::map<std::string, std::uint64_t> StepSchedule::algorithm_counts() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& c : collectives_)
    for (const auto& s : c.steps) ++out[step_algorithm_key(s.label, s.kind, s.algorithm)];
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
