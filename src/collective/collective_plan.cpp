// plan_collective (collective_plan.hpp): the route, the quantization and the steps of a collective.
// Payloads follow collective_kind.hpp: all-gather = the gathered tensor of the step, reduce-scatter =
// the unreduced one, all-reduce = the buffer, all-to-all = this rank's whole send buffer.
#include "collective/collective_plan.hpp"

#include "core/error.hpp"
#include "core/json_excerpt.hpp"

namespace tz {

std::string_view collective_algo_name(CollectiveAlgo a) {
  return a == CollectiveAlgo::flat ? "flat" : "hierarchical";
}

CollectiveAlgo parse_collective_algo(std::string_view value, std::string_view what) {
  if (value == "hierarchical") return CollectiveAlgo::hierarchical;
  if (value == "flat") return CollectiveAlgo::flat;
  fail_input("{}: collectives '{}' is not one of hierarchical, flat", what, text_excerpt(value));
}

std::string_view collective_route_name(CollectiveRoute r) {
  switch (r) {
    case CollectiveRoute::local:
      return "local";
    case CollectiveRoute::hierarchical:
      return "hierarchical";
    case CollectiveRoute::flat:
      return "flat";
    case CollectiveRoute::per_tier:
      return "per-tier";
    case CollectiveRoute::qgz_all_to_all:
      return "qgz all-to-all";
  }
  return "?";
}

std::string_view step_algorithm_name(StepAlgorithm a) {
  switch (a) {
    case StepAlgorithm::automatic:
      return "auto";
    case StepAlgorithm::ring:
      return "ring";
    case StepAlgorithm::pairwise:
      return "pairwise";
    case StepAlgorithm::shared_memory:
      return "shared";
  }
  return "?";
}

std::string step_algorithm_key(std::string_view label, CollectiveKind kind, StepAlgorithm a) {
  std::string key(label);
  key += ' ';
  key += collective_name(kind);
  key += ' ';
  key += step_algorithm_name(a);
  return key;
}

TierSet SharedMemoryTiers::of(CollectiveKind step_kind) const {
  switch (step_kind) {
    case CollectiveKind::all_gather:
      return all_gather;
    case CollectiveKind::reduce_scatter:
      return reduce_scatter;
    case CollectiveKind::all_to_all:
      return all_to_all;
    case CollectiveKind::all_reduce:  // the shared reduce-scatter, then the shared all-gather
      return all_gather & reduce_scatter;
    default:
      return 0;  // the rest runs over the transport
  }
}

double CollectivePlan::bytes() const {
  double b = 0;
  for (const auto& s : steps) b += s.bytes;
  return b;
}

std::vector<int> active_tiers(const Topology& topo, TierSet set) {
  std::vector<int> out;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if ((set & tier_bit(t)) && topo.tier(t).fanout > 1) out.push_back(t);
  return out;
}

bool runs_flat(const Topology& topo, TierSet tiers, CollectiveAlgo algo) {
  return algo == CollectiveAlgo::flat && active_tiers(topo, tiers).size() > 1;
}

bool qgz_quantized_path(const Topology& topo, TierSet tiers, std::size_t count, const QuantOptions& q) {
  std::size_t m = count * static_cast<std::size_t>(topo.group_size(tiers));
  for (int t : active_tiers(topo, tiers)) {
    const std::size_t slice = m / static_cast<std::size_t>(topo.tier(t).fanout);
    if (quantized_bytes(slice, q) >= slice * sizeof(float)) return false;
    m = slice;
  }
  return true;
}

namespace {

TierStep tier_step(const Topology& topo, CollectiveKind kind, int tier, std::size_t payload_bytes) {
  TierStep s;
  s.kind = kind;
  s.tier = tier;
  s.tiers = tier_bit(tier);
  s.label = topo.tier(tier).name;
  s.group_size = topo.tier(tier).fanout;
  s.payload_bytes = payload_bytes;
  s.bytes = algorithmic_bytes(kind, static_cast<double>(payload_bytes), s.group_size);
  return s;
}

// One collective on the group of all ranks of `tiers`, priced on its outermost active tier.
TierStep group_step(const Topology& topo, CollectiveKind kind, TierSet tiers, std::size_t payload_bytes) {
  const std::vector<int> ts = active_tiers(topo, tiers);
  TZ_CHECK(!ts.empty(), "group step over {} with no active tier", topo.tier_set_name(tiers));
  TierStep s;
  s.kind = kind;
  s.tier = ts.back();
  s.tiers = tiers;
  s.label = topo.tier_set_name(tiers);
  s.group_size = topo.group_size(tiers);
  s.payload_bytes = payload_bytes;
  s.bytes = algorithmic_bytes(kind, static_cast<double>(payload_bytes), s.group_size);
  return s;
}

// Outermost tier first: the step on tier i gathers f_i pieces of the shard times the fan-outs of the
// tiers already done.
void add_all_gather_steps(std::vector<TierStep>& out, const Topology& topo, TierSet tiers,
                          std::size_t shard_bytes) {
  const std::vector<int> ts = active_tiers(topo, tiers);
  std::size_t piece = shard_bytes;
  for (auto it = ts.rbegin(); it != ts.rend(); ++it) {
    piece *= static_cast<std::size_t>(topo.tier(*it).fanout);
    out.push_back(tier_step(topo, CollectiveKind::all_gather, *it, piece));
  }
}

// Innermost tier first: the data shrinks by f_i per step.
void add_reduce_scatter_steps(std::vector<TierStep>& out, const Topology& topo, TierSet tiers,
                              std::size_t full_bytes) {
  std::size_t data = full_bytes;
  for (int t : active_tiers(topo, tiers)) {
    out.push_back(tier_step(topo, CollectiveKind::reduce_scatter, t, data));
    data /= static_cast<std::size_t>(topo.tier(t).fanout);
  }
}

CollectivePlan plan_all_gather(const Topology& topo, const CollectiveRequest& r, bool flat) {
  CollectivePlan p;
  const std::size_t group = static_cast<std::size_t>(topo.group_size(r.tiers));
  if (r.quant_bits != 0) {
    TZ_CHECK(r.quant_bits == 8 || r.quant_bits == 4, "quant_bits {}", r.quant_bits);
    TZ_CHECK(r.dtype == DType::f32 || r.dtype == DType::bf16, "qwZ of {}", dtype_name(r.dtype));
    p.quant = CollectiveQuant::qwz;
    p.wire_dtype = DType::u8;
    p.wire_count = quantized_bytes(r.count, r.quant_options());
  } else {
    p.wire_dtype = r.dtype;
    p.wire_count = r.count;
  }
  const std::size_t shard_bytes = p.wire_count * dtype_bytes(p.wire_dtype);
  if (group == 1) {
    p.route = CollectiveRoute::local;
  } else if (flat) {
    p.route = CollectiveRoute::flat;
    p.steps.push_back(group_step(topo, CollectiveKind::all_gather, r.tiers, shard_bytes * group));
  } else {
    p.route = CollectiveRoute::hierarchical;
    add_all_gather_steps(p.steps, topo, r.tiers, shard_bytes);
  }
  return p;
}

CollectivePlan plan_reduce_scatter(const Topology& topo, const CollectiveRequest& r, bool flat) {
  CollectivePlan p;
  const std::size_t group = static_cast<std::size_t>(topo.group_size(r.tiers));
  p.wire_count = r.count;
  p.wire_dtype = r.dtype;
  if (r.quant_bits != 0) {
    TZ_CHECK(r.quant_bits == 8 || r.quant_bits == 4, "quant_bits {}", r.quant_bits);
    TZ_CHECK(r.dtype == DType::f32, "qgZ of {}", dtype_name(r.dtype));
    const QuantOptions q = r.quant_options();
    if (qgz_quantized_path(topo, r.tiers, r.count, q)) {
      p.quant = CollectiveQuant::qgz;
      p.route = group == 1 ? CollectiveRoute::local : CollectiveRoute::qgz_all_to_all;
      std::size_t n = r.count * group;
      for (int t : active_tiers(topo, r.tiers)) {
        const std::size_t f = static_cast<std::size_t>(topo.tier(t).fanout), slice = n / f;
        p.steps.push_back(tier_step(topo, CollectiveKind::all_to_all, t, f * quantized_bytes(slice, q)));
        n = slice;
      }
      return p;
    }
    // qgZ is ZeRO++'s hierarchical all-to-all by definition, so its fallback stays hierarchical too.
    p.quant = CollectiveQuant::qgz_fallback;
    flat = false;
  }
  const std::size_t full_bytes = r.count * group * dtype_bytes(r.dtype);
  if (group == 1) {
    p.route = CollectiveRoute::local;
  } else if (flat) {
    p.route = CollectiveRoute::flat;
    p.steps.push_back(group_step(topo, CollectiveKind::reduce_scatter, r.tiers, full_bytes));
  } else {
    p.route = CollectiveRoute::hierarchical;
    add_reduce_scatter_steps(p.steps, topo, r.tiers, full_bytes);
  }
  return p;
}

CollectivePlan plan_all_reduce(const Topology& topo, const CollectiveRequest& r, bool flat) {
  TZ_CHECK_EQ(r.quant_bits, 0);
  CollectivePlan p;
  p.wire_dtype = r.dtype;
  p.wire_count = r.count;
  const std::size_t group = static_cast<std::size_t>(topo.group_size(r.tiers));
  const std::size_t esz = dtype_bytes(r.dtype);
  if (group == 1) {
    p.route = CollectiveRoute::local;
  } else if (r.whole_per_tier) {
    p.route = CollectiveRoute::per_tier;
    for (int t : active_tiers(topo, r.tiers))
      p.steps.push_back(tier_step(topo, CollectiveKind::all_reduce, t, r.count * esz));
  } else if (flat) {
    p.route = CollectiveRoute::flat;
    p.steps.push_back(group_step(topo, CollectiveKind::all_reduce, r.tiers, r.count * esz));
  } else {
    // The part that divides the group goes reduce-scatter then all-gather; the tail (fewer than
    // |S| elements) is all-reduced flat on the group, first.
    p.route = CollectiveRoute::hierarchical;
    const std::size_t main = r.count / group * group, rest = r.count - main;
    if (rest > 0) p.steps.push_back(group_step(topo, CollectiveKind::all_reduce, r.tiers, rest * esz));
    if (main > 0) {
      add_reduce_scatter_steps(p.steps, topo, r.tiers, main * esz);
      add_all_gather_steps(p.steps, topo, r.tiers, main / group * esz);
    }
  }
  return p;
}

// The algorithm of one step: shared memory where its group lies in one host's memory and the kind
// has a shared-memory algorithm, else the transport's.
StepAlgorithm step_algorithm(const TierStep& s, const SharedMemoryTiers& shared) {
  if (s.group_size > 1 && (s.tiers & ~shared.of(s.kind)) == 0 && shared.of(s.kind) != 0)
    return StepAlgorithm::shared_memory;
  return s.kind == CollectiveKind::all_to_all ? StepAlgorithm::pairwise : StepAlgorithm::ring;
}

CollectivePlan plan_route(const Topology& topo, const CollectiveRequest& r) {
  const bool flat = runs_flat(topo, r.tiers, r.algo);
  switch (r.kind) {
    case CollectiveKind::all_gather:
      return plan_all_gather(topo, r, flat);
    case CollectiveKind::reduce_scatter:
      return plan_reduce_scatter(topo, r, flat);
    case CollectiveKind::all_reduce:
      return plan_all_reduce(topo, r, flat);
    default:
      TZ_CHECK(false, "no plan for a {} over a tier set", collective_name(r.kind));
  }
  __builtin_unreachable();
}

}  // namespace

CollectivePlan plan_collective(const Topology& topo, const CollectiveRequest& r) {
  TZ_CHECK((r.tiers & ~tiers_up_to(topo.num_tiers() - 1)) == 0, "tier set {:#x} on a {}-tier topology",
           r.tiers, topo.num_tiers());
  CollectivePlan p = plan_route(topo, r);
  for (TierStep& s : p.steps) s.algorithm = step_algorithm(s, r.shared_memory);
  return p;
}

}  // namespace tz
