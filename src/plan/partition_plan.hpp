// A partition plan (docs/plan.md) says, for each model state, on which tier of the topology it
// is sharded:
//   W_fwd  the weights all-gathered for the forward pass (stored as the primary weight shard),
//   W_bwd  the weights all-gathered for the backward pass; on an inner tier than W_fwd it is a
//          secondary partition kept from the forward gather (ZeRO++ hpZ),
//   G      the gradients (fp32 accumulation over micro-batches),
//   O      the optimizer state: fp32 master weights and the two AdamW moments.
// A placement is an integer t in [-1, T-1]: t >= 0 = sharded over the DOMAIN up to tier t (tiers
// 0..t, TierSet tiers_up_to(t)); -1 (kReplicated) = every rank holds the whole state (no tiers,
// shard count 1). A larger t is a finer sharding. Presets (ddp, zero1, zero2, zero3, zeropp,
// mics/hsdp, three-level) are values of this one mechanism, never special code paths.
//
// Consistency rules (validate(), docs/plan.md): tier(W_bwd) <= tier(W_fwd); tier(G) <= tier(O);
// qwZ needs W_fwd sharded; qgZ needs G sharded; every tier exists in the topology; option ranges
// (quant_block: a multiple of 32 in 32..65536, as core/quant_format.hpp requires).
// A plan is a pure value: no MPI, printable (describe) and serialisable (to_json) against the
// topology it was made for (tier names come from it).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective_plan.hpp"
#include "core/dtype.hpp"
#include "topology/topology.hpp"

namespace tz {

enum class ModelState : std::uint8_t { w_fwd, w_bwd, grad, optim };
inline constexpr std::array<ModelState, 4> kModelStates = {ModelState::w_fwd, ModelState::w_bwd,
                                                           ModelState::grad, ModelState::optim};
// "W_fwd", "W_bwd", "G", "O" (also the JSON keys).
std::string_view model_state_name(ModelState s);

inline constexpr int kReplicated = -1;

// Tiers a state placed on `tier` is sharded over: tiers 0..tier, none when replicated.
constexpr TierSet placement_domain(int tier) {
  return tier < 0 ? TierSet{0} : tiers_up_to(tier);
}
// Tiers (lo, hi]: what a shard on tier `lo` is reduce-scattered over to become a shard on `hi`, and
// what a shard on `hi` is all-gathered over to become one on `lo`. Empty when hi <= lo.
constexpr TierSet tiers_between(int lo, int hi) {
  return hi <= lo ? TierSet{0} : TierSet(placement_domain(hi) & ~placement_domain(lo));
}

// `bf16` (default): weights travel and are computed in bf16, per-range gradient reductions travel in
// bf16, accumulation and the step-boundary exchange are fp32. `fp32`: everything fp32 (exactness).
enum class DTypeMode : std::uint8_t { bf16, fp32 };
std::string_view dtype_mode_name(DTypeMode m);
// Element type of weights and per-range gradients on the wire and in compute buffers.
constexpr DType compute_dtype(DTypeMode m) {
  return m == DTypeMode::bf16 ? DType::bf16 : DType::f32;
}

// PlanOptions::collectives, how a collective over several active tiers runs (hierarchical or flat),
// is collective/collective_plan.hpp's CollectiveAlgo: that layer decides the algorithm for everyone.
struct PlanOptions {
  bool qwz = false;          // INT8 block-quantized forward weight all-gathers (ZeRO++ qwZ)
  bool qgz = false;          // INT4 block-quantized all-to-all gradient reduction (ZeRO++ qgZ)
  int quant_block = 256;     // elements per quantization block (one fp32 scale each); multiple of 32
  int prefetch_depth = 1;    // gathered ranges in flight beyond the one being computed
  int grad_accum_steps = 1;  // micro-batches per optimizer step
  int micro_batch_size = 1;  // sequences per micro-batch per rank
  DTypeMode dtype_mode = DTypeMode::bf16;
  CollectiveAlgo collectives = CollectiveAlgo::hierarchical;
};

// Preset parameters. mics/hsdp: the partition group is the domain up to `partition_tier`, or the
// domain whose size is `partition_size` (one of them; neither = the host tier). zeropp: `hpz`
// puts W_bwd on the host tier (the innermost tier when the topology names no host tier), or on the
// domain of `hpz_partition_size` ranks when that is given (DeepSpeed's zero_hpz_partition_size).
struct PresetArgs {
  std::string partition_tier = {};
  int partition_size = 0;
  bool hpz = true;
  int hpz_partition_size = 0;
};

class PartitionPlan {
 public:
  using Tiers = std::array<int, 4>;  // indexed by ModelState: W_fwd, W_bwd, G, O

