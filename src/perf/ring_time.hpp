// A flat ring over several tiers, priced as it runs (docs/cost_model.md, "Flat rings").
//
// Terms: a ring over the group of a tier set S has p ranks at ring positions 0..p-1; hop i carries
// the blocks that position i sends to position i+1 (mod p). It crosses the OUTERMOST tier in which
// the two ranks' coordinates differ, and leaves through the sender's port for that tier: latency
// alpha_t, per-rank bandwidth beta_t (Tier::bandwidth_GBps: one rank's share of its unit's links
// when all of the unit's ranks use them at once, as in comm/transport/sim_transport.hpp). Block b =
// payload/p.
//
// Ring orders:
//   shard  tierzero's flat collectives (Mesh::flat_group: innermost tier most significant): every hop
//          crosses the outermost tier of S, so each step every rank of a node sends through the
//          node's links: (p-1)(alpha_out + b/beta_out), the per-rank share of the node's links;
//   world  Mesh::group order (innermost tier fastest; bench comm's flat world group): ranks of one
//          unit are contiguous, so only one hop per unit crosses its boundary;
//   nccl   what NCCL/RCCL run over a process group: world-ordered rings on C channels at once, each
//          moving 1/C of the data, rotated so that every rank of a unit carries one channel's exit
//          (C >= ranks per unit). Per step a unit of tier t_j (the domain below t_j, m_j ranks of the
//          group) sends one block b through its m_j ports, so its links carry b at m_j beta_{t_j}; the
//          busiest link class bounds the ring:
//              beta_ring = min_j m_j beta_{t_j}    (Frontier: gcd 1 x 200, node 2 x 50, system 8 x 12.5
//                                                   = the node's injection 100 GB/s)
//              t = steps x (alpha_max + b / beta_ring)   with alpha_max the outermost tier's latency.
//
// Single rings (shard, world) are priced exactly as the ring algorithms of comm/ run on the
// simulated transport, step by step (a max-plus recursion over the hops, per rank):
//   all-gather      the send of step s+1 is posted when the block of step s arrives; a port sends its
//                   messages one after another: start = max(posted, port free); the block arrives
//                   alpha + b/beta after its start. A rank ends when its last block arrived and its
//                   last send left.
//   reduce-scatter  the same, but each received block is reduced (b / reduce rate) before it is sent
//                   on, and a send waits for the one posted two steps earlier to have left.
// With identical hops this is the closed form of perf/collective_time.hpp; with mixed hops it is
// bounded by the busiest port ((p-1) b/beta) and by the mean hop time along the ring.
#pragma once

#include <vector>

#include "comm/traffic.hpp"
#include "topology/topology.hpp"

namespace tz::perf {

enum class RingOrder { shard, world, nccl };

struct RingHop {
  int tier = 0;  // the tier the hop crosses
  double latency_s = 0;
  double bandwidth_bytes_per_s = 1;  // the sender's port for that tier
};

// The hops of a ring over the group of `tiers` (any rank's group: all are alike) in `order` (shard
// or world).
std::vector<RingHop> ring_hops(const Topology& topo, TierSet tiers, RingOrder order);

// Seconds for one all-gather or reduce-scatter of `payload_bytes` on a single ring with these hops
// (reduce_GBps: local reduction rate, 0 = free), by the recursion above.
double single_ring_time_s(CollectiveKind kind, double payload_bytes, const std::vector<RingHop>& hops,
                          double reduce_GBps);

// The NCCL channel bound of the ring over `tiers`: beta_ring (bytes/s) and alpha_max (s).
struct NcclRing {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  int bottleneck_tier = 0;  // the tier whose links bound beta_ring
};
NcclRing nccl_ring(const Topology& topo, TierSet tiers);

}  // namespace tz::perf
