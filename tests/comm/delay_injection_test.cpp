// Delay injection (CommOptions::delay_injection): the injector's sleeps are seeded, bounded and
// per stream; the options are parsed and range-checked; the delay transport sleeps before sends and
// receives, also on split groups; and every collective, on the transport algorithms and the
// shared-memory ones, with random inputs, gives bit-for-bit the same results with delays as without
// at 1-8 ranks, including non-blocking collectives of two communicators ordered by stream_wait and
// the mesh's hierarchical compositions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "comm/delay_injector.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/delay_transport.hpp"
#include "comm/transport/thread_transport.hpp"
#include "core/bf16.hpp"
#include "core/counter_rng.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

TEST(DelayInjection, SleepsAreSeededBoundedAndPerStream) {
  const DelayInjection on{.seed = 7, .max_us = 500};
  DelayInjector a(on, delay_stream(0, "world")), b(on, delay_stream(0, "world"));
  DelayInjector other_rank(on, delay_stream(1, "world")),
      other_seed({.seed = 8, .max_us = 500}, delay_stream(0, "world"));
  std::vector<std::uint32_t> xa, xb, xr, xs;
  for (int i = 0; i < 200; ++i) {
    xa.push_back(a.next_us());
    xb.push_back(b.next_us());
    xr.push_back(other_rank.next_us());
    xs.push_back(other_seed.next_us());
  }
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xr);
  EXPECT_NE(xa, xs);
  EXPECT_EQ(a.draws(), 200u);
  // About one call in four sleeps, for times spread over [1, 500].
  const auto sleeps = std::count_if(xa.begin(), xa.end(), [](std::uint32_t us) { return us > 0; });
  EXPECT_GT(sleeps, 25);
  EXPECT_LT(sleeps, 80);
  std::set<std::uint32_t> distinct(xa.begin(), xa.end());
  EXPECT_GT(distinct.size(), 20u);
  for (std::uint32_t us : xa) EXPECT_LE(us, 500u);
  DelayInjector off;
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.next_us(), 0u);
  off.pause();
}

TEST(DelayInjection, ParsedAndRangeChecked) {
  EXPECT_EQ(parse_delay_injection("7:2000"), (DelayInjection{.seed = 7, .max_us = 2000}));
  EXPECT_EQ(parse_delay_injection("off"), DelayInjection{});
  EXPECT_FALSE(parse_delay_injection("3:0").enabled());
  for (const char* bad : {"", "7", "7:", ":5", "x:5", "7:-1", "7:2000x", "7:100001", "-1:5"})
    test::expect_input_error([&] { parse_delay_injection(bad, "--comm-delay"); },
                             {"--comm-delay", "SEED:MAX_US"});

  for (SharedAllToAll a : {SharedAllToAll::automatic, SharedAllToAll::pair_rings, SharedAllToAll::rounds,
                           SharedAllToAll::in_place})
    EXPECT_EQ(parse_shared_all_to_all(shared_all_to_all_name(a)), a);
  EXPECT_EQ(shared_all_to_all_name(SharedAllToAll::automatic), "auto");
  for (const char* bad : {"", "pairs", "in_place", "AUTO"})
    test::expect_input_error([&] { parse_shared_all_to_all(bad, "--shared-all-to-all"); },
                             {"--shared-all-to-all", "pair-rings"});

  // One field out of range at a time, the others at their defaults; each error names the field.
  struct Bad {
    std::function<void(CommOptions&)> set;
    std::string message;
  };
  const std::vector<Bad> bad_options = {
      {[](CommOptions& o) { o.delay_injection = {.seed = 1, .max_us = 100001}; },
       "delay_injection.max_us = 100001"},
      {[](CommOptions& o) { o.timeout_s = 0; }, "timeout_s = 0"},
      {[](CommOptions& o) { o.timeout_s = -1; }, "timeout_s = -1"},
      {[](CommOptions& o) { o.timeout_s = std::nan(""); }, "timeout_s = nan"},
      {[](CommOptions& o) { o.timeout_s = 1.0 / 0.0; }, "timeout_s = inf"},
      {[](CommOptions& o) { o.timeout_s = 2e9; }, "timeout_s = 2000000000"},
      {[](CommOptions& o) { o.chunk_bytes = 0; }, "chunk_bytes = 0"},
      {[](CommOptions& o) { o.shared_slot_bytes = 0; }, "shared_slot_bytes = 0"},
      {[](CommOptions& o) { o.shared_slot_bytes = (std::size_t{1} << 30) + 1; },
       "shared_slot_bytes = 1073741825"},
      {[](CommOptions& o) { o.ranks_on_host = -1; }, "ranks_on_host = -1"},
      {[](CommOptions& o) { o.shared_all_to_all = static_cast<SharedAllToAll>(4); }, "shared_all_to_all = 4"},
      {[](CommOptions& o) { o.ranks_on_host = (1 << 20) + 1; }, "ranks_on_host = 1048577"},
  };
  for (const Bad& b : bad_options) {
    CommOptions o;
    b.set(o);
    test::expect_input_error([&] { validate_comm_options(o); }, {b.message});
    // A thread world with it fails on the caller's thread, before any rank starts.
    test::expect_input_error(
        [&] {
          run_thread_world(
              2, [](Communicator&) {}, o);
        },
        {b.message});
  }
  validate_comm_options({});
}

