// Simulated transport: a Transport whose clock is simulated, so the very same collective algorithms
// (comm/*_ring.cpp, ...) that run over threads or MPI report the time they would take on a topology.
// Bytes really move (through an inner transport, normally ranks as threads), so results stay exact;
// only the clock is modelled.
//
// Link model. Every rank has a simulated clock (seconds). A message of B bytes from world rank a to
// world rank b travels over the OUTERMOST tier t in which the coordinates of a and b differ (the
// slowest link it must cross), with that tier's latency alpha_t and per-rank bandwidth beta_t:
//   - it leaves a's egress port for tier t at start = max(a's clock at posting, port free time);
//     the port is then busy for B / beta_t (messages posted together are serialized per tier);
//   - it arrives at start + alpha_t + B / beta_t;
//   - a send completes (for the sender's clock) when the port is free again: start + B / beta_t;
//   - a receive completes at the arrival time; waiting advances a rank's clock to the latest
//     completion among the requests it waited for (clock = max(clock, completion)).
// Ingress is not modelled separately (every algorithm here receives from one peer per step). A
// local reduction of R bytes costs R / reduce_GBps when reduce_GBps > 0 (0: free). Messages with a
// reserved tag (>= Transport::kFirstReservedTag: communicator bookkeeping) cost no time.
// With these rules a ring step (send n/p bytes right, receive n/p from the left, wait both) takes
// alpha + (n/p)/beta, which is what perf/collective_time.hpp charges.
//
// The arrival time travels with the data as an 8-byte header message posted just before it on the
// same (peer, tag); non-overtaking matching keeps headers and payloads paired.
#pragma once

#include <memory>
#include <vector>

#include "comm/transport/transport.hpp"
#include "topology/topology.hpp"

namespace tz {

struct SimOptions {
  double reduce_GBps = 0;  // rate of local reductions into the accumulator; 0 = free
};

// The shared state of one simulated world: the topology and every rank's clock.
class SimWorld {
 public:
  SimWorld(Topology topology, SimOptions options);
  ~SimWorld();

  const Topology& topology() const { return topology_; }
  const SimOptions& options() const { return options_; }
  int world_size() const { return topology_.world_size(); }

  double now_s(int world_rank) const;
  // Moves a rank's clock forward by `seconds` (e.g. compute between collectives).
  void advance_s(int world_rank, double seconds);
  // Sets a rank's clock to max(clock, t).
  void advance_to_s(int world_rank, double t);
  // The latest clock over all ranks.
  double max_now_s() const;

  // The tier a message between two world ranks crosses (outermost differing coordinate; 0 if equal).
  int link_tier(int world_a, int world_b) const;
  // Reserves rank a's egress port on `tier` for `bytes` posted at time `post_s`; returns the start.
  double reserve_egress(int world_rank, int tier, double post_s, double bytes);

 private:
  struct RankState;
  Topology topology_;
  SimOptions options_;
  std::vector<std::unique_ptr<RankState>> ranks_;
};

// World transports (index = world rank) over the simulated clock of `world`, each wrapping the
// matching transport of `inner` (one per rank, e.g. make_thread_transports(n)).
std::vector<std::unique_ptr<Transport>> make_sim_transports(std::shared_ptr<SimWorld> world,
                                                            std::vector<std::unique_ptr<Transport>> inner);

}  // namespace tz
