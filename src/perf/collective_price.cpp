// Pricing one message of one collective step (collective_price.hpp).
#include "perf/collective_price.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "perf/collective_time.hpp"
#include "perf/ring_time.hpp"

namespace tz::perf {

TierSet active_tier_set(const Topology& topo, TierSet tiers) {
  TierSet out = 0;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if ((tiers & tier_bit(t)) && topo.tier(t).fanout > 1) out |= tier_bit(t);
  return out;
}

namespace {

const CollectiveCurve* curve_for(const Topology& topo, TierSet active, CollectiveKind kind, Runtime runtime) {
  for (const auto& lib : curve_libraries(runtime))
    if (const CollectiveCurve* c = topo.find_curve(active, collective_name(kind), lib)) return c;
  return nullptr;
}

// t and its bandwidth part from one curve: factor x payload over busbw at this size / at a very large one.
void add_from_curve(const CollectiveCurve& c, double factor, int p, double payload, MessagePrice* out) {
  const double t = factor * payload / (curve_busbw_GBps(c, p, payload) * 1e9);
  const double bw = std::min(t, factor * payload / (curve_busbw_GBps(c, p, 1e30) * 1e9));
  out->seconds += t;
  out->bandwidth_s += bw;
  out->latency_s += t - bw;
}

// Splits a closed-form time into latency (steps x alpha), reductions and the bandwidth rest.
MessagePrice split(double seconds, int steps, double alpha_s, double reduce_s, int bound_tier) {
  MessagePrice m;
  m.seconds = seconds;
  m.latency_s = steps * alpha_s;
  m.reduce_s = reduce_s;
  m.bandwidth_s = std::max(0.0, seconds - m.latency_s - reduce_s);
  m.bound_tier = bound_tier;
  return m;
}

// A shared-memory step (comm/*_shared.cpp): every block is copied into the group's staging buffer and
// out again, through the memory the p ranks of the host share. Memory traffic per rank, read plus
// written, in payloads: all-gather 2 (its block in, the p - 1 others out), reduce-scatter 3 (its whole
// input in; its block of every rank read and summed), all-to-all 4 (its send buffer in, its receive
// buffer out); p ranks at once over the device's memory bandwidth, one latency of the tier per call.
MessagePrice price_shared_memory(const TierStep& step, double payload_bytes, const Topology& topo,
                                 int outer) {
  const double traffic = step.kind == CollectiveKind::all_gather       ? 2.0
                         : step.kind == CollectiveKind::reduce_scatter ? 3.0
                                                                       : 4.0;
  const Tier& tier = topo.tier(outer);
  const double bw = topo.device().memory_bandwidth_GBps * 1e9;
  MessagePrice m{.bound_tier = outer};
  m.latency_s = tier.latency_us * 1e-6;
  m.bandwidth_s = step.group_size * traffic * payload_bytes / bw;
  m.reduce_s = step.kind == CollectiveKind::reduce_scatter && tier.reduce_GBps > 0
                   ? (step.group_size - 1) * (payload_bytes / step.group_size) / (tier.reduce_GBps * 1e9)
                   : 0;
  m.seconds = m.latency_s + m.bandwidth_s + m.reduce_s;
  return m;
}

// The message's time on the links (the top of collective_price.hpp).
MessagePrice price_on_links(const TierStep& step, double payload_bytes, const Topology& topo,
                            Runtime runtime) {
  const int p = step.group_size;
  if (p <= 1 || payload_bytes <= 0) return {};
  const TierSet active = active_tier_set(topo, step.tiers);
  int outer = -1, active_count = 0;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if (active & tier_bit(t)) outer = t, ++active_count;
  TZ_CHECK(outer >= 0, "step {} over {} ranks without an active tier", step.label, p);
  // A step through shared memory moves no bytes over links: priced as copies where the topology
  // gives the memory's bandwidth (without it, as the link's ring: an upper bound).
  if (step.algorithm == StepAlgorithm::shared_memory && topo.device().memory_bandwidth_GBps > 0)
    return price_shared_memory(step, payload_bytes, topo, outer);

  const double factor = algorithmic_bytes(step.kind, 1.0, p);
  if (const CollectiveCurve* c = curve_for(topo, active, step.kind, runtime)) {
    MessagePrice m{.bound_tier = outer, .measured = true};
    add_from_curve(*c, factor, p, payload_bytes, &m);
    return m;
  }
  if (step.kind == CollectiveKind::all_reduce) {
    const CollectiveCurve* rs = curve_for(topo, active, CollectiveKind::reduce_scatter, runtime);
    const CollectiveCurve* ag = curve_for(topo, active, CollectiveKind::all_gather, runtime);
    if (rs && ag) {
      MessagePrice m{.bound_tier = outer, .measured = true};
      add_from_curve(*rs, factor / 2, p, payload_bytes, &m);
      add_from_curve(*ag, factor / 2, p, payload_bytes, &m);
      return m;
    }
  }

  const int steps = algorithm_steps(step.kind, p);
  if (active_count == 1 || runtime == Runtime::tierzero) {
    // One tier, or tierzero's shard-ordered flat ring: every hop on the outermost tier's link.
    const Tier& tier = topo.tier(outer);
    const LinkParams link = link_of(tier);
    const double t = collective_time_s(step.kind, payload_bytes, p, link);
    const bool reduces =
        step.kind == CollectiveKind::reduce_scatter || step.kind == CollectiveKind::all_reduce;
    const double reduce_s =
        reduces && tier.reduce_GBps > 0 ? (p - 1) * (payload_bytes / p) / (tier.reduce_GBps * 1e9) : 0;
    const int latency_steps = step.kind == CollectiveKind::all_to_all ? 1 : steps;
    return split(t, latency_steps, tier.latency_us * 1e-6, reduce_s, outer);
  }
  // NCCL's channels over several tiers.
  const NcclRing ring = nccl_ring(topo, step.tiers);
  const double block = payload_bytes / p;
  const double rho = topo.tier(outer).reduce_GBps;
  const double reduce_s =
      (step.kind == CollectiveKind::reduce_scatter || step.kind == CollectiveKind::all_reduce) && rho > 0
          ? (p - 1) * block / (rho * 1e9)
          : 0;
  double t = 0;
  int latency_steps = steps;
  switch (step.kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_reduce:
      t = steps * (ring.latency_s + block / ring.bandwidth_bytes_per_s) + reduce_s;
      break;
    case CollectiveKind::all_to_all:
      t = ring.latency_s + (p - 1) * block / ring.bandwidth_bytes_per_s;
      latency_steps = 1;
      break;
    default:
      TZ_CHECK(false, "no price for {}", collective_name(step.kind));
  }
  return split(t, latency_steps, ring.latency_s, reduce_s, ring.bottleneck_tier);
}

// One rank's host CPU for the message (the top of collective_price.hpp).
double message_cpu_s(const TierStep& step, double payload_bytes, const Topology& topo) {
  const int p = step.group_size;
  const TierSet active = active_tier_set(topo, step.tiers);
  int outer = 0;
  for (int t = 0; t < topo.num_tiers(); ++t)
    if (active & tier_bit(t)) outer = t;
  const Tier& tier = topo.tier(outer);
  const int calls = step.kind == CollectiveKind::all_reduce ? 2 : 1;
  const double sent = calls * double(p - 1) / p * payload_bytes;
  return calls * tier.cpu_call_us * 1e-6 + (tier.cpu_GBps > 0 ? sent / (tier.cpu_GBps * 1e9) : 0.0);
}

}  // namespace

MessagePrice price_message(const TierStep& step, double payload_bytes, const Topology& topo,
                           Runtime runtime) {
  if (step.group_size <= 1 || payload_bytes <= 0) return {};
  MessagePrice m = price_on_links(step, payload_bytes, topo, runtime);
  m.cpu_s = message_cpu_s(step, payload_bytes, topo);
  return m;
}

}  // namespace tz::perf