TEST(DelayInjection, TransportSleepsBeforeSendsAndReceivesAndOnSplitGroups) {
  ThreadWorldHandle world = make_thread_world(2);
  const DelayInjection d{.seed = 3, .max_us = 50};
  std::vector<std::unique_ptr<Transport>> t;
  for (int r = 0; r < 2; ++r)
    t.push_back(make_delay_transport(std::move(world.transports[r]), d, delay_stream(r, "t")));
  int x = 5, y = 0;
  Request s = t[0]->isend(&x, sizeof(x), 1, 0), rcv = t[1]->irecv(&y, sizeof(y), 0, 0);
  const Deadline deadline = Clock::now() + std::chrono::seconds(10);
  ASSERT_TRUE(t[0]->wait_all(std::span(&s, 1), deadline));
  ASSERT_TRUE(t[1]->wait_all(std::span(&rcv, 1), deadline));
  EXPECT_EQ(y, 5);
  EXPECT_EQ(delay_transport_draws(*t[0]), 1);
  EXPECT_EQ(delay_transport_draws(*t[1]), 1);
  t[0]->inject_delay();
  EXPECT_EQ(delay_transport_draws(*t[0]), 2);
  EXPECT_EQ(delay_transport_draws(*make_thread_world(1).transports[0]), -1);

  std::vector<std::unique_ptr<Transport>> sub(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] { sub[r] = t[r]->split(0, r, Clock::now() + std::chrono::seconds(10)); });
  for (auto& th : threads) th.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(delay_transport_draws(*sub[r]), 0);  // a fresh stream of sleeps
    EXPECT_TRUE(sub[r]->can_share_memory());
  }
}

// Random inputs (not exact in any order: bitwise equality checks that results do not depend on
// timing). Each rank's results of every collective, concatenated as bytes.
std::vector<std::byte> run_all_collectives(Communicator& comm, std::size_t count) {
  const int p = comm.size(), r = comm.rank();
  std::vector<std::byte> out;
  auto keep = [&](const void* data, std::size_t bytes) {
    const auto* b = static_cast<const std::byte*>(data);
    out.insert(out.end(), b, b + bytes);
  };
  auto random = [&](std::size_t n, std::uint64_t salt) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = float(2 * counter_uniform(salt * 131 + r, i) - 1);
    return v;
  };
  std::vector<float> in = random(count * p + 3, 1), res(count * p + 3, -1.f);
  comm.all_gather(in.data(), res.data(), count, DType::f32).wait();
  keep(res.data(), count * p * 4);
  comm.reduce_scatter(in.data(), res.data(), count, DType::f32).wait();
  keep(res.data(), count * 4);
  std::vector<bf16> h(count * p), hr(count * p);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(in[i]);
  comm.reduce_scatter(h.data(), hr.data(), count, DType::bf16).wait();
  keep(hr.data(), count * 2);
  comm.all_reduce(in.data(), res.data(), count * p + 3, DType::f32).wait();  // + 3: not divisible
  keep(res.data(), (count * p + 3) * 4);
  comm.all_to_all(in.data(), res.data(), count, DType::f32).wait();
  keep(res.data(), count * p * 4);
  for (int root = 0; root < p; ++root) {
    std::vector<float> b = random(count + root, 2 + root);
    comm.broadcast(b.data(), b.size(), DType::f32, root).wait();
    keep(b.data(), b.size() * 4);
  }
  comm.barrier().wait();
  // Two streams: a split issued behind the world's work with stream_wait, all non-blocking.
  auto sub = comm.split(r % 2, r, "parity");
  std::vector<float> a = random(count * p, 3), ar(count * p), s = random(count * p, 4),
                     sr(count * sub->size());
  Work w1 = comm.all_reduce(a.data(), ar.data(), a.size(), DType::f32);
  sub->stream_wait(w1);
  Work w2 = sub->all_gather(ar.data(), sr.data(), count, DType::f32);  // reads the world's result
  comm.stream_wait(w2);
  Work w3 = comm.reduce_scatter(s.data(), a.data(), count / 2, DType::f32);
  w3.wait();
  w2.wait();
  keep(sr.data(), sr.size() * 4);
  keep(a.data(), count / 2 * 4);
  return out;
}

