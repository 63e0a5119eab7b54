// The step schedule: every collective one training step performs, IN ISSUE ORDER, with its per-tier
// steps and the bytes each moves by the ledger convention of comm/traffic.hpp (algorithmic_bytes).
// This is THE formula: the engine issues exactly these collectives in exactly this order (the same
// on every rank, so the schedule is the same for every rank; which shard a rank holds is in
// ShardLayout), its measured ledger equals bytes_per_tier(), a test holds the engine's issue order to
// collectives(), and the cost model prices the same list.
//
// One step (docs/engine.md), for each micro-batch m = 0..A-1:
//   forward:  for each range in order.forward: all-gather of the W_fwd shard over W_fwd's domain
//             (payload = the padded range, compute dtype; qwZ: INT8 codes + fp32 scales). The W_bwd
//             secondary shard (hpZ) is sliced from the gathered range: no traffic.
//   after the LAST micro-batch's forward (its loss is known): the loss sum, all-reduced over the
//             world while backward runs.
//   backward: the model's events in order (order.backward acquisitions, order.grads_ready):
//             acquiring backward position j issues the W_bwd all-gathers of positions up to
//             j + prefetch_depth not issued yet (prefetch), over W_bwd's domain (never quantized when
//             it is a secondary partition; qwZ when W_bwd = W_fwd), EXCEPT the leading acquisitions
//             that mirror the forward tail: backward acquisition j (j < 1 + prefetch_depth) reuses
//             the still-gathered forward buffer when order.backward[0..j] == reverse of the last j+1
//             forward acquisitions (the last block and a tied LM head).
//             When a range's gradient is final (its grads_ready event) it is reduced into the G
//             shard: reduce-scatter over G's domain (compute dtype), or qgZ: INT4 all-to-all tier by
//             tier; where qgz_quantized_path() says quantization cannot pay (tiny slices), qgZ falls
//             back to the fp32 reduce-scatter, and so does the schedule. On the LAST micro-batch the
//             range's boundary reduction follows at once (pipelined boundary): the reduce-scatter
//             G shard -> O shard over (tG, tO] (fp32), then the all-reduce of the O-shard gradient
//             over (tO, T-1] across O's replicas (fp32, as Mesh::all_reduce: reduce-scatter
//             inner->outer then all-gather outer->inner, two steps even on one tier).
// Step boundary (once every range is reduced): the grad-norm sum of squares all-reduced over O's
//   domain; the non-finite vote (kNonfiniteVoteCount f64 counts, summed over the world: where each
//   rank saw inf/NaN this step, its optimizer check included, so every rank decides the skip alike);
//   then AdamW range by range, each range's all-gather of its new weights from O shards to
//   W_fwd shards over (tW_fwd, tO] (compute dtype) issued right after its update (the next step's
//   forward waits for it where it first uses the range). Scalars are f64 (one element; the vote
//   kNonfiniteVoteCount), all-reduced
//   tier by tier inner->outer on the per-tier communicators (mesh.tier(t), NOT Mesh::all_reduce, which
//   would run one flat all-reduce under the group's label): a scalar cannot be split, so each tier
//   step carries the whole 8 bytes (the vote 8 x kNonfiniteVoteCount).
//
// Flat collectives (PlanOptions::collectives = flat, ShardLayout::runs_flat): a W gather, an
// unquantized gradient reduce-scatter, the boundary reduce-scatter, the replica all-reduce and the
// refresh gather over a set S with more than one non-trivial tier are ONE step on group(S): kind as
// the collective, group_size |S|, tier = the outermost non-trivial tier of S (its link prices the
// ring), label tier_set_name(S); qwZ gathers the codes in that one step. Scalars and qgZ (with its
// fp32 fallback) stay tier by tier.
//
// Per-tier steps (mesh.hpp): all-gather outer tier first, reduce-scatter and all-to-all inner tier
// first; a tier of fan-out 1 contributes no step; a collective over one rank, or of a range of 0
// elements, is not listed (scheduled() says which are).
// For a k-tier all-gather of a shard of c elements (fan-outs f1..fk, inner first) the step on tier
// i has payload c * f_i * ... * f_k elements and moves (f_i - 1)/f_i of it per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective_plan.hpp"
#include "core/dtype.hpp"
#include "plan/shard_layout.hpp"

