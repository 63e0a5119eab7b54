// Closed-form collective times (perf/collective_time.hpp) against the same collective code running
// on the simulated transport, for small worlds on `flat` and `frontier-mini`.
#include "comm/transport/sim_transport.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "perf/collective_time.hpp"

namespace tz::perf {
namespace {

constexpr double kRelTol = 1e-9;

// Runs fn(mesh) on every rank of the simulated world; returns the latest clock.
double run_sim(const std::shared_ptr<SimWorld>& world, const std::function<void(Mesh&)>& fn) {
  CommOptions opt;
  opt.chunk_bytes = std::size_t{1} << 30;  // one message per step: what the closed form prices
  run_thread_mesh(world->topology(), fn, opt, [&](std::vector<std::unique_ptr<Transport>> inner) {
    return make_sim_transports(world, std::move(inner));
  });
  return world->max_now_s();
}

double run_sim(const Topology& topo, SimOptions sim, const std::function<void(Mesh&)>& fn) {
  return run_sim(std::make_shared<SimWorld>(topo, sim), fn);
}

TEST(SimTransport, FlatRingCollectivesMatchClosedForm) {
  for (int p = 1; p <= 8; ++p) {
    const Topology topo = Topology::load("flat").resolve(p);
    const LinkParams link = link_of(topo.tier(0));
    const std::size_t count = 1000;  // f32 elements per block
    const double block_bytes = count * 4.0;
    const double ag = run_sim(topo, {}, [&](Mesh& mesh) {
      Communicator* c = &mesh.world();
      std::vector<float> in(count, 1.f), out(count * p);
      c->all_gather(in.data(), out.data(), count, DType::f32).wait();
    });
    EXPECT_NEAR(ag, collective_time_s(CollectiveKind::all_gather, block_bytes * p, p, link),
                kRelTol * ag + 1e-12)
        << "p=" << p;
    const SimOptions slow_reduce{.reduce_GBps = 2};
    LinkParams link_r = link;
    link_r.reduce_GBps = 2;
    const double rs = run_sim(topo, slow_reduce, [&](Mesh& mesh) {
      Communicator* c = &mesh.world();
      std::vector<float> in(count * p, 1.f), out(count);
      c->reduce_scatter(in.data(), out.data(), count, DType::f32).wait();
      EXPECT_EQ(out[0], float(p));
    });
    EXPECT_NEAR(rs, collective_time_s(CollectiveKind::reduce_scatter, block_bytes * p, p, link_r),
                kRelTol * rs + 1e-12)
        << "p=" << p;
    const double a2a = run_sim(topo, {}, [&](Mesh& mesh) {
      Communicator* c = &mesh.world();
      std::vector<float> in(count * p, 1.f), out(count * p);
      c->all_to_all(in.data(), out.data(), count, DType::f32).wait();
    });
    EXPECT_NEAR(a2a, collective_time_s(CollectiveKind::all_to_all, block_bytes * p, p, link),
                kRelTol * a2a + 1e-12)
        << "p=" << p;
    if (p > 1) {
      const std::size_t n = count * p;  // divisible: even blocks
      const double ar = run_sim(topo, {}, [&](Mesh& mesh) {
        Communicator* c = &mesh.world();
        std::vector<float> buf(n, 1.f);
        c->all_reduce(buf.data(), buf.data(), n, DType::f32).wait();
      });
      EXPECT_NEAR(ar, collective_time_s(CollectiveKind::all_reduce, n * 4.0, p, link), kRelTol * ar + 1e-12)
          << "p=" << p;
    }
  }
}

TEST(SimTransport, FrontierMiniHierarchicalAllGatherIsSumOfTierSteps) {
  const Topology topo = Topology::load("frontier-mini");
  const std::size_t shard = 4096;  // f32 elements per rank
  // Outer tier first: the system step gathers 2 shards, node 2x2, gcd 2x2x2 (mesh.hpp).
  double expected = 0;
  double payload = shard * 4.0;
  for (int t = topo.num_tiers() - 1; t >= 0; --t) {
    payload *= topo.tier(t).fanout;
    expected +=
        collective_time_s(CollectiveKind::all_gather, payload, topo.tier(t).fanout, link_of(topo.tier(t)));
  }
  const TierSet all = tiers_up_to(topo.num_tiers() - 1);
  std::vector<double> elapsed(topo.world_size());
  constexpr double kStart = 1.0;
  auto world = std::make_shared<SimWorld>(topo, SimOptions{});
  run_sim(world, [&](Mesh& mesh) {
    const int r = mesh.world().rank();
    for (int t = 0; t < topo.num_tiers(); ++t) mesh.tier(t);  // create groups (bookkeeping)
    mesh.group(all);
    mesh.world().barrier().wait();
    world->advance_to_s(r, kStart);  // every clock at the same start, past the set-up traffic
    std::vector<float> in(shard, float(r)), out(shard * topo.world_size());
    mesh.all_gather(all, in.data(), out.data(), shard, DType::f32).wait();
    elapsed[r] = world->now_s(r) - kStart;
  });
  double worst = 0;
  for (double e : elapsed) worst = std::max(worst, e);
  EXPECT_NEAR(worst, expected, 1e-9 * expected);
}

}  // namespace
}  // namespace tz::perf
