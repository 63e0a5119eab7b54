// Shard layout: where every element of every model state lives on every rank, from the model's
// parameter ranges, the topology and the plan. The engine allocates exactly from this.
//
// Terms. A range is one named, contiguous block of parameters the engine acquires as a unit (a
// transformer block, the embedding, ...). Its numel real elements are padded at the end to
// padded_numel, a multiple of the world size (pad_multiple()); every group any plan uses is a set of
// tiers whose size divides the world size, so every shard of every state has the same whole length.
// Quantization needs no further padding: each quantized message pads its own last block (see
// quantized_bytes in step_schedule.hpp).
//
// Shards. A state placed on tier t is split over its domain D = tiers 0..t into |D| equal shards of
// padded_numel / |D| elements; the rank owns block shard_index(D) (comm/mesh.hpp: mixed radix of its
// coordinates in D, INNERMOST tier most significant). With this nesting, the shard over a larger
// domain is a sub-block of the shard over a smaller one that holds the same inner coordinates, so a
// W shard on tier tW is the all-gather over tiers (tW, tO] of O shards, a G shard reduce-scattered
// over (tG, tO] yields the O shard, etc. A replicated state has one shard: the whole padded range.
// A shard may hold no real element (valid_numel = 0: all padding, e.g. 3 elements over 8 ranks).
//
// Per-state local buffers: a rank stores the shards of all ranges of a state back to back, in range
// order: range i's shard starts at local_offset(s, i), the buffer is state_shard_numel(s) long.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/partition_plan.hpp"
#include "topology/topology.hpp"

namespace tz {

// A parameter range as the plan sees it: a name and a size (the model's ParamRange also has an offset).
struct RangeSpec {
  std::string name;
  std::size_t numel = 0;
};

// One rank's shard of one range, in elements relative to the start of the padded range.
struct ShardSpan {
  std::size_t offset = 0;       // first element
  std::size_t numel = 0;        // length, padding included (equal on all ranks)
  std::size_t valid_numel = 0;  // real elements in [offset, offset + numel): the rest is padding
};

// Block index of `rank` among the |tiers| shards of a range split over `tiers` (innermost tier most
// significant, as Mesh::shard_index). 0 for no tiers.
int shard_index(const Topology& topo, int rank, TierSet tiers);

class ShardLayout {
 public:
  // `topo` must be resolved; `plan` is validated against it. Ranges may have numel 0.
  ShardLayout(std::vector<RangeSpec> ranges, Topology topo, PartitionPlan plan);

  const std::vector<RangeSpec>& ranges() const { return ranges_; }
  int num_ranges() const { return static_cast<int>(ranges_.size()); }
  const Topology& topology() const { return topo_; }
  const PartitionPlan& plan() const { return plan_; }
  int world_size() const { return world_size_; }

  std::size_t pad_multiple() const { return static_cast<std::size_t>(world_size_); }
  std::size_t padded_numel(int range) const;
  // Offset of the range in a flat buffer of all padded ranges back to back (a full replica).
  std::size_t padded_offset(int range) const;
  std::size_t total_numel() const;         // real elements of all ranges
  std::size_t total_padded_numel() const;  // padded elements of all ranges
  std::size_t max_padded_numel() const;    // the largest padded range (sizes gather buffers)

  TierSet domain(ModelState s) const { return plan_.domain(s); }
  int shard_count(ModelState s) const { return topo_.group_size(domain(s)); }
  std::size_t shard_numel(ModelState s, int range) const;  // padded_numel / shard_count
  std::size_t state_shard_numel(ModelState s) const;       // the rank's whole local buffer
  std::size_t local_offset(ModelState s, int range) const;
  ShardSpan shard(ModelState s, int range, int rank) const;

  // The tier sets of the step's collectives (docs/engine.md, "One step"); empty = no traffic.
  TierSet forward_gather_tiers() const { return domain(ModelState::w_fwd); }
  TierSet backward_gather_tiers() const { return domain(ModelState::w_bwd); }
  TierSet grad_reduce_tiers() const { return domain(ModelState::grad); }
  // (tG, tO]: finishes the gradient reduction at the step boundary.
  TierSet boundary_reduce_tiers() const;
  // (tO, T-1]: all-reduce of the O-shard gradient across replicas of the optimizer state.
  TierSet replica_tiers() const;
  // (tW_fwd, tO]: all-gather of the updated weights from O shards back to W_fwd shards.
  TierSet refresh_gather_tiers() const;
  // The grad-norm sum of squares is all-reduced over O's domain (each element counted once).
  TierSet norm_tiers() const { return domain(ModelState::optim); }

  // True when the plan runs a collective over `tiers` as ONE flat collective on the group of all its
  // ranks (PlanOptions::collectives = flat and more than one tier of the set has fan-out > 1); the
  // group's ranks are ordered by shard_index, so the flat result has the hierarchical layout.
  bool runs_flat(TierSet tiers) const;

 private:
  std::vector<RangeSpec> ranges_;
  Topology topo_;
  PartitionPlan plan_;
  int world_size_ = 1;
  std::vector<std::size_t> padded_;          // per range
  std::vector<std::size_t> padded_offsets_;  // per range, prefix sums
};

}  // namespace tz
