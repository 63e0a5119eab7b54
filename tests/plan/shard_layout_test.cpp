#include "plan/shard_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "plan_test_util.hpp"

namespace tz {
namespace {

using plan_test::flat;
using plan_test::mini;

// Ranges that exercise padding: a multiple of 8, odd sizes, smaller than the world, and empty.
std::vector<RangeSpec> odd_ranges() {
  return {{"emb", 40}, {"h0", 37}, {"ln", 3}, {"bias", 1}, {"none", 0}};
}

TEST(ShardLayout, ShardIndexIsInnermostMostSignificant) {
  const Topology t = mini();  // rank = c0 + 2 c1 + 4 c2
  for (int rank = 0; rank < 8; ++rank) {
    const auto c = t.coords(rank);
    EXPECT_EQ(shard_index(t, rank, tiers_up_to(2)), c[0] * 4 + c[1] * 2 + c[2]) << rank;
    EXPECT_EQ(shard_index(t, rank, tiers_up_to(1)), c[0] * 2 + c[1]) << rank;
    EXPECT_EQ(shard_index(t, rank, tier_bit(1) | tier_bit(2)), c[1] * 2 + c[2]) << rank;
    EXPECT_EQ(shard_index(t, rank, 0), 0);
  }
}

TEST(ShardLayout, PaddingAndOffsets) {
  const ShardLayout l(odd_ranges(), mini(), PartitionPlan::preset("zero3", mini()));
  EXPECT_EQ(l.pad_multiple(), 8u);
  EXPECT_EQ(l.padded_numel(0), 40u);
  EXPECT_EQ(l.padded_numel(1), 40u);
  EXPECT_EQ(l.padded_numel(2), 8u);
  EXPECT_EQ(l.padded_numel(3), 8u);
  EXPECT_EQ(l.padded_numel(4), 0u);
  EXPECT_EQ(l.padded_offset(3), 88u);
  EXPECT_EQ(l.total_numel(), 81u);
  EXPECT_EQ(l.total_padded_numel(), 96u);
  EXPECT_EQ(l.max_padded_numel(), 40u);
  EXPECT_EQ(l.state_shard_numel(ModelState::grad), 12u);
  EXPECT_EQ(l.local_offset(ModelState::grad, 2), 10u);
  // Rank 1 is gcd 1 of node 0 of system 0: shard index 4 of 8.
  const ShardSpan s = l.shard(ModelState::w_fwd, 1, 1);
  EXPECT_EQ(s.offset, 20u);
  EXPECT_EQ(s.numel, 5u);
  EXPECT_EQ(s.valid_numel, 5u);
  const ShardSpan last = l.shard(ModelState::w_fwd, 1, 7);  // index 7: elements 35..39, 2 of them real
  EXPECT_EQ(last.offset, 35u);
  EXPECT_EQ(last.valid_numel, 2u);
  const ShardSpan empty =
      l.shard(ModelState::optim, 2, 4);  // 3 real elements over 8 shards: index 1 ok, 3+ empty
  EXPECT_EQ(empty.offset, 1u);
  EXPECT_EQ(empty.valid_numel, 1u);
  EXPECT_EQ(l.shard(ModelState::optim, 2, 6).valid_numel, 0u);  // index 3
  EXPECT_EQ(l.shard(ModelState::optim, 4, 6).numel, 0u);
}

// For every state of every plan: all ranks' shards have one length, the distinct shards tile the padded
// range, each shard is held by world/shard_count ranks, and the real elements are counted once.
void check_tiling(const ShardLayout& l) {
  const int world = l.world_size();
  for (ModelState s : kModelStates) {
    for (int r = 0; r < l.num_ranges(); ++r) {
      if (l.padded_numel(r) == 0) {  // an empty range: empty shards everywhere
        for (int rank = 0; rank < world; ++rank) EXPECT_EQ(l.shard(s, r, rank).numel, 0u);
        continue;
      }
      std::map<std::size_t, int> holders;
      std::map<std::size_t, std::size_t> valid;
      for (int rank = 0; rank < world; ++rank) {
        const ShardSpan span = l.shard(s, r, rank);
        ASSERT_EQ(span.numel, l.shard_numel(s, r));
        ++holders[span.offset];
        valid[span.offset] = span.valid_numel;
      }
      ASSERT_EQ(static_cast<int>(holders.size()), l.shard_count(s)) << model_state_name(s);
      std::size_t next = 0, real = 0;
      for (const auto& [offset, count] : holders) {
        EXPECT_EQ(offset, next);
        EXPECT_EQ(count, world / l.shard_count(s));
        next += l.shard_numel(s, r);
        real += valid[offset];
      }
      EXPECT_EQ(next, l.padded_numel(r));
      EXPECT_EQ(real, l.ranges()[r].numel);
    }
  }
}

TEST(ShardLayout, ShardsTileEveryRangeForEveryPreset) {
  std::vector<Topology> topos = {mini()};
  for (int n : plan_test::kFlatSizes) topos.push_back(flat(n));
  for (const Topology& t : topos)
    for (const auto& name : PartitionPlan::preset_names()) {
      SCOPED_TRACE(t.name() + " " + std::to_string(t.world_size()) + " " + name);
      check_tiling(ShardLayout(odd_ranges(), t, PartitionPlan::preset(name, t)));
    }
}

// Nesting: for placements a < b, the shard over b's domain lies inside the shard over a's domain of the
// same rank, and the all-gather over tiers (a, b] of the b-shards (ordered by shard index over those
// tiers, as the hierarchical all-gather places them) rebuilds the a-shard exactly.
TEST(ShardLayout, ShardsNestAndGatherIntoCoarserShards) {
  const Topology t = mini();
  for (int a = kReplicated; a < t.num_tiers(); ++a) {
    for (int b = a; b < t.num_tiers(); ++b) {
      // W_fwd on b, O on a, plus W_bwd / G placed validly.
      const PartitionPlan p("nest", {b, b, a, a}, {});
      const ShardLayout l(odd_ranges(), t, p);
      const TierSet between = tiers_between(a, b);
      for (int r = 0; r < l.num_ranges(); ++r) {
        for (int rank = 0; rank < 8; ++rank) {
          const ShardSpan outer = l.shard(ModelState::optim, r, rank);  // coarser (tier a)
          const ShardSpan inner = l.shard(ModelState::w_fwd, r, rank);  // finer (tier b)
          EXPECT_GE(inner.offset, outer.offset);
          EXPECT_LE(inner.offset + inner.numel, outer.offset + outer.numel);
          std::vector<int> members = t.group_ranks(rank, between);
          std::sort(members.begin(), members.end(),
                    [&](int x, int y) { return shard_index(t, x, between) < shard_index(t, y, between); });
          std::size_t next = outer.offset;
          for (int m : members) {
            const ShardSpan piece = l.shard(ModelState::w_fwd, r, m);
            EXPECT_EQ(piece.offset, next) << "a=" << a << " b=" << b << " rank " << rank << " member " << m;
            next += piece.numel;
          }
          EXPECT_EQ(next, outer.offset + outer.numel);
        }
      }
    }
  }
}

TEST(ShardLayout, CollectiveTierSets) {
  const Topology t = mini();
  const ShardLayout three(odd_ranges(), t, PartitionPlan::preset("three-level", t));
  EXPECT_EQ(three.forward_gather_tiers(), tier_bit(0));
  EXPECT_EQ(three.grad_reduce_tiers(), tier_bit(0) | tier_bit(1));
  EXPECT_EQ(three.boundary_reduce_tiers(), tier_bit(2));
  EXPECT_EQ(three.replica_tiers(), TierSet{0});
  EXPECT_EQ(three.refresh_gather_tiers(), tier_bit(1) | tier_bit(2));
  EXPECT_EQ(three.norm_tiers(), tiers_up_to(2));
  const ShardLayout hsdp(odd_ranges(), t, PartitionPlan::preset("hsdp", t));
  EXPECT_EQ(hsdp.replica_tiers(), tier_bit(2));
  EXPECT_EQ(hsdp.boundary_reduce_tiers(), TierSet{0});
  const ShardLayout ddp(odd_ranges(), t, PartitionPlan::preset("ddp", t));
  EXPECT_EQ(ddp.replica_tiers(), tiers_up_to(2));
  EXPECT_EQ(ddp.forward_gather_tiers(), TierSet{0});
  plan_test::expect_input_error([&] { ShardLayout(odd_ranges(), Topology::load("flat"), PartitionPlan()); },
                                {"'auto'"});
}

}  // namespace
}  // namespace tz
