// Closed-form time of one single-tier collective, for the algorithms comm/ runs (comm/algorithms.hpp)
// under the link model of comm/transport/sim_transport.hpp. Terms: p ranks in the tier group, payload n bytes
// as comm/traffic.hpp defines it, block b = n/p, tier latency alpha (latency_us) and per-rank
// bandwidth beta (bandwidth_GBps), local reduction rate rho (Tier::reduce_GBps in the cost model,
// SimOptions::reduce_GBps on the simulated transport; 0 = free):
//   all-gather, ring        (p-1) steps:  (p-1) * (alpha + b/beta)
//   reduce-scatter, ring    (p-1) steps:  (p-1) * (alpha + b/beta + b/rho)
//   all-reduce, ring        RS then AG:   2(p-1) * (alpha + b/beta) + (p-1) * b/rho
//   all-to-all, pairwise    all p-1 sends posted at once and serialized on the rank's port:
//                                         alpha + (p-1) * b/beta
// A step waits for its incoming block before forwarding it, so latency is paid once per step.
// The model prices unchunked messages; the real algorithms cut blocks into chunks
// (CommOptions::chunk_bytes) and pipeline them, which the simulated transport reproduces.
// A multi-tier collective (comm/mesh.hpp) is the sum of its single-tier steps: they run in sequence.
#pragma once

#include "comm/traffic.hpp"
#include "topology/topology.hpp"

namespace tz::perf {

struct LinkParams {
  double bandwidth_GBps = 1;
  double latency_us = 0;
  double reduce_GBps = 0;  // 0 = reductions are free
};

// The tier's link with its own reduction rate (Tier::reduce_GBps, 0 when the topology does not say).
inline LinkParams link_of(const Tier& tier) {
  return LinkParams{
      .bandwidth_GBps = tier.bandwidth_GBps, .latency_us = tier.latency_us, .reduce_GBps = tier.reduce_GBps};
}
// The tier's link with a given reduction rate (the simulated transport's SimOptions::reduce_GBps).
inline LinkParams link_of(const Tier& tier, double reduce_GBps) {
  return LinkParams{
      .bandwidth_GBps = tier.bandwidth_GBps, .latency_us = tier.latency_us, .reduce_GBps = reduce_GBps};
}

// Number of latency-bearing algorithm steps (0 for p <= 1).
int algorithm_steps(CollectiveKind kind, int p);
// Seconds for one collective of `payload_bytes` over a group of p ranks on one link; 0 for p <= 1.
// InternalError for kinds no step schedule uses (broadcast, barrier).
double collective_time_s(CollectiveKind kind, double payload_bytes, int p, const LinkParams& link);

}  // namespace tz::perf
