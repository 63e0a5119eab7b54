// Which algorithm runs a collective over a set of tiers, and the single-communicator steps it takes:
// THE one decision, made here for everyone. The mesh (comm/mesh.hpp) and the quantized collectives
// (quant/run_collective.hpp) execute exactly these steps, and the step schedule (plan/step_schedule.hpp)
// adds up their bytes, so the bytes a plan predicts equal what the traffic ledger records by
// construction. Pure: a function of (topology, request), no runtime.
//
// Terms. A request names a kind (all-gather, reduce-scatter, all-reduce), the tiers S of the group,
// the count of elements per rank as Mesh takes it (all-gather: one shard; reduce-scatter: the output
// shard; all-reduce: the whole buffer), the element type, the plan's choices: flat or hierarchical
// collectives, and quantization (8 bits: qwZ all-gather; 4 bits: qgZ reduce-scatter). An "active"
// tier of S has fan-out > 1; the others move nothing.
//
// Routes (how the bytes travel), with the steps listed (docs/algorithms.md has the bytes):
//   local         no active tier: nothing travels (a copy, or the quantizer's round trip for qwZ)
//   hierarchical  one step per active tier: all-gather outermost tier first, reduce-scatter innermost
//                 first, all-reduce = reduce-scatter inner->outer then all-gather outer->inner (the
//                 count % |S| tail, if any, first, all-reduced flat on the group of S)
//   flat          ONE step on the group of all ranks of S (ordered by shard index), priced on the
//                 outermost active tier's link; only with collectives = flat and >= 2 active tiers
//   per_tier      a value that cannot be split (a scalar): all-reduced whole on each active tier,
//                 inner first
//   qgz_all_to_all  qgZ: per active tier, inner first, the tier's input is cut into f slices, each
//                 quantized to INT4 on its own, all-to-all, dequantized and summed in fp32
// Algorithm of each step (TierStep::algorithm), for the single communicator that runs it:
//   shared_memory  an all-gather, reduce-scatter or all-to-all whose group lies in one host's memory
//                  (its tiers within the request's shared_memory tiers for that kind, which the
//                  runtime fills: comm/mesh.hpp): every block copied once into a shared staging
//                  buffer and once out (comm/*_shared.cpp)
//   ring           the ring over the transport (all-gather, reduce-scatter, all-reduce: always ring)
//   pairwise       the all-to-all's pairwise exchange over the transport
// Quantization:
//   qwz           the shard is quantized once (INT8 codes + fp32 scales) and its codes travel the
//                 route as u8; every rank dequantizes every shard
//   qgz           the qgz_all_to_all route
//   qgz_fallback  qgZ where quantization cannot pay (some tier's INT4 slice would be no smaller than
//                 its fp32 slice: slices of a few elements): an fp32 hierarchical reduce-scatter
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective_kind.hpp"
#include "core/dtype.hpp"
#include "core/quant_format.hpp"
#include "topology/topology.hpp"

