// Flat rings over several tiers: hop structure by ring order, the exact per-rank recursion of a single
// ring, and the NCCL channel bound (ring_time.hpp).
#include "perf/ring_time.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz::perf {

std::vector<RingHop> ring_hops(const Topology& topo, TierSet tiers, RingOrder order) {
  TZ_CHECK(order != RingOrder::nccl, "nccl rings are priced by nccl_ring, not hop by hop");
  std::vector<int> active;  // innermost first
  for (int t = 0; t < topo.num_tiers(); ++t)
    if ((tiers & tier_bit(t)) && topo.tier(t).fanout > 1) active.push_back(t);
  const int p = topo.group_size(tiers);
  // Coordinates (per active tier) of ring position i: the position is a mixed-radix number over the
  // active tiers, innermost digit fastest (world) or innermost digit most significant (shard).
  auto coords = [&](int i) {
    std::vector<int> c(active.size());
    if (order == RingOrder::world) {
      for (std::size_t k = 0; k < active.size(); ++k) {
        c[k] = i % topo.tier(active[k]).fanout;
        i /= topo.tier(active[k]).fanout;
      }
    } else {
      for (std::size_t k = active.size(); k-- > 0;) {
        c[k] = i % topo.tier(active[k]).fanout;
        i /= topo.tier(active[k]).fanout;
      }
    }
    return c;
  };
  std::vector<RingHop> hops;
  for (int i = 0; i < p; ++i) {
    const std::vector<int> a = coords(i), b = coords((i + 1) % p);
    int crossed = active.empty() ? 0 : active.front();
    for (std::size_t k = 0; k < active.size(); ++k)
      if (a[k] != b[k]) crossed = active[k];
    const Tier& t = topo.tier(crossed);
    hops.push_back(RingHop{
        .tier = crossed, .latency_s = t.latency_us * 1e-6, .bandwidth_bytes_per_s = t.bandwidth_GBps * 1e9});
  }
  return hops;
}

double single_ring_time_s(CollectiveKind kind, double payload_bytes, const std::vector<RingHop>& hops,
                          double reduce_GBps) {
  TZ_CHECK(kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter,
           "single ring recursion for {}", collective_name(kind));
  const int p = static_cast<int>(hops.size());
  if (p <= 1) return 0;
  const double b = payload_bytes / p;
  const double reduce_s =
      kind == CollectiveKind::reduce_scatter && reduce_GBps > 0 ? b / (reduce_GBps * 1e9) : 0;
  const bool rs = kind == CollectiveKind::reduce_scatter;
  // Per ring position: its clock, when its port is free, and the arrival time of the block it
  // receives at the current step (sent by position - 1).
  std::vector<double> clock(p, 0.0), port_free(p, 0.0), arrival(p, 0.0), done_prev(p, 0.0),
      done_prev2(p, 0.0);
  auto post = [&](int r, double at, std::vector<double>& next_arrival) {
    const RingHop& h = hops[r];
    const double start = std::max(at, port_free[r]);
    port_free[r] = start + b / h.bandwidth_bytes_per_s;
    next_arrival[(r + 1) % p] = start + h.latency_s + b / h.bandwidth_bytes_per_s;
    done_prev2[r] = done_prev[r];
    done_prev[r] = port_free[r];
  };
  std::vector<double> next(p, 0.0);
  for (int r = 0; r < p; ++r) post(r, 0.0, next);  // step 0: own block (all-gather) or own contribution
  for (int s = 0; s + 1 < p; ++s) {
    arrival = next;
    for (int r = 0; r < p; ++r) {
      // reduce-scatter waits for the send posted two steps ago (its partial-sum buffer is reused);
      // at step s that is the send posted at step s-1 (the initial one counts as step -1).
      if (rs && s >= 2) clock[r] = std::max(clock[r], done_prev2[r]);
      clock[r] = std::max(clock[r], arrival[r]) + reduce_s;
      if (s + 2 < p) post(r, clock[r], next);
    }
  }
  double end = 0;
  for (int r = 0; r < p; ++r) end = std::max({end, clock[r], port_free[r]});
  return end;
}

NcclRing nccl_ring(const Topology& topo, TierSet tiers) {
  NcclRing ring;
  int ranks_below = 1;  // m_j: ranks of the group inside one unit of the domain below tier t_j
  for (int t = 0; t < topo.num_tiers(); ++t) {
    if (!(tiers & tier_bit(t)) || topo.tier(t).fanout <= 1) continue;
    const double unit_bytes_per_s = ranks_below * topo.tier(t).bandwidth_GBps * 1e9;
    if (ring.bandwidth_bytes_per_s == 0 || unit_bytes_per_s < ring.bandwidth_bytes_per_s) {
      ring.bandwidth_bytes_per_s = unit_bytes_per_s;
      ring.bottleneck_tier = t;
    }
    ring.latency_s = topo.tier(t).latency_us * 1e-6;  // the outermost active tier's, in the end
    ranks_below *= topo.tier(t).fanout;
  }
  TZ_CHECK(ring.bandwidth_bytes_per_s > 0, "nccl ring over tier set {:#x} with no active tier", tiers);
  return ring;
}

}  // namespace tz::perf