  PartitionPlan() = default;  // ddp over any topology
  PartitionPlan(std::string name, Tiers tiers, PlanOptions options);

  // A named preset over `topo` (names in preset_names()); InputError for an unknown name or bad args.
  // zeropp sets qwz and qgz; the other presets leave options at their defaults.
  static PartitionPlan preset(std::string_view name, const Topology& topo, const PresetArgs& args = {});
  static std::vector<std::string> preset_names();

  const std::string& name() const { return name_; }
  int tier(ModelState s) const { return tiers_[static_cast<int>(s)]; }
  const Tiers& tiers() const { return tiers_; }
  bool replicated(ModelState s) const { return tier(s) < 0; }
  TierSet domain(ModelState s) const { return placement_domain(tier(s)); }
  // True when W_bwd is a secondary partition (strictly coarser than W_fwd, kept from the forward).
  bool has_secondary_weights() const { return tier(ModelState::w_bwd) < tier(ModelState::w_fwd); }
  const PlanOptions& options() const { return options_; }

  PartitionPlan with_options(const PlanOptions& options) const;
  PartitionPlan with_tier(ModelState s, int tier) const;
  PartitionPlan with_name(std::string name) const;

  // Throws InputError naming the rule, the states, their tiers and the topology when a rule breaks.
  void validate(const Topology& topo) const;
  // validate() plus: `topo` is resolved and has exactly `world_size` ranks.
  void validate_world(const Topology& topo, int world_size) const;

  // Multi-line, human-readable: one line per state (tier, domain, shard count) and the options.
  std::string describe(const Topology& topo) const;
  // {"name", "W_fwd": tier name or "replicated", ..., "qwz", ...}: reads back with plan_from_json.
  nlohmann::json to_json(const Topology& topo) const;

 private:
  std::string name_ = "ddp";
  Tiers tiers_ = {kReplicated, kReplicated, kReplicated, kReplicated};
  PlanOptions options_;
};

// Name of a placement: the tier's name, or "replicated".
std::string placement_name(const Topology& topo, int tier);
// Parses a placement: a tier name, "world" (the outermost tier, unless a tier is named so),
// "replicated" or "none". InputError naming `what`, the value and the known tiers otherwise.
int parse_placement(const Topology& topo, std::string_view value, std::string_view what);
// The smallest tier whose domain has `size` ranks (1 -> -1, replicated); InputError naming `what`,
// the size and the topology's domain sizes when none has it.
int tier_of_domain_size(const Topology& topo, int size, std::string_view what);

// What a user writes (JSON keys or CLI options): an optional preset, per-state overrides, options.
// Unset fields keep the preset's value. Without a preset the base is ddp (all replicated). Setting
// W_fwd without W_bwd puts W_bwd on W_fwd's tier (no secondary partition); "W" sets both.
struct PlanSpec {
  std::string name = {};    // "" = the preset's name ("custom" without a preset; "<preset>*" if modified)
  std::string preset = {};  // "" = none
  PresetArgs preset_args = {};
  bool hpz_given = false;  // preset_args.hpz was set explicitly (only zeropp takes it)
  std::optional<std::string> w = {}, w_fwd = {}, w_bwd = {}, grad = {}, optim = {};
  std::optional<bool> qwz = {}, qgz = {};
  std::optional<int> quant_block = {}, prefetch_depth = {}, grad_accum_steps = {}, micro_batch_size = {};
  std::optional<DTypeMode> dtype_mode = {};
  std::optional<CollectiveAlgo> collectives = {};
};

// JSON keys: "name", "preset", "partition_tier", "partition_size", "hpz", "hpz_partition_size", "W",
// "W_fwd", "W_bwd", "G", "O", "qwz", "qgz", "quant_block", "prefetch_depth",
// "gradient_accumulation_steps", "micro_batch_size", "dtype" ("bf16" | "fp32"), "collectives"
// ("hierarchical" | "flat"). Unknown keys are
// errors naming the key.
PlanSpec plan_spec_from_json(const nlohmann::json& doc, std::string_view origin);
DTypeMode parse_dtype_mode(std::string_view value, std::string_view what);
// Builds and validates the plan the spec describes over `topo`.
PartitionPlan make_plan(const PlanSpec& spec, const Topology& topo);
inline PartitionPlan plan_from_json(const nlohmann::json& doc, const Topology& topo,
                                    std::string_view origin) {
  return make_plan(plan_spec_from_json(doc, origin), topo);
}

}  // namespace tz
