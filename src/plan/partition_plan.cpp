// Partition plan: presets, parsing, validation and printing. See partition_plan.hpp for the
// placement semantics and docs/plan.md for the rules and the presets table.
#include "plan/partition_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/quant_format.hpp"

namespace tz {

std::string_view model_state_name(ModelState s) {
  switch (s) {
    case ModelState::w_fwd:
      return "W_fwd";
    case ModelState::w_bwd:
      return "W_bwd";
    case ModelState::grad:
      return "G";
    case ModelState::optim:
      return "O";
  }
  return "?";
}

std::string_view dtype_mode_name(DTypeMode m) {
  return m == DTypeMode::bf16 ? "bf16" : "fp32";
}

DTypeMode parse_dtype_mode(std::string_view value, std::string_view what) {
  if (value == "bf16") return DTypeMode::bf16;
  if (value == "fp32" || value == "f32") return DTypeMode::fp32;
  fail_input("{}: dtype '{}' is not one of bf16, fp32", what, text_excerpt(value));
}

namespace {

std::string tier_list(const Topology& topo) {
  std::string s;
  for (const auto& t : topo.tiers()) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

std::string domain_sizes(const Topology& topo) {
  std::string s;
  for (int t = 0; t < topo.num_tiers(); ++t)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", topo.tier(t).name, topo.group_size(tiers_up_to(t)));
  return s;
}

// The tier hpZ and three-level treat as "the node": the host tier, else the innermost tier.
int node_tier(const Topology& topo) {
  return topo.host_tier() >= 0 ? topo.host_tier() : 0;
}

int world_tier(const Topology& topo) {
  return topo.num_tiers() - 1;
}

}  // namespace

std::string placement_name(const Topology& topo, int tier) {
  if (tier < 0) return "replicated";
  if (tier >= topo.num_tiers()) return fmt::format("tier {} (not in topology {})", tier, topo.name());
  return topo.tier(tier).name;
}

int parse_placement(const Topology& topo, std::string_view value, std::string_view what) {
  for (int t = 0; t < topo.num_tiers(); ++t)
    if (topo.tier(t).name == value) return t;
  if (value == "world") return world_tier(topo);
  if (value == "replicated" || value == "none") return kReplicated;
  fail_input("plan: {} names unknown tier '{}' (topology {} has tiers: {}; or 'world', 'replicated')", what,
             text_excerpt(value), topo.name(), tier_list(topo));
}

int tier_of_domain_size(const Topology& topo, int size, std::string_view what) {
  if (size == 1) return kReplicated;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if (topo.group_size(tiers_up_to(t)) == size) return t;
  fail_input("plan: {} {} is not the size of any domain of topology {} (domain sizes: {})", what, size,
             topo.name(), domain_sizes(topo));
}

PartitionPlan::PartitionPlan(std::string name, Tiers tiers, PlanOptions options)
    : name_(std::move(name)), tiers_(tiers), options_(options) {}

PartitionPlan PartitionPlan::with_options(const PlanOptions& options) const {
  PartitionPlan p = *this;
  p.options_ = options;
  return p;
}

PartitionPlan PartitionPlan::with_tier(ModelState s, int tier) const {
  PartitionPlan p = *this;
  p.tiers_[static_cast<int>(s)] = tier;
  return p;
}

PartitionPlan PartitionPlan::with_name(std::string name) const {
  PartitionPlan p = *this;
  p.name_ = std::move(name);
  return p;
}

std::vector<std::string> PartitionPlan::preset_names() {
  return {"ddp", "zero1", "zero2", "zero3", "zeropp", "mics", "hsdp", "three-level"};
}

PartitionPlan PartitionPlan::preset(std::string_view name, const Topology& topo, const PresetArgs& args) {
  const bool partitioned = name == "mics" || name == "hsdp";
  if (!partitioned && (!args.partition_tier.empty() || args.partition_size != 0))
    fail_input("plan {}: partition_tier / partition_size apply only to the mics and hsdp presets", name);
  if (name != "zeropp" && (!args.hpz || args.hpz_partition_size != 0))
    fail_input("plan {}: hpz / hpz_partition_size apply only to the zeropp preset", name);

  const int W = world_tier(topo);
  const int R = kReplicated;
  PlanOptions options;
  Tiers tiers{};
  if (name == "ddp") {
    tiers = {R, R, R, R};
  } else if (name == "zero1") {
    tiers = {R, R, R, W};
  } else if (name == "zero2") {
    tiers = {R, R, W, W};
  } else if (name == "zero3") {
    tiers = {W, W, W, W};
  } else if (name == "zeropp") {
    int bwd = W;
    if (args.hpz)
      bwd = args.hpz_partition_size > 0
                ? tier_of_domain_size(topo, args.hpz_partition_size, "zeropp: hpz partition size")
                : node_tier(topo);
    tiers = {W, bwd, W, W};
    options.qwz = true;
    options.qgz = true;
  } else if (partitioned) {
    int t = node_tier(topo);
    if (!args.partition_tier.empty())
      t = parse_placement(topo, args.partition_tier, fmt::format("{} partition tier", name));
    if (args.partition_size != 0) {
      const int by_size =
          tier_of_domain_size(topo, args.partition_size, fmt::format("{} partition size", name));
      if (!args.partition_tier.empty() && by_size != t)
        fail_input("plan {}: partition tier '{}' has {} ranks but partition size is {}", name,
                   args.partition_tier, topo.group_size(placement_domain(t)), args.partition_size);
      t = by_size;
    }
    tiers = {t, t, t, t};
  } else if (name == "three-level") {
    tiers = {0, 0, std::max(0, node_tier(topo)), W};
  } else {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    fail_input("plan: unknown preset '{}' (known: {})", text_excerpt(name), known);
  }
  PartitionPlan plan(std::string(name), tiers, options);
  plan.validate(topo);
  return plan;
}

void PartitionPlan::validate(const Topology& topo) const {
  const int T = topo.num_tiers();
  for (ModelState s : kModelStates)
    if (tier(s) < kReplicated || tier(s) >= T)
      fail_input("plan {}: {} is placed on tier {} but topology {} has tiers 0..{} ({})", name_,
                 model_state_name(s), tier(s), topo.name(), T - 1, tier_list(topo));
  auto where = [&](ModelState s) { return placement_name(topo, tier(s)); };
  if (tier(ModelState::w_bwd) > tier(ModelState::w_fwd))
    fail_input(
        "plan {}: W_bwd on '{}' is sharded more finely than W_fwd on '{}'; the backward (secondary) "
        "partition "
        "must be on W_fwd's tier or an inner one",
        name_, where(ModelState::w_bwd), where(ModelState::w_fwd));
  if (tier(ModelState::grad) > tier(ModelState::optim))
    fail_input(
        "plan {}: G on '{}' is sharded more finely than O on '{}'; the optimizer shard needs its full "
        "gradient, so "
        "G must be on O's tier or an inner one",
        name_, where(ModelState::grad), where(ModelState::optim));
  if (options_.qwz && replicated(ModelState::w_fwd))
    fail_input(
        "plan {}: qwZ quantizes the W_fwd all-gather but W_fwd is replicated (no gather); shard W_fwd or "
        "turn qwZ off",
        name_);
  if (options_.qgz && replicated(ModelState::grad))
    fail_input(
        "plan {}: qgZ quantizes the G reduction but G is replicated (no per-range reduction); shard G or "
        "turn qgZ off",
        name_);
  const long long block = options_.quant_block;
  if (block < static_cast<long long>(kQuantBlockAlign) ||
      block > static_cast<long long>(kMaxQuantBlockSize) ||
      block % static_cast<long long>(kQuantBlockAlign) != 0)
    fail_input("plan {}: quant_block {} must be a multiple of {} in {}..{} (the quantizer's block sizes)",
               name_, block, kQuantBlockAlign, kQuantBlockAlign, kMaxQuantBlockSize);
  if (options_.prefetch_depth < 0 || options_.prefetch_depth > 64)
    fail_input("plan {}: prefetch_depth {} must be in 0..64", name_, options_.prefetch_depth);
  if (options_.grad_accum_steps < 1)
    fail_input("plan {}: gradient_accumulation_steps {} must be >= 1", name_, options_.grad_accum_steps);
  if (options_.micro_batch_size < 1)
    fail_input("plan {}: micro_batch_size {} must be >= 1", name_, options_.micro_batch_size);
  if (options_.collectives != CollectiveAlgo::hierarchical && options_.collectives != CollectiveAlgo::flat)
    fail_input("plan {}: collectives value {} is not hierarchical or flat", name_,
               static_cast<int>(options_.collectives));
}

void PartitionPlan::validate_world(const Topology& topo, int world_size) const {
  if (!topo.resolved())
    fail_input("plan {}: topology {} has an 'auto' outer fan-out; resolve it to the world size first", name_,
               topo.name());
  if (topo.world_size() != world_size)
    fail_input("plan {}: topology {} describes {} ranks but the world has {}", name_, topo.name(),
               topo.world_size(), world_size);
  validate(topo);
}

std::string PartitionPlan::describe(const Topology& topo) const {
  std::string out = fmt::format("plan {} on topology {}", name_, topo.name());
  if (topo.resolved()) out += fmt::format(" ({} ranks)", topo.world_size());
  out += "\n";
  for (ModelState s : kModelStates) {
    const TierSet d = domain(s);
    std::string shard = replicated(s) ? "replicated: every rank holds all of it"
                                      : fmt::format("sharded over {}", topo.tier_set_name(d));
    if (!replicated(s) && topo.resolved()) shard += fmt::format(" (1/{} per rank)", topo.group_size(d));
    std::string note;
    if (s == ModelState::w_bwd && has_secondary_weights())
      note = "  [secondary partition kept from forward: hpZ]";
    if (s == ModelState::w_bwd && !has_secondary_weights()) note = "  [gathered from the W_fwd shard]";
    if (s == ModelState::w_fwd && options_.qwz) note = "  [qwZ: INT8 gathers]";
    if (s == ModelState::grad && options_.qgz) note = "  [qgZ: INT4 all-to-all reduction]";
    out +=
        fmt::format("  {:<6} {:<12} {}{}\n", model_state_name(s), placement_name(topo, tier(s)), shard, note);
  }
  out += fmt::format(
      "  options: dtype {}, qwZ {}, qgZ {}, quant block {}, prefetch depth {}, accumulation {}, micro-batch "
      "{}, collectives {}\n",
      dtype_mode_name(options_.dtype_mode), options_.qwz ? "on" : "off", options_.qgz ? "on" : "off",
      options_.quant_block, options_.prefetch_depth, options_.grad_accum_steps, options_.micro_batch_size,
      collective_algo_name(options_.collectives));
  return out;
}

nlohmann::json PartitionPlan::to_json(const Topology& topo) const {
  nlohmann::json j;
  j["name"] = name_;
  for (ModelState s : kModelStates) j[std::string(model_state_name(s))] = placement_name(topo, tier(s));
  j["qwz"] = options_.qwz;
  j["qgz"] = options_.qgz;
  j["quant_block"] = options_.quant_block;
  j["prefetch_depth"] = options_.prefetch_depth;
  j["gradient_accumulation_steps"] = options_.grad_accum_steps;
  j["micro_batch_size"] = options_.micro_batch_size;
  j["dtype"] = std::string(dtype_mode_name(options_.dtype_mode));
  j["collectives"] = std::string(collective_algo_name(options_.collectives));
  return j;
}

PlanSpec plan_spec_from_json(const nlohmann::json& doc, std::string_view origin) {
  JsonFields f(doc, fmt::format("plan {}", origin));
  f.allow_only({"name", "preset", "partition_tier", "partition_size", "hpz", "hpz_partition_size", "W",
                "W_fwd", "W_bwd", "G", "O", "qwz", "qgz", "quant_block", "prefetch_depth",
                "gradient_accumulation_steps", "micro_batch_size", "dtype", "collectives"});
  PlanSpec spec;
  spec.name = f.identifier_or("name", "");
  spec.preset = f.str_or("preset", "");
  spec.preset_args.partition_tier = f.str_or("partition_tier", "");
  constexpr long long kMaxCount = 1LL << 30;  // sizes and counts; the plan checks finer ranges
  spec.preset_args.partition_size = static_cast<int>(f.integer_or("partition_size", 0, 0, kMaxCount));
  spec.hpz_given = f.has("hpz");
  spec.preset_args.hpz = f.boolean_or("hpz", true);
  spec.preset_args.hpz_partition_size = static_cast<int>(f.integer_or("hpz_partition_size", 0, 0, kMaxCount));
  auto opt_str = [&](std::string_view key, std::optional<std::string>& out) {
    if (f.has(key)) out = f.str(key);
  };
  opt_str("W", spec.w);
  opt_str("W_fwd", spec.w_fwd);
  opt_str("W_bwd", spec.w_bwd);
  opt_str("G", spec.grad);
  opt_str("O", spec.optim);
  if (f.has("qwz")) spec.qwz = f.boolean("qwz");
  if (f.has("qgz")) spec.qgz = f.boolean("qgz");
  auto opt_int = [&](std::string_view key, std::optional<int>& out, long long min, long long max) {
    if (f.has(key)) out = static_cast<int>(f.integer(key, min, max));
  };
  opt_int("quant_block", spec.quant_block, 1, kMaxCount);
  opt_int("prefetch_depth", spec.prefetch_depth, 0, 64);
  opt_int("gradient_accumulation_steps", spec.grad_accum_steps, 1, kMaxCount);
  opt_int("micro_batch_size", spec.micro_batch_size, 1, kMaxCount);
  if (f.has("dtype")) spec.dtype_mode = parse_dtype_mode(f.str("dtype"), f.where() + ": key 'dtype'");
  if (f.has("collectives"))
    spec.collectives = parse_collective_algo(f.str("collectives"), f.where() + ": key 'collectives'");
  return spec;
}

PartitionPlan make_plan(const PlanSpec& spec, const Topology& topo) {
  if (spec.hpz_given && spec.preset != "zeropp")
    fail_input("plan {}: hpz applies only to the zeropp preset",
               spec.preset.empty() ? "custom" : text_excerpt(spec.preset));
  if (spec.w && (spec.w_fwd || spec.w_bwd))
    fail_input("plan: give either W (both weight states) or W_fwd / W_bwd, not both");
  PartitionPlan base =
      spec.preset.empty() ? PartitionPlan() : PartitionPlan::preset(spec.preset, topo, spec.preset_args);
  PartitionPlan::Tiers tiers = base.tiers();
  bool modified = false;
  auto set = [&](ModelState s, const std::optional<std::string>& value) {
    if (!value) return;
    tiers[static_cast<int>(s)] = parse_placement(topo, *value, model_state_name(s));
    modified = true;
  };
  const std::optional<std::string>& fwd = spec.w ? spec.w : spec.w_fwd;
  set(ModelState::w_fwd, fwd);
  set(ModelState::w_bwd, spec.w ? spec.w : spec.w_bwd);
  if (fwd && !spec.w_bwd && !spec.w) tiers[static_cast<int>(ModelState::w_bwd)] = tiers[0];
  set(ModelState::grad, spec.grad);
  set(ModelState::optim, spec.optim);

  PlanOptions o = base.options();
  o.qwz = spec.qwz.value_or(o.qwz);
  o.qgz = spec.qgz.value_or(o.qgz);
  o.quant_block = spec.quant_block.value_or(o.quant_block);
  o.prefetch_depth = spec.prefetch_depth.value_or(o.prefetch_depth);
  o.grad_accum_steps = spec.grad_accum_steps.value_or(o.grad_accum_steps);
  o.micro_batch_size = spec.micro_batch_size.value_or(o.micro_batch_size);
  o.dtype_mode = spec.dtype_mode.value_or(o.dtype_mode);
  o.collectives = spec.collectives.value_or(o.collectives);
  modified = modified || o.qwz != base.options().qwz || o.qgz != base.options().qgz;

  std::string name = spec.name;
  if (name.empty()) name = spec.preset.empty() ? "custom" : (modified ? spec.preset + "*" : spec.preset);
  PartitionPlan plan(name, tiers, o);
  plan.validate(topo);
  return plan;
}

}  // namespace tz
