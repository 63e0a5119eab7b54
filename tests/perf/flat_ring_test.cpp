// Flat rings over several tiers (perf/ring_time.hpp) against the ring algorithms of comm/ running on
// the simulated transport: tierzero's shard-ordered rings and world-ordered (unit-contiguous) rings,
// on two- and three-tier topologies, one ring alone and several rings of different groups at once
// (all the groups of a tier set run their rings concurrently, sharing the units' links).
#include "perf/ring_time.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/sim_transport.hpp"
#include "comm/transport/thread_transport.hpp"
#include "perf/collective_time.hpp"

namespace tz::perf {
namespace {

// Two tiers: 4 ranks per node on 50 GB/s links (3 us), 3 nodes sharing 12.5 GB/s per rank (9 us).
Topology two_tier() {
  return Topology::from_json(nlohmann::json::parse(R"({"name": "two", "tiers": [
    {"name": "node", "fanout": 4, "bandwidth_GBps": 50, "latency_us": 3},
    {"name": "system", "fanout": 3, "bandwidth_GBps": 12.5, "latency_us": 9}]})"),
                             "two");
}

// Three tiers, uneven latencies and bandwidths: 2 x 2 x 3 = 12 ranks.
Topology three_tier() {
  return Topology::from_json(nlohmann::json::parse(R"({"name": "three", "tiers": [
    {"name": "gcd", "fanout": 2, "bandwidth_GBps": 200, "latency_us": 2},
    {"name": "node", "fanout": 2, "bandwidth_GBps": 40, "latency_us": 4},
    {"name": "system", "fanout": 3, "bandwidth_GBps": 10, "latency_us": 7}]})"),
                             "three");
}

// Runs `kind` on the group of `tiers` (world order: Mesh::group; shard order: Mesh::flat_group) on
// every rank at once, so every group of that tier set runs its ring concurrently; returns the
// slowest rank's time.
double simulate_rings(const Topology& topo, TierSet tiers, RingOrder order, CollectiveKind kind,
                      std::size_t block_floats, double reduce_GBps) {
  auto world = std::make_shared<SimWorld>(topo, SimOptions{.reduce_GBps = reduce_GBps});
  auto transports = make_sim_transports(world, make_thread_world(topo.world_size()).transports);
  CommOptions opt;
  opt.chunk_bytes = std::size_t{1} << 40;  // one message per step, as the recursion prices
  std::vector<std::unique_ptr<Communicator>> comms;
  for (auto& t : transports) comms.push_back(make_communicator(std::move(t), "world", opt));
  constexpr double kStart = 10.0;
  std::vector<double> elapsed(topo.world_size());
  std::vector<std::thread> threads;
  for (int r = 0; r < topo.world_size(); ++r)
    threads.emplace_back([&, r] {
      Mesh mesh(topo, std::move(comms[r]));
      Communicator& g = order == RingOrder::world ? mesh.group(tiers) : mesh.flat_group(tiers);
      const int p = g.size();
      mesh.world().barrier().wait();
      world->advance_to_s(r, kStart);  // every clock at the same start, past the set-up traffic
      std::vector<float> in(block_floats * p, 1.0f), out(block_floats * p);
      if (kind == CollectiveKind::all_gather)
        g.all_gather(in.data(), out.data(), block_floats, DType::f32).wait();
      else
        g.reduce_scatter(in.data(), out.data(), block_floats, DType::f32).wait();
      elapsed[r] = world->now_s(r) - kStart;
    });
  for (auto& t : threads) t.join();
  return *std::max_element(elapsed.begin(), elapsed.end());
}

struct Case {
  const char* name;
  Topology topo;
  TierSet tiers;
};

