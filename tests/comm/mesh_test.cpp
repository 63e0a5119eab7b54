// Hierarchical collectives on frontier-mini (2 x 2 x 2 ranks as threads) over every tier subset:
// the shard layout of mesh.hpp gives back the plain contiguous tensor, and each tier's ledger entry
// equals the documented bytes of its step.
#include "comm/mesh.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "comm/thread_world.hpp"

namespace tz {
namespace {

constexpr std::size_t kCount = 5;  // elements per shard

float shard_value(int shard, std::size_t i) {
  return float(shard * 100 + int(i));
}

// Shard indices of every member of rank's group for `tiers`, by world rank.
std::vector<int> all_subsets() {
  std::vector<int> s;
  for (int t = 0; t < 8; ++t) s.push_back(t);
  return s;
}

TEST(Mesh, ShardIndexPutsInnermostTierFirst) {
  const Topology topo = Topology::load("frontier-mini");
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const int r = mesh.world().rank();
    const auto c = topo.coords(r);
    EXPECT_EQ(mesh.shard_index(0b111), c[0] * 4 + c[1] * 2 + c[2]);
    EXPECT_EQ(mesh.shard_index(0b101), c[0] * 2 + c[2]);
    EXPECT_EQ(mesh.shard_index(0b010), c[1]);
    EXPECT_EQ(mesh.shard_index(0), 0);
    EXPECT_EQ(mesh.group(0b011).size(), 4);
    EXPECT_EQ(mesh.group(0b011).label(), "gcd+node");
    EXPECT_EQ(mesh.tier(2).label(), "system");
  });
}

TEST(Mesh, AllGatherEveryTierSubsetGivesContiguousTensor) {
  const Topology topo = Topology::load("frontier-mini");
  CommOptions opts;
  opts.chunk_bytes = 8;
  for (int tiers : all_subsets()) {
    run_thread_mesh(
        topo,
        [&](Mesh& mesh) {
          const int g = mesh.group_size(tiers), me = mesh.shard_index(tiers);
          std::vector<float> shard(kCount), full(g * kCount, -1.f);
          for (std::size_t i = 0; i < kCount; ++i) shard[i] = shard_value(me, i);
          mesh.all_gather(tiers, shard.data(), full.data(), kCount, DType::f32).wait();
          for (int s = 0; s < g; ++s)
            for (std::size_t i = 0; i < kCount; ++i)
              ASSERT_EQ(full[s * kCount + i], shard_value(s, i)) << "tiers " << tiers << " shard " << s;
          // Bytes per tier: the step over tier t gathers f_t pieces of (product of outer fan-outs) shards.
          const auto traffic = mesh.ledger().snapshot();
          double span = kCount * 4;
          for (int t = 2; t >= 0; --t) {
            if (!(tiers & tier_bit(t))) continue;
            const int f = topo.tier(t).fanout;
            span *= f;
            const auto it = traffic.find(topo.tier(t).name);
            ASSERT_NE(it, traffic.end()) << topo.tier(t).name;
            EXPECT_DOUBLE_EQ(it->second.bytes, algorithmic_bytes(CollectiveKind::all_gather, span, f));
            EXPECT_EQ(it->second.ops, 1u);
          }
        },
        opts);
  }
}

TEST(Mesh, ReduceScatterEveryTierSubsetGivesContiguousShard) {
  const Topology topo = Topology::load("frontier-mini");
  for (int tiers : all_subsets()) {
    run_thread_mesh(topo, [&](Mesh& mesh) {
      const int g = mesh.group_size(tiers), me = mesh.shard_index(tiers), r = mesh.world().rank();
      std::vector<float> full(g * kCount), shard(kCount, -1.f);
      for (std::size_t j = 0; j < full.size(); ++j) full[j] = float(r) + float(j);
      mesh.reduce_scatter(tiers, full.data(), shard.data(), kCount, DType::f32).wait();
      float rank_sum = 0;
      for (int q : topo.group_ranks(r, tiers)) rank_sum += float(q);
      for (std::size_t i = 0; i < kCount; ++i)
        ASSERT_EQ(shard[i], rank_sum + float(g * int(me * kCount + i))) << "tiers " << tiers << " rank " << r;
      // Inner tier first: the step over tier t reduces the (remaining) region of span shards.
      const auto traffic = mesh.ledger().snapshot();
      double span = double(g) * kCount * 4;
      for (int t = 0; t < 3; ++t) {
        if (!(tiers & tier_bit(t))) continue;
        const int f = topo.tier(t).fanout;
        EXPECT_DOUBLE_EQ(traffic.at(topo.tier(t).name).bytes,
                         algorithmic_bytes(CollectiveKind::reduce_scatter, span, f));
        span /= f;
      }
    });
  }
}

TEST(Mesh, AllReduceAnyCountEveryTierSubset) {
  const Topology topo = Topology::load("frontier-mini");
  for (int tiers : all_subsets()) {
    for (std::size_t count : {0, 1, 8, 19}) {
      run_thread_mesh(topo, [&](Mesh& mesh) {
        const int r = mesh.world().rank();
        std::vector<float> x(count);
        for (std::size_t i = 0; i < count; ++i) x[i] = float(r) * float(i + 1);
        std::vector<float> y(count, -1.f);
        mesh.all_reduce(tiers, x.data(), y.data(), count, DType::f32).wait();
        float rank_sum = 0;
        for (int q : topo.group_ranks(r, tiers)) rank_sum += float(q);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(y[i], rank_sum * float(i + 1)) << "tiers " << tiers << " count " << count << " i " << i;
      });
    }
  }
}

TEST(Mesh, NonBlockingCompositionsOverlap) {
  const Topology topo = Topology::load("frontier-mini");
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const TierSet all = 0b111;
    std::vector<std::vector<float>> shards(4, std::vector<float>(kCount)),
        fulls(4, std::vector<float>(8 * kCount));
    std::vector<Work> works;
    for (int k = 0; k < 4; ++k) {
      for (std::size_t i = 0; i < kCount; ++i)
        shards[k][i] = shard_value(mesh.shard_index(all), i) + float(k);
      works.push_back(mesh.all_gather(all, shards[k].data(), fulls[k].data(), kCount, DType::f32));
    }
    for (int k = 3; k >= 0; --k) works[k].wait();
    for (int k = 0; k < 4; ++k)
      for (int s = 0; s < 8; ++s) ASSERT_EQ(fulls[k][s * kCount + 1], shard_value(s, 1) + float(k));
  });
}

}  // namespace
}  // namespace tz
