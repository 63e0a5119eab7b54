#include "plan/partition_plan.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan_test_util.hpp"

namespace tz {
namespace {

using plan_test::expect_input_error;
using plan_test::flat;
using plan_test::mini;
using Tiers = PartitionPlan::Tiers;
constexpr int R = kReplicated;

TEST(PartitionPlan, PresetsOnFrontierMini) {
  const Topology t = mini();  // gcd 0, node 1 (host), system 2
  EXPECT_EQ(PartitionPlan::preset("ddp", t).tiers(), (Tiers{R, R, R, R}));
  EXPECT_EQ(PartitionPlan::preset("zero1", t).tiers(), (Tiers{R, R, R, 2}));
  EXPECT_EQ(PartitionPlan::preset("zero2", t).tiers(), (Tiers{R, R, 2, 2}));
  EXPECT_EQ(PartitionPlan::preset("zero3", t).tiers(), (Tiers{2, 2, 2, 2}));
  const PartitionPlan zpp = PartitionPlan::preset("zeropp", t);
  EXPECT_EQ(zpp.tiers(), (Tiers{2, 1, 2, 2}));
  EXPECT_TRUE(zpp.options().qwz);
  EXPECT_TRUE(zpp.options().qgz);
  EXPECT_TRUE(zpp.has_secondary_weights());
  EXPECT_EQ(PartitionPlan::preset("zeropp", t, {.hpz = false}).tiers(), (Tiers{2, 2, 2, 2}));
  EXPECT_EQ(PartitionPlan::preset("zeropp", t, {.hpz_partition_size = 2}).tiers(), (Tiers{2, 0, 2, 2}));
  EXPECT_EQ(PartitionPlan::preset("mics", t).tiers(), (Tiers{1, 1, 1, 1}));  // default: the host tier
  EXPECT_EQ(PartitionPlan::preset("mics", t, {.partition_size = 2}).tiers(), (Tiers{0, 0, 0, 0}));
  EXPECT_EQ(PartitionPlan::preset("hsdp", t, {.partition_tier = "system"}).tiers(), (Tiers{2, 2, 2, 2}));
  EXPECT_EQ(PartitionPlan::preset("hsdp", t, {.partition_tier = "node", .partition_size = 4}).tiers(),
            (Tiers{1, 1, 1, 1}));
  EXPECT_EQ(PartitionPlan::preset("three-level", t).tiers(), (Tiers{0, 0, 1, 2}));
  for (const auto& name : PartitionPlan::preset_names()) {
    const PartitionPlan p = PartitionPlan::preset(name, t);
    EXPECT_EQ(p.name(), name);
    EXPECT_NO_THROW(p.validate_world(t, 8)) << name;
    EXPECT_NE(p.describe(t).find("W_fwd"), std::string::npos);
    if (name != "zeropp") {
      EXPECT_FALSE(p.options().qwz || p.options().qgz) << name;
    }
  }
}

TEST(PartitionPlan, PresetsOnFlatWorlds) {
  for (int n : plan_test::kFlatSizes) {
    const Topology t = flat(n);  // one tier, no host tier: hpZ, mics and three-level fall back to tier 0
    for (const auto& name : PartitionPlan::preset_names()) {
      const PartitionPlan p = PartitionPlan::preset(name, t);
      EXPECT_NO_THROW(p.validate_world(t, n)) << name << " n=" << n;
      for (ModelState s : kModelStates) EXPECT_LE(p.tier(s), 0) << name;
    }
    EXPECT_EQ(PartitionPlan::preset("zeropp", t).tiers(), (Tiers{0, 0, 0, 0}));
    EXPECT_EQ(PartitionPlan::preset("three-level", t).tiers(), (Tiers{0, 0, 0, 0}));
    const int whole = n == 1 ? R : 0;  // a partition group of one rank is no sharding
    EXPECT_EQ(PartitionPlan::preset("mics", t, {.partition_size = n}).tiers(),
              (Tiers{whole, whole, whole, whole}));
  }
}

TEST(PartitionPlan, ConsistencyErrorsNameTheRule) {
  const Topology t = mini();
  const PartitionPlan z3 = PartitionPlan::preset("zero3", t);
  expect_input_error([&] { z3.with_tier(ModelState::w_fwd, 1).validate(t); },
                     {"W_bwd on 'system'", "more finely than W_fwd on 'node'", "secondary"});
  expect_input_error([&] { z3.with_tier(ModelState::optim, 1).validate(t); },
                     {"G on 'system'", "O on 'node'", "full gradient"});
  expect_input_error([&] { PartitionPlan::preset("zero1", t).with_options({.qwz = true}).validate(t); },
                     {"qwZ", "W_fwd is replicated"});
  expect_input_error([&] { PartitionPlan::preset("zero1", t).with_options({.qgz = true}).validate(t); },
                     {"qgZ", "G is replicated"});
  expect_input_error([&] { z3.with_tier(ModelState::grad, 3).validate(t); },
                     {"G is placed on tier 3", "0..2"});
  expect_input_error([&] { z3.with_options({.quant_block = 7}).validate(t); },
                     {"quant_block 7", "multiple of 32"});
  expect_input_error([&] { z3.with_options({.prefetch_depth = -1}).validate(t); }, {"prefetch_depth -1"});
  expect_input_error([&] { z3.with_options({.grad_accum_steps = 0}).validate(t); },
                     {"gradient_accumulation_steps 0"});
  expect_input_error([&] { z3.with_options({.micro_batch_size = 0}).validate(t); }, {"micro_batch_size 0"});
  expect_input_error([&] { z3.validate_world(t, 6); }, {"frontier-mini describes 8 ranks", "world has 6"});
  expect_input_error([&] { z3.validate_world(Topology::load("flat"), 4); }, {"'auto'", "flat"});
  // A plan made for a three-tier topology used on a one-tier one.
  expect_input_error([&] { z3.validate(flat(8)); }, {"W_fwd is placed on tier 2", "flat"});
}

TEST(PartitionPlan, PresetErrors) {
  const Topology t = mini();
  expect_input_error([&] { PartitionPlan::preset("zero4", t); }, {"unknown preset 'zero4'", "three-level"});
  expect_input_error([&] { PartitionPlan::preset("mics", t, {.partition_size = 3}); },
                     {"partition size 3", "gcd 2, node 4, system 8"});
  expect_input_error([&] { PartitionPlan::preset("mics", t, {.partition_tier = "rack"}); },
                     {"unknown tier 'rack'", "gcd, node, system"});
  expect_input_error(
      [&] { PartitionPlan::preset("hsdp", t, {.partition_tier = "gcd", .partition_size = 4}); },
      {"'gcd' has 2 ranks", "partition size is 4"});
  expect_input_error([&] { PartitionPlan::preset("zero3", t, {.partition_size = 4}); }, {"mics and hsdp"});
  expect_input_error([&] { PartitionPlan::preset("zero3", t, {.hpz = false}); }, {"zeropp"});
  expect_input_error([&] { PartitionPlan::preset("zeropp", t, {.hpz_partition_size = 3}); },
                     {"hpz partition size 3"});
}

TEST(PartitionPlan, SpecFromJsonOverridesThePreset) {
  const Topology t = mini();
  auto plan = [&](const char* text) { return plan_from_json(nlohmann::json::parse(text), t, "test"); };
  // The paper's scheme written by hand equals the preset.
  const PartitionPlan custom = plan(R"({"W": "gcd", "G": "node", "O": "system"})");
  EXPECT_EQ(custom.tiers(), PartitionPlan::preset("three-level", t).tiers());
  EXPECT_EQ(custom.name(), "custom");
  // W_fwd alone moves W_bwd with it; "world" is the outermost tier.
  EXPECT_EQ(plan(R"({"preset": "zero3", "W_fwd": "node"})").tiers(), (Tiers{1, 1, 2, 2}));
  EXPECT_EQ(plan(R"({"preset": "zero3", "W_fwd": "node"})").name(), "zero3*");
  EXPECT_EQ(plan(R"({"W_fwd": "world", "W_bwd": "node", "G": "world", "O": "world"})").tiers(),
            (Tiers{2, 1, 2, 2}));
  const PartitionPlan zpp = plan(R"({"preset": "zeropp", "qgz": false, "hpz": false, "quant_block": 64,
      "prefetch_depth": 2, "gradient_accumulation_steps": 4, "micro_batch_size": 3, "dtype": "fp32"})");
  EXPECT_EQ(zpp.tiers(), (Tiers{2, 2, 2, 2}));
  EXPECT_TRUE(zpp.options().qwz);
  EXPECT_FALSE(zpp.options().qgz);
  EXPECT_EQ(zpp.options().quant_block, 64);
  EXPECT_EQ(zpp.options().prefetch_depth, 2);
  EXPECT_EQ(zpp.options().grad_accum_steps, 4);
  EXPECT_EQ(zpp.options().micro_batch_size, 3);
  EXPECT_EQ(zpp.options().dtype_mode, DTypeMode::fp32);
  EXPECT_EQ(plan(R"({"preset": "mics", "partition_size": 2})").tiers(), (Tiers{0, 0, 0, 0}));
  EXPECT_EQ(zpp.options().collectives, CollectiveAlgo::hierarchical);  // the default
  const PartitionPlan flat3 = plan(R"({"preset": "zero3", "collectives": "flat"})");
  EXPECT_EQ(flat3.options().collectives, CollectiveAlgo::flat);
  EXPECT_EQ(flat3.tiers(), PartitionPlan::preset("zero3", t).tiers());
  EXPECT_NE(flat3.describe(t).find("collectives flat"), std::string::npos) << flat3.describe(t);
  EXPECT_EQ(plan(R"({"preset": "zero3", "collectives": "hierarchical"})").options().collectives,
            CollectiveAlgo::hierarchical);

