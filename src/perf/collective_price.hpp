// The time of one message of one collective step, as the system running it would take
// (docs/cost_model.md, "Pricing a collective"). A step (plan/step_schedule.hpp TierStep) runs on the
// group of its tier set; a message is one call of that step's collective with `payload_bytes` (the
// traffic ledger's payload: the gathered tensor, the unreduced tensor, the buffer, the send buffer).
//   measured   when the topology carries a curve for exactly the step's active tiers (fan-out > 1),
//              its collective and a library of the runtime (perf/runtime_model.hpp):
//              t = factor x payload / busbw(p, payload)  (factor (p-1)/p, 2(p-1)/p for all-reduce);
//              an all-reduce without its own curve is a reduce-scatter then an all-gather of the same
//              payload, each from its curve. Split: bandwidth = factor x payload / the curve's busbw for
//              a very large message of that group, latency = the rest.
//   one tier   (one active tier) the ring closed forms of perf/collective_time.hpp on that tier's link;
//   flat       several active tiers: tierzero's shard-ordered ring crosses the outermost tier at every
//              hop, so it is the one-tier closed form on the outermost tier's link; DeepSpeed's NCCL
//              ring on its channels is bounded by the busiest unit's links (perf/ring_time.hpp
//              nccl_ring): steps x (alpha_max + block / beta_ring), reductions at the outermost tier's
//              reduce_GBps when it has one.
//   shared     a step the plan runs through shared memory (TierStep::algorithm): copies in and out of
//              the host's staging buffer at the device's memory bandwidth (see price_shared_memory),
//              one latency of the tier; reductions as above.
// Host CPU (cpu_s): what one rank's threads spend on the message, from the tier's cpu_call_us and
// cpu_GBps (the outermost active tier's, as for the link): an all-reduce is two calls (its
// reduce-scatter and all-gather), each sending ((p-1)/p) x payload. 0 where the tier does not say.
#pragma once

#include "perf/runtime_model.hpp"
#include "plan/step_schedule.hpp"
#include "topology/topology.hpp"

namespace tz::perf {

struct MessagePrice {
  double seconds = 0;
  double latency_s = 0;    // per-step latency (measured: the time beyond the large-message busbw)
  double bandwidth_s = 0;  // bytes over the bound links
  double reduce_s = 0;     // local reductions
  int bound_tier = 0;      // the tier whose links bound the bandwidth part
  bool measured = false;   // from a measured curve
  double cpu_s = 0;        // host CPU of one rank (not part of seconds)
};

MessagePrice price_message(const TierStep& step, double payload_bytes, const Topology& topo, Runtime runtime);

// The tiers of `tiers` with a fan-out above 1 (the set a curve must be measured on).
TierSet active_tier_set(const Topology& topo, TierSet tiers);

}  // namespace tz::perf