CommOptions with_delays(CommOptions o, std::uint64_t seed) {
  o.delay_injection = {.seed = seed, .max_us = 200};
  return o;
}

CommOptions transport_only(CommOptions o) {
  o.shared_memory_all_gather = o.shared_memory_all_to_all = o.shared_memory_broadcast =
      o.shared_memory_reduce_scatter = false;
  return o;
}

TEST(DelayInjection, EveryCollectiveBitwiseUnchangedAtOneToEightRanks) {
  CommOptions small;
  small.chunk_bytes = 24;
  small.shared_slot_bytes = 64;
  small.timeout_s = 60;
  for (const CommOptions& base : {small, transport_only(small)})
    for (int p : {1, 2, 3, 4, 5, 6, 7, 8}) {
      const std::size_t count = 37;
      std::vector<std::vector<std::byte>> plain(p), delayed(p);
      run_thread_world(
          p, [&](Communicator& comm) { plain[comm.rank()] = run_all_collectives(comm, count); }, base);
      run_thread_world(
          p, [&](Communicator& comm) { delayed[comm.rank()] = run_all_collectives(comm, count); },
          with_delays(base, 11 + p));
      for (int r = 0; r < p; ++r) {
        ASSERT_EQ(plain[r].size(), delayed[r].size());
        EXPECT_EQ(plain[r], delayed[r])
            << "p " << p << " rank " << r << " shared " << base.shared_memory_all_gather;
      }
    }
}

TEST(DelayInjection, MeshCollectivesBitwiseUnchanged) {
  const Topology topo = Topology::load("frontier-mini").resolve(8);
  const int all = (1 << topo.num_tiers()) - 1;
  auto run = [&](const CommOptions& o) {
    std::vector<std::vector<float>> out(8);
    run_thread_mesh(
        topo,
        [&](Mesh& mesh) {
          const int r = mesh.world().rank();
          std::vector<float>& mine = out[r];
          const std::size_t count = 29;
          std::vector<std::vector<float>> shard(all + 1), full(all + 1), grad(all + 1), red(all + 1);
          std::vector<Work> works;
          // Every tier subset at once: gathers and reductions of all subsets in flight together.
          for (int tiers = 1; tiers <= all; ++tiers) {
            const int g = mesh.group_size(tiers);
            for (std::size_t i = 0; i < count; ++i)
              shard[tiers].push_back(float(counter_uniform(tiers * 17 + r, i)));
            for (std::size_t i = 0; i < g * count; ++i)
              grad[tiers].push_back(float(counter_uniform(tiers * 19 + r, i)));
            full[tiers].assign(g * count, 0.f);
            red[tiers].assign(count, 0.f);
            works.push_back(
                mesh.all_gather(tiers, shard[tiers].data(), full[tiers].data(), count, DType::f32));
            works.push_back(
                mesh.reduce_scatter(tiers, grad[tiers].data(), red[tiers].data(), count, DType::f32));
          }
          for (Work& w : works) w.wait();
          for (int tiers = 1; tiers <= all; ++tiers) {
            mine.insert(mine.end(), full[tiers].begin(), full[tiers].end());
            mine.insert(mine.end(), red[tiers].begin(), red[tiers].end());
          }
        },
        o);
    return out;
  };
  CommOptions o;
  o.chunk_bytes = 40;
  o.shared_slot_bytes = 64;
  o.timeout_s = 60;
  const auto plain = run(o), delayed = run(with_delays(o, 5));
  for (int r = 0; r < 8; ++r) {
    ASSERT_EQ(plain[r].size(), delayed[r].size());
    EXPECT_EQ(std::memcmp(plain[r].data(), delayed[r].data(), plain[r].size() * 4), 0) << "rank " << r;
  }
}

}  // namespace
}  // namespace tz
