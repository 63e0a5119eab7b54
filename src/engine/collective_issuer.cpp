#include "engine/collective_issuer.hpp"

#include "quant/run_collective.hpp"

namespace tz {
namespace {

constexpr int kPurposes = static_cast<int>(CollectivePurpose::loss_sum) + 1;

bool per_micro_batch(CollectivePurpose p) {
  return p == CollectivePurpose::weight_gather_fwd || p == CollectivePurpose::weight_gather_bwd ||
         p == CollectivePurpose::grad_reduce;
}

}  // namespace

std::vector<IssuedCollective> issue_order(const StepSchedule& schedule) {
  std::vector<IssuedCollective> out;
  for (const auto& c : schedule.collectives()) out.push_back({c.purpose, c.micro_batch, c.range});
  return out;
}

CollectiveIssuer::CollectiveIssuer(Mesh& mesh, const ShardLayout& layout) : mesh_(mesh), layout_(layout) {
  listed_.assign(kPurposes, std::vector<bool>(layout.num_ranges() + 1, false));
  steps_.assign(kPurposes, std::vector<std::vector<TierStep>>(layout.num_ranges() + 1));
  for (int p = 0; p < kPurposes; ++p) {
    const auto purpose = static_cast<CollectivePurpose>(p);
    const bool scalar = purpose == CollectivePurpose::grad_norm ||
                        purpose == CollectivePurpose::nonfinite_flag ||
                        purpose == CollectivePurpose::loss_sum;
    for (int r = scalar ? -1 : 0; r < (scalar ? 0 : layout.num_ranges()); ++r) {
      listed_[p][r + 1] = scheduled(layout, purpose, r);
      steps_[p][r + 1] = plan_collective(layout.topology(), collective_request(layout, purpose, r)).steps;
    }
  }
}

Work CollectiveIssuer::issue(CollectivePurpose purpose, int range, const void* send, void* recv,
                             QuantStats* stats, const Work& after) {
  const int p = static_cast<int>(purpose);
  if (listed_[p][range + 1]) {
    const int micro_batch = per_micro_batch(purpose) ? micro_batch_ : -1;
    if (tracing_) trace_.push_back({purpose, micro_batch, range});
    if (step_trace_) step_trace_->collective(purpose, micro_batch, range);
  }
  for (const TierStep& s : steps_[p][range + 1]) {
    TierTraffic& t = traffic_[s.label];
    t.bytes += s.bytes;
    ++t.ops;
  }
  return run_collective(mesh_, collective_request(layout_, purpose, range), send, recv, stats, after);
}

std::map<std::string, TierTraffic> CollectiveIssuer::take_traffic() {
  std::map<std::string, TierTraffic> out;
  for (const auto& t : layout_.topology().tiers()) out[t.name];  // every tier, 0 when idle
  for (auto& [label, t] : traffic_) out[label] = t;
  traffic_.clear();
  return out;
}

std::vector<IssuedCollective> CollectiveIssuer::take_trace() {
  std::vector<IssuedCollective> out;
  out.swap(trace_);
  return out;
}

}  // namespace tz
