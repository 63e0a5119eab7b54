// A Mesh is the topology laid over a world communicator: one sub-communicator per tier (and per set
// of tiers, on demand), and collectives over any set of tiers. Which algorithm runs (hierarchical
// composition, one flat collective, tier by tier) is plan_collective's decision
// (collective/collective_plan.hpp); the mesh executes the plan's steps, each one single-communicator
// collective, so the ledger records exactly the plan's bytes. Hierarchical compositions
// (docs/algorithms.md):
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
#include <span>
#include <vector>

#include "collective/collective_plan.hpp"
#include "comm/communicator.hpp"
#include "device/scratch_pool.hpp"
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

  // Creates now every communicator `plan` (for a collective over `tiers`) runs on. Communicators are
  // created collectively, so a caller that issues collectives from several streams calls this for
  // all of them first, in one order on every rank.
  void prepare(const CollectivePlan& plan, TierSet tiers);

  int group_size(TierSet tiers) const { return topology_.group_size(tiers); }
  int shard_index(TierSet tiers) const;

  // Collectives over `tiers`, counts as in Communicator (count = one shard), hierarchical unless
  // `algo` asks for flat (which runs flat only over two or more active tiers).
  Work all_gather(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                  CollectiveAlgo algo = CollectiveAlgo::hierarchical);
  Work reduce_scatter(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                      CollectiveAlgo algo = CollectiveAlgo::hierarchical);
  Work all_reduce(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                  CollectiveAlgo algo = CollectiveAlgo::hierarchical);
  // An unquantized request: plan_collective picks the algorithm (with this mesh's shared-memory
  // tiers, whatever the request says), execute runs it.
  Work run(const CollectiveRequest& request, const void* send, void* recv);
  // The tiers whose groups may run the shared-memory algorithms here, per step kind: all of them when
  // every rank of the world is on this host (threads, or an MPI job on one machine), else those
  // within the topology's host tier; none over a transport that cannot share memory (the simulated
  // one) or for a kind the options switch off. What every plan of this mesh's collectives is made
  // with (collective/collective_plan.hpp), so the schedule and the ledger see the algorithm that runs.
  SharedMemoryTiers shared_memory_tiers() const;
  CollectiveRequest with_shared_memory(CollectiveRequest request) const;
  // Runs the route of `plan` (from plan_collective for a `kind` over `tiers`) on buffers of
  // plan.wire_count elements of plan.wire_dtype per rank. The quantized collectives run their codes
  // through it (quant/run_collective.hpp). Not for the qgz_all_to_all route (quant runs its steps).
  Work execute(const CollectivePlan& plan, CollectiveKind kind, TierSet tiers, const void* send, void* recv);

 private:
  // The hierarchical compositions of `steps` (the plan's, in order), whose first step waits for
  // `prev` (stream_wait).
  Work all_gather_steps(Work prev, std::span<const TierStep> steps, TierSet tiers, const void* send,
                        void* recv, std::size_t count, DType dtype);
  Work reduce_scatter_steps(Work prev, std::span<const TierStep> steps, TierSet tiers, const void* send,
                            void* recv, std::size_t count, DType dtype);
  Work all_reduce_steps(std::span<const TierStep> steps, TierSet tiers, const void* send, void* recv,
                        std::size_t count, DType dtype);
  // A pooled buffer of at least `bytes`, free again once every Work it was attached to is gone (the
  // pool's lock orders the last use by a progress thread before the next hand-out).
  ScratchBuffer scratch(std::size_t bytes) { return scratch_.get(bytes); }

  Topology topology_;
  std::unique_ptr<Communicator> world_;
  std::map<TierSet, std::unique_ptr<Communicator>> groups_;
  std::map<TierSet, std::unique_ptr<Communicator>> flat_groups_;
  Backend& device_;      // of the world's buffers (CommOptions::device): intermediates live there too
  ScratchPool scratch_;  // intermediate shards, in device_'s memory
};

}  // namespace tz
