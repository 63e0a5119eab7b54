// Shard layout: padding and shard spans of every state of every range (see shard_layout.hpp).
// Padding rule: each range is padded to a multiple of the world size, the product of all fan-outs,
// so every tier set's group size divides it and shards never straddle a partial element.
#include "plan/shard_layout.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz {

int shard_index(const Topology& topo, int rank, TierSet tiers) {
  const std::vector<int> c = topo.coords(rank);
  int index = 0;
  for (int t = 0; t < topo.num_tiers(); ++t)  // innermost tier first = most significant digit
    if (tiers & tier_bit(t)) index = index * topo.tier(t).fanout + c[t];
  return index;
}

ShardLayout::ShardLayout(std::vector<RangeSpec> ranges, Topology topo, PartitionPlan plan)
    : ranges_(std::move(ranges)), topo_(std::move(topo)), plan_(std::move(plan)) {
  if (!topo_.resolved())
    fail_input("shard layout: topology {} has an 'auto' outer fan-out; resolve it to the world size first",
               topo_.name());
  plan_.validate(topo_);
  world_size_ = topo_.world_size();
  const std::size_t m = pad_multiple();
  std::size_t offset = 0;
  for (const auto& r : ranges_) {
    const std::size_t padded = (r.numel + m - 1) / m * m;
    padded_.push_back(padded);
    padded_offsets_.push_back(offset);
    offset += padded;
  }
}

std::size_t ShardLayout::padded_numel(int range) const {
  return padded_.at(range);
}
std::size_t ShardLayout::padded_offset(int range) const {
  return padded_offsets_.at(range);
}

std::size_t ShardLayout::total_numel() const {
  std::size_t n = 0;
  for (const auto& r : ranges_) n += r.numel;
  return n;
}

std::size_t ShardLayout::total_padded_numel() const {
  return padded_.empty() ? 0 : padded_offsets_.back() + padded_.back();
}

std::size_t ShardLayout::max_padded_numel() const {
  return padded_.empty() ? 0 : *std::max_element(padded_.begin(), padded_.end());
}

std::size_t ShardLayout::shard_numel(ModelState s, int range) const {
  return padded_numel(range) / static_cast<std::size_t>(shard_count(s));
}

std::size_t ShardLayout::state_shard_numel(ModelState s) const {
  return total_padded_numel() / static_cast<std::size_t>(shard_count(s));
}

std::size_t ShardLayout::local_offset(ModelState s, int range) const {
  return padded_offset(range) / static_cast<std::size_t>(shard_count(s));
}

ShardSpan ShardLayout::shard(ModelState s, int range, int rank) const {
  TZ_CHECK(rank >= 0 && rank < world_size_, "rank {} of {}", rank, world_size_);
  ShardSpan span;
  span.numel = shard_numel(s, range);
  span.offset = static_cast<std::size_t>(shard_index(topo_, rank, domain(s))) * span.numel;
  const std::size_t real = ranges_.at(range).numel;
  span.valid_numel = real > span.offset ? std::min(span.numel, real - span.offset) : 0;
  return span;
}

TierSet ShardLayout::boundary_reduce_tiers() const {
  return tiers_between(plan_.tier(ModelState::grad), plan_.tier(ModelState::optim));
}

TierSet ShardLayout::replica_tiers() const {
  return tiers_between(plan_.tier(ModelState::optim), topo_.num_tiers() - 1);
}

TierSet ShardLayout::refresh_gather_tiers() const {
  return tiers_between(plan_.tier(ModelState::w_fwd), plan_.tier(ModelState::optim));
}

bool ShardLayout::runs_flat(TierSet tiers) const {
  return tz::runs_flat(topo_, tiers, plan_.options().collectives);
}

}  // namespace tz
