// perf::algorithm_steps, the latency-bearing steps of each collective the cost model prices, against
// the collective code itself: on the simulated transport with latency alpha and a link so fast that
// bytes cost nothing, every collective takes algorithm_steps x alpha (all-to-all posts its p - 1
// sends at once: one latency). At p = 1..8, odd sizes included.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/sim_transport.hpp"
#include "core/error.hpp"
#include "perf/collective_time.hpp"

namespace tz::perf {
namespace {

constexpr double kLatencyUs = 10;

Topology latency_only(int p) {
  const nlohmann::json doc = {
      {"name", "latency-only"},
      {"tiers", {{{"name", "link"}, {"fanout", p}, {"bandwidth_GBps", 1e12}, {"latency_us", kLatencyUs}}}}};
  return Topology::from_json(doc, "test").resolve(p);
}

// Simulated seconds of `op` on every rank of a p-rank world.
double simulated_s(int p, const std::function<void(Communicator&)>& op) {
  auto world = std::make_shared<SimWorld>(latency_only(p), SimOptions{});
  CommOptions opt;
  opt.chunk_bytes = std::size_t{1} << 30;  // one message per step
  run_thread_mesh(
      world->topology(), [&](Mesh& mesh) { op(mesh.world()); }, opt,
      [&](std::vector<std::unique_ptr<Transport>> inner) {
        return make_sim_transports(world, std::move(inner));
      });
  return world->max_now_s();
}

TEST(AlgorithmSteps, EqualTheLatenciesTheCollectivesPayOnTheSimulatedTransport) {
  const std::size_t n = 8;  // f32 elements per block: bytes cost ~1e-20 s at this bandwidth
  for (int p = 1; p <= 8; ++p) {
    struct Case {
      CollectiveKind kind;
      std::function<void(Communicator&)> op;
    };
    const std::vector<Case> cases = {
        {CollectiveKind::all_gather,
         [&](Communicator& c) {
           std::vector<float> in(n, 1.f), out(n * p);
           c.all_gather(in.data(), out.data(), n, DType::f32, StepAlgorithm::ring).wait();  // as priced
         }},
        {CollectiveKind::reduce_scatter,
         [&](Communicator& c) {
           std::vector<float> in(n * p, 1.f), out(n);
           c.reduce_scatter(in.data(), out.data(), n, DType::f32).wait();
         }},
        {CollectiveKind::all_reduce,
         [&](Communicator& c) {
           std::vector<float> buf(n * p, 1.f);
           c.all_reduce(buf.data(), buf.data(), n * p, DType::f32).wait();
         }},
        {CollectiveKind::all_to_all,
         [&](Communicator& c) {
           std::vector<float> in(n * p, 1.f), out(n * p);
           c.all_to_all(in.data(), out.data(), n, DType::f32).wait();
         }},
    };
    for (const Case& k : cases) {
      const double latencies = simulated_s(p, k.op) / (kLatencyUs * 1e-6);
      EXPECT_NEAR(latencies, algorithm_steps(k.kind, p), 1e-6) << collective_name(k.kind) << " at p = " << p;
    }
  }
}

TEST(AlgorithmSteps, ClosedFormsByKind) {
  for (int p : {0, 1}) {
    EXPECT_EQ(algorithm_steps(CollectiveKind::all_gather, p), 0);
    EXPECT_EQ(algorithm_steps(CollectiveKind::all_reduce, p), 0);
  }
  EXPECT_EQ(algorithm_steps(CollectiveKind::all_gather, 7), 6);
  EXPECT_EQ(algorithm_steps(CollectiveKind::reduce_scatter, 7), 6);
  EXPECT_EQ(algorithm_steps(CollectiveKind::all_reduce, 7), 12);
  EXPECT_EQ(algorithm_steps(CollectiveKind::all_to_all, 7), 1);
  // The steps are the latency part of collective_time_s: with nothing to move, time = steps x alpha.
  const LinkParams link{.bandwidth_GBps = 1, .latency_us = 3};
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
                           CollectiveKind::all_reduce, CollectiveKind::all_to_all})
    for (int p = 1; p <= 9; ++p)
      EXPECT_NEAR(collective_time_s(k, 0, p, link), algorithm_steps(k, p) * 3e-6, 1e-15)
          << collective_name(k) << " p = " << p;
  // Broadcast has no closed form in the cost model (no step schedule uses it): an error, not a 0.
  EXPECT_THROW(algorithm_steps(CollectiveKind::broadcast, 4), InternalError);
}

}  // namespace
}  // namespace tz::perf
