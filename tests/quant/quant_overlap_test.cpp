// The non-blocking forms of the quantized collectives: many qwZ gathers and qgZ reductions in flight
// at once, interleaved with unquantized collectives on the same communicators and waited for in any
// order, give bitwise the results of one call at a time; `after` orders the read of the input behind
// a collective that writes it, without a wait on the caller's thread (a late rank makes the race
// visible); and the ledger still records exactly the planned bytes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/host_stream.hpp"
#include "quant/qgz_reduce_scatter.hpp"
#include "quant/qwz_all_gather.hpp"
#include "quant/run_collective.hpp"
#include "quant_test_topologies.hpp"

namespace tz {
namespace {

std::vector<float> gaussian(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = g(rng) * (1.0f + static_cast<float>(seed % 5));
  return x;
}

std::vector<float> ref_round_trip(const std::vector<float>& shard, const QuantOptions& opts) {
  std::vector<std::uint8_t> q(quantized_bytes(shard.size(), opts));
  std::vector<float> out(shard.size());
  quantize_ref(shard.data(), DType::f32, shard.size(), q.data(), opts);
  dequantize_ref(q.data(), shard.size(), out.data(), DType::f32, opts);
  return out;
}

std::vector<Topology> topologies() {
  return {quant_test::frontier_mini_with({1, 3, 1}), Topology::load("frontier-mini")};
}

// The shard of gather k on the rank with shard index i (the same on every rank that asks).
std::vector<float> gather_shard(int k, int i, std::size_t count) {
  return gaussian(count, 1000 * k + i);
}

TEST(QuantOverlap, ManyQwzGathersInFlightMatchTheReference) {
  const TierSet all = 0b111;
  for (const Topology& topo : topologies()) {
    run_thread_mesh(topo, [&](Mesh& mesh) {
      const int group = mesh.group_size(all), me = mesh.shard_index(all);
      const std::vector<std::size_t> counts = {1, 300, 4096, 257, 2048};
      std::vector<std::vector<float>> shards, fulls, plain_in, plain_out;
      if (mesh.world().rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (std::size_t k = 0; k < counts.size(); ++k) {
        shards.push_back(gather_shard(k, me, counts[k]));
        fulls.emplace_back(group * counts[k], -1.0f);
        plain_in.push_back(gaussian(counts[k], 77 + me));
        plain_out.emplace_back(group * counts[k], 0.0f);
      }
      const auto before = mesh.ledger().snapshot();
      std::vector<Work> q, p;
      for (std::size_t k = 0; k < counts.size(); ++k) {
        q.push_back(qwz_all_gather(mesh, all, shards[k].data(), fulls[k].data(), counts[k], DType::f32));
        // An unquantized gather on the same communicators, between the quantized ones.
        p.push_back(mesh.all_gather(all, plain_in[k].data(), plain_out[k].data(), counts[k], DType::f32));
      }
      for (std::size_t k = counts.size(); k-- > 0;) q[k].wait();  // in reverse order
      for (auto& w : p) w.wait();
      double expect_bytes = 0;
      for (std::size_t k = 0; k < counts.size(); ++k) {
        for (int i = 0; i < group; ++i) {
          const auto expect = ref_round_trip(gather_shard(k, i, counts[k]), kQwzDefaultOptions);
          ASSERT_EQ(0, std::memcmp(expect.data(), fulls[k].data() + i * counts[k], expect.size() * 4))
              << topo.name() << " rank " << mesh.world().rank() << " gather " << k << " shard " << i;
          const auto plain = gaussian(counts[k], 77 + i);
          ASSERT_EQ(0, std::memcmp(plain.data(), plain_out[k].data() + i * counts[k], plain.size() * 4));
        }
        expect_bytes += double(group - 1) * (quantized_bytes(counts[k], kQwzDefaultOptions) + 4 * counts[k]);
      }
      double got = 0;
      for (const auto& [label, t] : mesh.ledger().since(before)) got += t.bytes;
      EXPECT_NEAR(got, expect_bytes, 1e-9 * expect_bytes);
    });
  }
}

TEST(QuantOverlap, ManyQgzReductionsInFlightMatchOneAtATime) {
  const TierSet all = 0b111;
  for (const Topology& topo : topologies()) {
    run_thread_mesh(topo, [&](Mesh& mesh) {
      const int group = mesh.group_size(all), r = mesh.world().rank();
      const std::vector<std::size_t> counts = {512, 333, 2048, 1000, 512, 4096, 700, 2048};
      std::vector<std::vector<float>> grads, one, many;
      for (std::size_t k = 0; k < counts.size(); ++k) {
        grads.push_back(gaussian(group * counts[k], 500 * k + r));
        one.emplace_back(counts[k], 0.0f);
        many.emplace_back(counts[k], -1.0f);
      }
      for (std::size_t k = 0; k < counts.size(); ++k)
        qgz_reduce_scatter(mesh, all, grads[k].data(), one[k].data(), counts[k]).wait();
      std::vector<Work> works;
      std::vector<std::vector<float>> plain(counts.size());
      std::vector<Work> plain_works;
      // A late rank: the others issue every call while the first ones still wait for it, so a
      // buffer released too early would be reused and overwritten under a pending all-to-all.
      if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      // qwZ gathers in between: their host tasks run on the other lane, beside the reductions', and
      // draw on the same scratch pool.
      std::vector<std::vector<float>> sources(counts.size()), gathered(counts.size());
      std::vector<Work> gather_works;
      for (std::size_t k = 0; k < counts.size(); ++k) {
        works.push_back(qgz_reduce_scatter(mesh, all, grads[k].data(), many[k].data(), counts[k]));
        plain[k].resize(counts[k]);
        plain_works.push_back(
            mesh.reduce_scatter(all, grads[k].data(), plain[k].data(), counts[k], DType::f32));
        sources[k] = gaussian(counts[k], 3000 + k);
        gathered[k].resize(group * counts[k]);
        gather_works.push_back(
            qwz_all_gather(mesh, all, sources[k].data(), gathered[k].data(), counts[k], DType::f32));
      }
      for (std::size_t k = counts.size(); k-- > 0;) works[k].wait();
      for (auto& w : plain_works) w.wait();
      for (auto& w : gather_works) w.wait();
      for (std::size_t k = 0; k < counts.size(); ++k)
        ASSERT_EQ(0, std::memcmp(one[k].data(), many[k].data(), counts[k] * 4))
            << topo.name() << " rank " << r << " reduction " << k;
      for (std::size_t k = 0; k < counts.size(); ++k) {
        const auto expect = ref_round_trip(sources[k], kQwzDefaultOptions);
        for (int i = 0; i < group; ++i)
          ASSERT_EQ(0, std::memcmp(expect.data(), gathered[k].data() + i * counts[k], counts[k] * 4))
              << topo.name() << " rank " << r << " gather " << k << " shard " << i;
      }
    });
  }
}

// A late rank 0: the writer of the input cannot complete before it arrives, so a quantized
// collective that read its input at once would read the stale values.
TEST(QuantOverlap, AfterOrdersTheInputReadBehindItsWriter) {
  const Topology topo = Topology::load("frontier-mini");
  const TierSet all = 0b111;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const int r = mesh.world().rank(), group = mesh.group_size(all);
    const std::size_t count = 600;
    // qwZ: the shard is the all-reduce (sum over 8 ranks) of a per-rank contribution.
    const auto part = gaussian(count, 40 + r);
    std::vector<float> shard(count, 1e30f), full(group * count, 0.0f);
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Work written = mesh.all_reduce(all, part.data(), shard.data(), count, DType::f32);
    const CollectiveRequest gather{.kind = CollectiveKind::all_gather,
                                   .tiers = all,
                                   .count = count,
                                   .dtype = DType::f32,
                                   .quant_bits = 8,
                                   .quant_block = kQwzDefaultOptions.block_size};
    Work gathered = run_collective(mesh, gather, shard.data(), full.data(), nullptr, written);
    // qgZ: the full gradient is an all-gather of per-rank pieces.
    const auto piece = gaussian(count, 90 + r);
    std::vector<float> grad(group * count, 1e30f), out(count, 0.0f);
    if (r == 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const Work grad_written = mesh.all_gather(all, piece.data(), grad.data(), count, DType::f32);
    const CollectiveRequest reduce{.kind = CollectiveKind::reduce_scatter,
                                   .tiers = all,
                                   .count = count,
                                   .dtype = DType::f32,
                                   .quant_bits = 4,
                                   .quant_block = kQgzDefaultOptions.block_size};
    Work reduced = run_collective(mesh, reduce, grad.data(), out.data(), nullptr, grad_written);
    // And an unquantized one, over the system tier, behind a writer on the gcd tier: they share no
    // communicator, so only the dependency keeps the gather from reading before the late rank 0
    // (and its gcd partner) have written.
    const TierSet gcd = 0b001, system = 0b100;
    const auto contribution = gaussian(count, 60 + r);
    std::vector<float> pair_sum(count, 1e30f), plain_full(mesh.group_size(system) * count, 0.0f);
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Work pair_written = mesh.all_reduce(gcd, contribution.data(), pair_sum.data(), count, DType::f32);
    const CollectiveRequest plain_gather{
        .kind = CollectiveKind::all_gather, .tiers = system, .count = count, .dtype = DType::f32};
    Work plain_gathered =
        run_collective(mesh, plain_gather, pair_sum.data(), plain_full.data(), nullptr, pair_written);
    gathered.wait();
    reduced.wait();
    plain_gathered.wait();
    // Expected: the same computations on inputs written before they start.
    std::vector<float> shard_expect(count), full_expect(group * count), out_expect(count);
    mesh.all_reduce(all, part.data(), shard_expect.data(), count, DType::f32).wait();
    run_collective(mesh, gather, shard_expect.data(), full_expect.data()).wait();
    std::vector<float> grad_expect(group * count);
    mesh.all_gather(all, piece.data(), grad_expect.data(), count, DType::f32).wait();
    run_collective(mesh, reduce, grad_expect.data(), out_expect.data()).wait();
    ASSERT_EQ(0, std::memcmp(shard.data(), shard_expect.data(), count * 4));
    EXPECT_EQ(0, std::memcmp(full.data(), full_expect.data(), full.size() * 4)) << "qwZ read a stale shard";
    EXPECT_EQ(0, std::memcmp(out.data(), out_expect.data(), count * 4)) << "qgZ read a stale gradient";
    std::vector<float> pair_expect(count), plain_expect(mesh.group_size(system) * count);
    mesh.all_reduce(gcd, contribution.data(), pair_expect.data(), count, DType::f32).wait();
    mesh.all_gather(system, pair_expect.data(), plain_expect.data(), count, DType::f32).wait();
    EXPECT_EQ(0, std::memcmp(plain_full.data(), plain_expect.data(), plain_full.size() * 4))
        << "the unquantized gather read a stale input";
  });
}

TEST(QuantOverlap, AFailedDependencyFailsTheQuantizedCollective) {
  // The dependency fails on every rank (a host task that throws), so no rank's codes ever travel:
  // every rank's gather fails with that error instead of hanging.
  run_thread_mesh(Topology::load("frontier-mini"), [&](Mesh& mesh) {
    HostStream& s = host_stream(HostLane::weights);
    Work bad = s.enqueue([] { throw CommError("writer failed on purpose"); });
    std::vector<float> shard(64, 1.0f), full(8 * 64);
    Work w = qwz_all_gather(mesh, 0b111, shard.data(), full.data(), 64, DType::f32, kQwzDefaultOptions,
                            nullptr, bad);
    EXPECT_THROW(w.wait(), CommError);
  });
}

}  // namespace
}  // namespace tz
