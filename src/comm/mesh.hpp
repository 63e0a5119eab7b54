// A Mesh is the topology laid over a world communicator: one sub-communicator per tier (and per set
// of tiers, on demand), and hierarchical collectives over any set of tiers composed of single-tier
// steps (DESIGN section 4, docs/algorithms.md):
//   all-gather:     outermost tier first, so only the small shards cross the slow links;
//   reduce-scatter: innermost tier first, so data shrinks before it reaches the slow links;
//   all-reduce:     reduce-scatter inner->outer, then all-gather outer->inner.
// Shard layout: for tiers S = {t1 < t2 < ... < tk} (fan-outs f1..fk) the block a rank owns in a
// hierarchical collective is shard_index(S) = mixed radix of its coordinates with the INNERMOST tier
// most significant: c_t1*(f2*...*fk) + c_t2*(f3*...*fk) + ... + c_tk. With that layout both
// compositions produce / consume the plain contiguous tensor, so a parameter shard is an offset and a
// length. Every step is recorded in the ledger under its own tier's name.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "topology/topology.hpp"

namespace tz {

class Mesh {
 public:
  // `topology` must be resolved to world.size() ranks; world.rank() is this rank's mesh position.
  Mesh(Topology topology, std::unique_ptr<Communicator> world);

  const Topology& topology() const { return topology_; }
  Communicator& world() { return *world_; }
  TrafficLedger& ledger() { return world_->ledger(); }

  // Flat communicator over the ranks of this rank's group for `tiers` (created on first use: all ranks
  // of the world must make the first call for a given set together). Label = tier_set_name(tiers).
  Communicator& group(TierSet tiers);
  Communicator& tier(int t) { return group(tier_bit(t)); }
  // Flat communicator over the same ranks as group(tiers), ordered by shard_index(tiers), so one flat
  // collective on it lays blocks out as the hierarchical ones do (a plan's `collectives: flat`).
  // group(tiers) itself when at most one tier of the set has fan-out > 1 (the orders agree). Same
  // label and first-use rule as group().
  Communicator& flat_group(TierSet tiers);

  int group_size(TierSet tiers) const { return topology_.group_size(tiers); }
  int shard_index(TierSet tiers) const;

  // Hierarchical collectives over `tiers`, counts as in Communicator (count = one shard).
  Work all_gather(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype);
  Work reduce_scatter(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype);
  Work all_reduce(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype);

 private:
  // The compositions, whose first step waits for `prev` (stream_wait).
  Work all_gather_after(Work prev, TierSet tiers, const void* send, void* recv, std::size_t count,
                        DType dtype);
  Work reduce_scatter_after(Work prev, TierSet tiers, const void* send, void* recv, std::size_t count,
                            DType dtype);
  // A pooled buffer of at least `bytes`, free again once every Work it was attached to is gone.
  std::shared_ptr<std::vector<std::byte>> scratch(std::size_t bytes);

  Topology topology_;
  std::unique_ptr<Communicator> world_;
  std::map<TierSet, std::unique_ptr<Communicator>> groups_;
  std::map<TierSet, std::unique_ptr<Communicator>> flat_groups_;
  std::vector<std::shared_ptr<std::vector<std::byte>>> scratch_;
};

}  // namespace tz