TEST(FlatRing, RecursionEqualsSimulatedTransportForSeveralConcurrentRings) {
  const std::vector<Case> cases = {
      {"two-tier world", two_tier(), 0b11},
      {"three-tier world", three_tier(), 0b111},
      {"three-tier node+system (2 rings at once)", three_tier(), 0b110},
      {"three-tier gcd+system (2 rings at once)", three_tier(), 0b101},
      {"three-tier gcd+node (3 rings at once)", three_tier(), 0b011},
  };
  for (const Case& c : cases)
    for (RingOrder order : {RingOrder::world, RingOrder::shard})
      for (CollectiveKind kind : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter})
        for (std::size_t floats : {std::size_t{256}, std::size_t{40000}}) {  // latency- and bandwidth-bound
          const double reduce_GBps = kind == CollectiveKind::reduce_scatter ? 6.0 : 0.0;
          const std::vector<RingHop> hops = ring_hops(c.topo, c.tiers, order);
          const double payload = double(floats) * 4 * hops.size();
          const double closed = single_ring_time_s(kind, payload, hops, reduce_GBps);
          const double sim = simulate_rings(c.topo, c.tiers, order, kind, floats, reduce_GBps);
          EXPECT_NEAR(sim, closed, 1e-9 * closed + 1e-12)
              << c.name << (order == RingOrder::world ? " world" : " shard") << " " << collective_name(kind)
              << " " << floats << " floats";
        }
}

// tierzero's shard order crosses the outermost tier at every hop: the ring is the closed form of one
// tier (perf/collective_time.hpp) at that tier's per-rank share; the world order crosses it once per
// unit and is faster when the outer links are the slow ones.
TEST(FlatRing, ShardOrderIsTheOuterTierClosedFormAndWorldOrderBeatsIt) {
  const Topology topo = three_tier();
  const TierSet all = 0b111;
  const std::vector<RingHop> shard = ring_hops(topo, all, RingOrder::shard);
  ASSERT_EQ(shard.size(), 12u);
  for (const auto& h : shard) EXPECT_EQ(h.tier, 2);
  const std::vector<RingHop> world = ring_hops(topo, all, RingOrder::world);
  int crossing[3] = {0, 0, 0};
  for (const auto& h : world) ++crossing[h.tier];
  EXPECT_EQ(crossing[0], 6);  // 0->1 inside each GCD pair
  EXPECT_EQ(crossing[1], 3);  // pair to pair inside each node
  EXPECT_EQ(crossing[2], 3);  // node to node, the last one wrapping around
  for (CollectiveKind kind : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter}) {
    const double n = 12.0 * 4e6;
    const double rho = kind == CollectiveKind::reduce_scatter ? 6.0 : 0.0;
    EXPECT_NEAR(single_ring_time_s(kind, n, shard, rho),
                collective_time_s(kind, n, 12, link_of(topo.tier(2), rho)), 1e-12)
        << collective_name(kind);
    // The busiest port still sends every block through the slow tier: (p-1) b / beta_system bounds it.
    EXPECT_GE(single_ring_time_s(kind, n, world, rho), 11 * (n / 12) / 10e9);
    EXPECT_LT(single_ring_time_s(kind, n, world, rho), single_ring_time_s(kind, n, shard, rho));
  }
}

TEST(FlatRing, NcclChannelBoundIsTheBusiestUnitsLinks) {
  // Frontier: a GCD's 200 GB/s, a package's 2 x 50 to the other packages, a node's 8 x 12.5 NIC
  // share = its 4 x 25 GB/s injection.
  const Topology frontier = Topology::load("frontier").resolve_outer(48);
  const NcclRing ring = nccl_ring(frontier, 0b111);
  EXPECT_DOUBLE_EQ(ring.bandwidth_bytes_per_s, 100e9);
  EXPECT_DOUBLE_EQ(ring.latency_s, frontier.tier(2).latency_us * 1e-6);
  const NcclRing one_node = nccl_ring(Topology::load("frontier").resolve_outer(1), 0b111);
  EXPECT_DOUBLE_EQ(one_node.bandwidth_bytes_per_s, 100e9);
  EXPECT_EQ(one_node.bottleneck_tier, 1);
  const Topology three = three_tier();
  const NcclRing r3 = nccl_ring(three, 0b111);  // min(200, 2 x 40, 4 x 10) = 40 GB/s, the nodes' links
  EXPECT_DOUBLE_EQ(r3.bandwidth_bytes_per_s, 40e9);
  EXPECT_EQ(r3.bottleneck_tier, 2);
}

}  // namespace
}  // namespace tz::perf