namespace tz {

// Bytes of `numel` values block-quantized to `bits` (8 or 4) with `block` values per block: the
// codes are padded to whole blocks, INT4 packs two values per byte, each block carries one fp32
// scale: ceil(numel / block) * (ceil(block * bits / 8) + 4). 0 for numel 0.
std::size_t quantized_bytes(std::size_t numel, int bits, std::size_t block);

// The model's acquisition order: range indices as the forward and the backward pass acquire them
// (a tied embedding may appear twice). Every range must appear in both. `grads_ready`: the order in
// which the backward pass reports each range's gradient final (each range once); event k comes right
// after backward acquisition max(last backward acquisition of its range, that of event k-1), i.e. as
// early as its range and the events before it allow (model/range_schedule.hpp's protocol: a tied
// embedding is reported last, after the encoder). Empty: each range right after its last backward
// acquisition.
struct AcquisitionOrder {
  std::vector<int> forward;
  std::vector<int> backward;
  std::vector<int> grads_ready = {};
};
// forward = 0..n-1, backward = n-1..0, grads_ready = backward (a model without tied ranges).
AcquisitionOrder sequential_order(int num_ranges);

enum class StepPhase : std::uint8_t { forward, backward, boundary, scalar };
std::string_view step_phase_name(StepPhase p);

enum class CollectivePurpose : std::uint8_t {
  weight_gather_fwd,     // W_fwd all-gather before a range's forward
  weight_gather_bwd,     // W_bwd all-gather before a range's backward
  grad_reduce,           // a range's gradient into the G shard (per micro-batch)
  grad_boundary_reduce,  // G shard -> O shard over (tG, tO]
  grad_replica_reduce,   // O-shard gradient all-reduce over (tO, T-1]
  weight_refresh,        // updated weights from O shards to W_fwd shards over (tW_fwd, tO]
  grad_norm,             // scalar: sum of squares over O's domain
  nonfinite_flag,        // scalars: where ranks saw inf/NaN (kNonfiniteVoteCount counts), over the world
  loss_sum,              // scalar: loss over the world
};
std::string_view collective_purpose_name(CollectivePurpose p);

// Elements of the non-finite vote: per place where a value can turn inf/NaN (the loss, the
// gradients, a quantized block, the optimizer's update), one f64 count summed over the world.
inline constexpr std::size_t kNonfiniteVoteCount = 4;

struct ScheduledCollective {
  StepPhase phase = StepPhase::forward;
  CollectivePurpose purpose = CollectivePurpose::weight_gather_fwd;
  int micro_batch = -1;  // 0..A-1 in forward/backward, -1 at the boundary and for scalars
  int range = -1;        // index into the range table, -1 for scalars
  CollectiveKind kind = CollectiveKind::all_gather;  // all_to_all = qgZ reduction
  TierSet tiers = 0;
  DType dtype = DType::f32;  // element type of the data (the u8 codes travel when quant_bits > 0)
  int quant_bits = 0;        // 0, 8 (qwZ) or 4 (qgZ)
  std::size_t count = 0;     // elements per rank as the Mesh call takes it (one shard; all-reduce: all)
  std::vector<TierStep> steps = {};
  // What the engine issues (collective_request) and the one algorithm decision for it
  // (plan_collective); kind..steps above are read off these for tables and the cost model.
  CollectiveRequest request = {};
  CollectivePlan plan = {};
  double bytes() const;  // sum of the steps
};

// The request of `range`'s collective of `purpose` (range -1 for the scalars), the same in every
// micro-batch: tiers from the layout, count per rank, dtype, and the plan's choices (flat or
// hierarchical, qwZ, qgZ, block size), and the tiers whose groups may share memory where it runs
// (Mesh::shared_memory_tiers; none for a prediction of a cluster's rings). The engine issues exactly
// these through run_collective (quant/run_collective.hpp), and the schedule lists them, so both see
// one plan_collective result, algorithms included.
CollectiveRequest collective_request(const ShardLayout& layout, CollectivePurpose purpose, int range,
                                     const SharedMemoryTiers& shared_memory = {});

// Whether the schedule lists `range`'s collective of `purpose`: it moves something (its plan has
// steps and the range is not empty). The engine traces exactly the collectives this admits.
bool scheduled(const ShardLayout& layout, CollectivePurpose purpose, int range);

class StepSchedule {
 public:
  // `shared_memory`: where the step runs (collective_request); none prices every step over links.
  StepSchedule(const ShardLayout& layout, const AcquisitionOrder& order,
               const SharedMemoryTiers& shared_memory = {});

  const std::vector<ScheduledCollective>& collectives() const { return collectives_; }
  // Backward acquisitions served by the forward's last buffers (per micro-batch; same each time).
  int reused_in_backward() const { return reused_; }

  // Bytes per rank per step keyed by step label (TierStep::label): every tier of the topology is
  // present (0 if idle), and so is the label of every flat group a step runs on.
  // Steps per algorithm, keyed as the traffic ledger counts them (step_algorithm_key).
  std::map<std::string, std::uint64_t> algorithm_counts() const;
  std::map<std::string, double> bytes_per_tier() const;
  std::map<std::string, double> bytes_per_tier(StepPhase phase) const;
  double total_bytes() const;
  // The step labels: the topology's tier names innermost first, then flat groups' labels in order
  // of first use.
  const std::vector<std::string>& labels() const { return labels_; }
  // A table: one row per collective kind/purpose aggregated, then bytes per tier.
  std::string describe(const Topology& topo) const;

 private:
  std::vector<std::string> labels_;
  std::vector<ScheduledCollective> collectives_;
  int reused_ = 0;
};

}  // namespace tz