namespace tz {

// How a collective over a set of tiers with more than one active tier runs (a plan option):
// `hierarchical` composes single-tier steps, each on its own tier's link; `flat` runs ONE collective
// on one communicator over all ranks of the set (as DeepSpeed's ZeRO-3/ZeRO++ run NCCL/RCCL rings).
enum class CollectiveAlgo : std::uint8_t { hierarchical, flat };
std::string_view collective_algo_name(CollectiveAlgo a);
CollectiveAlgo parse_collective_algo(std::string_view value, std::string_view what);

// How one single-communicator step runs (see above); `automatic` is for direct calls on a
// communicator outside any plan (its own options decide), never a planned step's.
enum class StepAlgorithm : std::uint8_t { automatic, ring, pairwise, shared_memory };
std::string_view step_algorithm_name(StepAlgorithm a);  // "auto", "ring", "pairwise", "shared"
// "<label> <kind> <algorithm>" ("node all_gather shared"): how the schedule and the traffic ledger
// count the steps of each algorithm.
std::string step_algorithm_key(std::string_view label, CollectiveKind kind, StepAlgorithm a);

// The tiers whose groups may run the shared-memory algorithms, per step kind (a kind switched off in
// the communicators' options has none). What the runtime knows: the ranks that share a host.
struct SharedMemoryTiers {
  TierSet all_gather = 0, reduce_scatter = 0, all_to_all = 0;
  TierSet of(CollectiveKind step_kind) const;
  bool operator==(const SharedMemoryTiers&) const = default;
};

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::all_gather;  // all_gather, reduce_scatter or all_reduce
  TierSet tiers = 0;
  std::size_t count = 0;  // elements per rank, as Mesh takes them (see above)
  DType dtype = DType::f32;
  CollectiveAlgo algo = CollectiveAlgo::hierarchical;
  // 0 = unquantized; 8 or 4 = block-quantized codes of that many bits: an all-gather of f32/bf16
  // runs as qwZ (INT8 by default), a reduce-scatter of f32 as qgZ (INT4 by default).
  int quant_bits = 0;
  std::size_t quant_block = kDefaultQuantBlockSize;
  QuantOptions quant_options() const {
    return {.bits = quant_bits == 4 ? QuantBits::int4 : QuantBits::int8, .block_size = quant_block};
  }
  bool whole_per_tier = false;           // all-reduce of a value that cannot be split (scalars)
  SharedMemoryTiers shared_memory = {};  // none: every step runs over the transport (ring, pairwise)
};

enum class CollectiveRoute : std::uint8_t { local, hierarchical, flat, per_tier, qgz_all_to_all };
enum class CollectiveQuant : std::uint8_t { none, qwz, qgz, qgz_fallback };
std::string_view collective_route_name(CollectiveRoute r);

// One single-communicator collective of a plan: a step of a hierarchical composition (over one
// tier), or a whole flat collective over a set of tiers on the group of all their ranks.
struct TierStep {
  CollectiveKind kind = CollectiveKind::all_gather;  // single-communicator kind
  int tier = 0;        // the tier whose link prices the step: its own, or the outermost of a flat set
  TierSet tiers = 0;   // the group's tiers: tier_bit(tier) for a per-tier step
  std::string label;   // ledger key: the tier's name, or tier_set_name(tiers) for a group step
  int group_size = 1;  // ranks in the group: the tier's fan-out, or |group(tiers)|
  std::size_t payload_bytes = 0;  // as collective_kind.hpp defines the payload for this kind
  double bytes = 0;               // algorithmic_bytes(kind, payload_bytes, group_size) per rank
  StepAlgorithm algorithm = StepAlgorithm::ring;  // how the step's communicator runs it
};

struct CollectivePlan {
  CollectiveRoute route = CollectiveRoute::local;
  CollectiveQuant quant = CollectiveQuant::none;
  // What a mesh route carries, per rank as Mesh counts it: the request's elements, or for qwZ the
  // shard's codes and scales as u8 (qgZ's steps carry per-tier slices: see its route above).
  DType wire_dtype = DType::f32;
  std::size_t wire_count = 0;
  std::vector<TierStep> steps;  // in issue order; empty when nothing travels
  double bytes() const;         // sum over the steps
};

// The plan for `request` over `topology` (resolved). InternalError for a request no algorithm runs
// (e.g. qwZ on a reduce-scatter); the caller validates user input before.
CollectivePlan plan_collective(const Topology& topology, const CollectiveRequest& request);

// Whether qgZ takes its quantized path for these sizes (false: the fp32 fallback). Depends only on
// (topology, tiers, count, block), so every rank decides alike.
bool qgz_quantized_path(const Topology& topology, TierSet tiers, std::size_t count,
                        const QuantOptions& quant);

// Tiers of `set` with fan-out > 1, innermost first.
std::vector<int> active_tiers(const Topology& topology, TierSet set);
// Whether a collective over `tiers` runs as ONE flat collective: algo = flat and >= 2 active tiers.
bool runs_flat(const Topology& topology, TierSet tiers, CollectiveAlgo algo);

}  // namespace tz