  expect_input_error([&] { plan(R"({"preset": "zero3", "W_fw": "node"})"); }, {"unknown key 'W_fw'"});
  expect_input_error([&] { plan(R"({"O": "rack"})"); }, {"O names unknown tier 'rack'"});
  expect_input_error([&] { plan(R"({"preset": "zero3", "dtype": "fp16"})"); }, {"dtype 'fp16'"});
  expect_input_error([&] { plan(R"({"preset": "zero3", "collectives": "ring"})"); },
                     {"key 'collectives'", "'ring'", "hierarchical, flat"});
  expect_input_error(
      [&] {
        PartitionPlan("bad", {2, 2, 2, 2}, {.collectives = CollectiveAlgo{7}}).validate(t);
      },
      {"plan bad", "collectives value 7"});
  expect_input_error([&] { plan(R"({"preset": "zero3", "hpz": true})"); },
                     {"hpz applies only to the zeropp"});
  expect_input_error([&] { plan(R"({"W": "node", "W_bwd": "gcd"})"); }, {"either W"});
  expect_input_error([&] { plan(R"({"preset": "zeropp", "G": "replicated"})"); }, {"qgZ", "G is replicated"});
  expect_input_error([&] { plan(R"({"preset": "zero3", "quant_block": "big"})"); },
                     {"quant_block", "integer"});
}

TEST(PartitionPlan, JsonRoundTrip) {
  for (const Topology& t : {mini(), flat(3)}) {
    for (const auto& name : PartitionPlan::preset_names()) {
      const PartitionPlan p =
          PartitionPlan::preset(name, t).with_options({.qwz = name == "zeropp",
                                                       .qgz = name == "zeropp",
                                                       .quant_block = 128,
                                                       .prefetch_depth = 3,
                                                       .grad_accum_steps = 2,
                                                       .micro_batch_size = 5,
                                                       .dtype_mode = DTypeMode::fp32,
                                                       .collectives = CollectiveAlgo::flat});
      const nlohmann::json j = p.to_json(t);
      const PartitionPlan back = plan_from_json(j, t, "round trip");
      EXPECT_EQ(back.name(), p.name());
      EXPECT_EQ(back.tiers(), p.tiers()) << j.dump();
      EXPECT_EQ(back.to_json(t), j);
      EXPECT_EQ(j.at("collectives"), "flat");
    }
  }
}

TEST(PartitionPlan, TierSetsOfPlacements) {
  EXPECT_EQ(placement_domain(kReplicated), TierSet{0});
  EXPECT_EQ(placement_domain(1), TierSet{0b011});
  EXPECT_EQ(tiers_between(0, 2), TierSet{0b110});
  EXPECT_EQ(tiers_between(kReplicated, 2), TierSet{0b111});
  EXPECT_EQ(tiers_between(2, 2), TierSet{0});
  EXPECT_EQ(tiers_between(2, 0), TierSet{0});
  const Topology t = mini();
  EXPECT_EQ(tier_of_domain_size(t, 1, "x"), kReplicated);
  EXPECT_EQ(tier_of_domain_size(t, 4, "x"), 1);
  EXPECT_EQ(parse_placement(t, "world", "x"), 2);
  EXPECT_EQ(parse_placement(t, "none", "x"), kReplicated);
}

}  // namespace
}  // namespace tz
