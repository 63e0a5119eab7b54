#include "topology/topology.hpp"
#include "support/expect_input_error.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"

namespace tz {
namespace {

using test::expect_input_error;

nlohmann::json two_tier(nlohmann::json inner_fanout = 2) {
  return nlohmann::json::parse(R"({"name": "t", "tiers": [
    {"name": "a", "fanout": 2, "bandwidth_GBps": 100, "latency_us": 1},
    {"name": "b", "fanout": "auto", "bandwidth_GBps": 10, "latency_us": 5}], "host_tier": "a"})")
      .patch(
          nlohmann::json::array({{{"op", "replace"}, {"path", "/tiers/0/fanout"}, {"value", inner_fanout}}}));
}

TEST(Topology, PresetsLoadAndResolve) {
  for (const auto& name : Topology::preset_names()) {
    Topology t = Topology::load(name);
    EXPECT_GE(t.num_tiers(), 1) << name;
    for (const auto& tier : t.tiers()) EXPECT_FALSE(tier.source.empty()) << name << " tier " << tier.name;
  }
  Topology mini = Topology::load("frontier-mini");
  ASSERT_TRUE(mini.resolved());
  EXPECT_EQ(mini.world_size(), 8);
  EXPECT_EQ(mini.num_tiers(), 3);
  Topology frontier = Topology::load("frontier").resolve_outer(48);
  EXPECT_EQ(frontier.world_size(), 384);
  EXPECT_EQ(frontier.tier(frontier.host_tier()).name, "node");
  EXPECT_DOUBLE_EQ(frontier.device().peak_tflops, 191.5);
  EXPECT_EQ(Topology::load("dgx-h100").resolve(16).tier(1).fanout, 2);
  EXPECT_EQ(Topology::load("flat").resolve(7).world_size(), 7);
}

TEST(Topology, MixedRadixCoordinates) {
  Topology t = Topology::load("frontier-mini");
  for (int r = 0; r < 8; ++r) {
    auto c = t.coords(r);
    EXPECT_EQ(c[0], r % 2);
    EXPECT_EQ(c[1], (r / 2) % 2);
    EXPECT_EQ(c[2], r / 4);
    EXPECT_EQ(t.rank_of(c), r);
  }
}

TEST(Topology, GroupsForEveryTierSubsetPartitionTheWorld) {
  Topology t = Topology::load("frontier-mini");
  for (TierSet s = 0; s < 8; ++s) {
    std::set<int> colors;
    for (int r = 0; r < 8; ++r) {
      auto members = t.group_ranks(r, s);
      ASSERT_EQ(static_cast<int>(members.size()), t.group_size(s));
      EXPECT_EQ(members[t.group_rank(r, s)], r) << "set " << s << " rank " << r;
      for (int m : members) EXPECT_EQ(t.group_color(m, s), t.group_color(r, s));
      colors.insert(t.group_color(r, s));
    }
    EXPECT_EQ(static_cast<int>(colors.size()), 8 / t.group_size(s)) << "set " << s;
  }
  EXPECT_EQ(t.group_ranks(5, tier_bit(1)), (std::vector<int>{5, 7}));
  EXPECT_EQ(t.group_ranks(5, tiers_up_to(1)), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.tier_set_name(tier_bit(0) | tier_bit(2)), "gcd+system");
  EXPECT_EQ(t.tier_set_name(tiers_up_to(2)), "world");
}

TEST(Topology, BadInputsNameKeyAndValue) {
  expect_input_error([] { Topology::load("nope"); }, {"nope", "frontier"});
  expect_input_error([] { Topology::from_json(two_tier("x"), "f.json"); },
                     {"f.json", "tiers[0]", "fanout", "\"x\""});
  expect_input_error([] { Topology::from_json(two_tier(0), "f.json"); }, {"fanout", "0"});
  expect_input_error([] { Topology::from_json(two_tier(2).at("tiers"), "f.json"); }, {"f.json", "object"});
  auto missing = two_tier();
  missing["tiers"][0].erase("bandwidth_GBps");
  expect_input_error([&] { Topology::from_json(missing, "f.json"); }, {"missing key 'bandwidth_GBps'"});
  auto unknown = two_tier();
  unknown["tiers"][1]["bandwith_GBps"] = 3;
  expect_input_error([&] { Topology::from_json(unknown, "f.json"); }, {"unknown key 'bandwith_GBps'"});
  auto bad_type = two_tier();
  bad_type["tiers"][0]["latency_us"] = "fast";
  expect_input_error([&] { Topology::from_json(bad_type, "f.json"); }, {"latency_us", "\"fast\""});
  auto bad_host = two_tier();
  bad_host["host_tier"] = "rack";
  expect_input_error([&] { Topology::from_json(bad_host, "f.json"); }, {"host_tier", "rack"});
  expect_input_error([] { Topology::from_json(two_tier(2), "f.json").resolve(7); }, {"7", "multiple of 2"});
  expect_input_error([] { Topology::load("frontier-mini").resolve(6); }, {"multiply to 8", "6"});
  expect_input_error([] { Topology::load("frontier-mini").tier_index("rack"); },
                     {"rack", "gcd, node, system"});
}

TEST(Topology, HostCheckNamesRanksAndHosts) {
  Topology t = Topology::from_json(two_tier(), "f.json").resolve(4);  // host = domain of tier a
  t.check_hosts({"h0", "h0", "h1", "h1"}, false);
  expect_input_error(
      [&] {
        t.check_hosts({"h0", "h1", "h1", "h1"}, false);
      },
      {"ranks 0 and 1", "'h0'", "'h1'"});
  expect_input_error([&] { t.check_hosts({"h0", "h0", "h0", "h0"}, false); }, {"ranks 0 and 2", "--emulate"});
  t.check_hosts({"h0", "h0", "h0", "h0"}, true);
  expect_input_error([&] { t.check_hosts({"h0", "h0"}, true); }, {"4 ranks", "2 ranks"});
}

}  // namespace
}  // namespace tz
