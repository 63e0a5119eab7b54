// --plan auto and the plan-as-configuration block: the planner's best plan is what the run builds,
// every plan survives the round trip through the emitted configuration, keys that fix the plan are
// refused beside "auto", and the chosen plan trains on a 4-rank thread world moving exactly the bytes
// per tier the cost model priced.
#include "train/auto_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>

#include "comm/thread_world.hpp"
#include "engine/engine_test_util.hpp"
#include "support/expect_input_error.hpp"
#include "train/plan_config.hpp"
#include "train/train_run.hpp"

namespace tz {
namespace {

// gcd x 2, node x 2 (auto), Frontier's figures and device: 4 ranks, so plans differ in every state.
Topology four_ranks() {
  nlohmann::json doc = {
      {"name", "four"},
      {"tiers",
       {{{"name", "gcd"}, {"fanout", 2}, {"bandwidth_GBps", 200}, {"latency_us", 2}},
        {{"name", "node"}, {"fanout", "auto"}, {"bandwidth_GBps", 12.5}, {"latency_us", 5}}}},
      {"host_tier", "gcd"},
      {"device",
       {{"name", "MI250X GCD"},
        {"peak_tflops", 191.5},
        {"memory_gib", 64},
        {"memory_bandwidth_GBps", 1600}}}};
  return Topology::from_json(doc, "four").resolve(4);
}

TrainConfig auto_config() {
  test::RunSpec spec;
  spec.seq = 8;
  spec.micro_batch = 2;
  spec.grad_accum = 2;
  spec.steps = 2;
  TrainConfig c = test::train_config(spec);
  c.plan = kAutoPlan;
  return c;
}

TEST(AutoPlan, ChoosesTheFastestFittingPlanAndTheRunBuildsIt) {
  const Topology topo = four_ranks();
  const GptConfig model = test::tiny_gpt();
  const AutoPlan choice = choose_auto_plan(auto_config(), model, topo);
  ASSERT_GT(choice.ranked.size(), 10u);
  EXPECT_EQ(choice.model.seq_len(), 8);
  const perf::PlanCandidate& best = choice.ranked.front();
  for (const auto& c : choice.ranked) {
    if (c.cost.fits == best.cost.fits) {
      EXPECT_LE(best.cost.step_s, c.cost.step_s) << c.plan.name();
    }
    EXPECT_EQ(c.plan.options().micro_batch_size, 2) << c.plan.name();
    EXPECT_EQ(c.plan.options().grad_accum_steps, 2) << c.plan.name();
  }
  // The search over the same inputs, called directly, ranks the same plan first.
  perf::ModelShape shape;
  shape.config = model;
  shape.seq = 8;
  PlanOptions base;
  base.micro_batch_size = 2;
  base.grad_accum_steps = 2;
  const auto direct = perf::search_plans(shape, topo, base, choice.cost_options);
  ASSERT_EQ(direct.size(), choice.ranked.size());
  EXPECT_TRUE(same_plan(direct.front().plan, best.plan));
  EXPECT_DOUBLE_EQ(direct.front().cost.step_s, best.cost.step_s);

  const TrainRun run = make_train_run(choice.config, model, topo, 4);
  EXPECT_TRUE(same_plan(run.plan, best.plan)) << run.plan.describe(topo);
  EXPECT_EQ(run.plan.name(), best.plan.name());
  EXPECT_EQ(run.micro_batch, 2);
  EXPECT_EQ(run.grad_accum, 2);
  EXPECT_FLOAT_EQ(run.engine.adamw.lr, 3e-3f);  // the rest of the configuration is kept
  EXPECT_EQ(run.steps, 2);
}

TEST(AutoPlan, RecomputationIsPricedAsTheRunAsks) {
  TrainConfig c = auto_config();
  EXPECT_FALSE(choose_auto_plan(c, test::tiny_gpt(), four_ranks()).cost_options.recompute);
  c.activation_recompute = true;
  const AutoPlan on = choose_auto_plan(c, test::tiny_gpt(), four_ranks());
  EXPECT_TRUE(on.cost_options.recompute);
  EXPECT_TRUE(on.config.activation_recompute);
}

// Emitted block -> TrainConfig -> PartitionPlan gives back the plan, for every searched plan and
// every preset, through the JSON text as a user's file would carry it.
TEST(PlanConfig, EveryPlanRoundTripsThroughTheEmittedBlock) {
  const Topology topo = four_ranks();
  PlanOptions base;
  base.micro_batch_size = 3;
  base.grad_accum_steps = 5;
  base.prefetch_depth = 2;
  base.quant_block = 128;
  perf::ModelShape shape;
  shape.config = test::tiny_gpt();
  std::vector<PartitionPlan> plans;
  for (const auto& c : perf::search_plans(shape, topo, base)) plans.push_back(c.plan);
  for (const auto& name : PartitionPlan::preset_names())
    plans.push_back(perf::preset_with_options(name, topo, base));
  PlanOptions fp32 = base;
  fp32.dtype_mode = DTypeMode::fp32;
  plans.push_back(PartitionPlan::preset("zero3", topo).with_options(fp32));
  ASSERT_GT(plans.size(), 20u);
  for (const auto& plan : plans) {
    const std::string text = plan_config_json(plan, topo, true).dump();
    const TrainConfig cfg = TrainConfig::from_json(nlohmann::json::parse(text), "emitted.json");
    EXPECT_TRUE(cfg.activation_recompute);
    const PartitionPlan back = plan_from_config(cfg, test::tiny_gpt(), topo);
    EXPECT_TRUE(same_plan(back, plan)) << plan.name() << "\n" << text << "\n" << back.describe(topo);
    EXPECT_EQ(back.name(), plan.name());
    // with_plan, the in-process route --plan auto takes, builds the same plan.
    EXPECT_TRUE(
        same_plan(plan_from_config(with_plan(TrainConfig{}, plan, topo), test::tiny_gpt(), topo), plan))
        << plan.name();
  }
}

TEST(PlanConfig, SamePlanSeesEveryField) {
  const Topology topo = four_ranks();
  const PartitionPlan a = PartitionPlan::preset("zero3", topo);
  EXPECT_TRUE(same_plan(a, a.with_name("other")));
  EXPECT_FALSE(same_plan(a, a.with_tier(ModelState::optim, 0)));
  PlanOptions o = a.options();
  o.prefetch_depth = 3;
  EXPECT_FALSE(same_plan(a, a.with_options(o)));
  o = a.options();
  o.collectives = CollectiveAlgo::flat;
  EXPECT_FALSE(same_plan(a, a.with_options(o)));
}

TEST(AutoPlan, RefusesKeysThatFixThePlan) {
  const Topology topo = four_ranks();
  TrainConfig c = auto_config();
  c.placement.w_fwd = "gcd";
  test::expect_input_error([&] { choose_auto_plan(c, test::tiny_gpt(), topo); }, {"tierzero.W_fwd", "auto"});
  c = auto_config();
  c.qgz = false;
  test::expect_input_error([&] { choose_auto_plan(c, test::tiny_gpt(), topo); }, {"qgz", "auto"});
  c = auto_config();
  c.collectives = "flat";
  test::expect_input_error([&] { choose_auto_plan(c, test::tiny_gpt(), topo); }, {"tierzero.collectives"});
  c = auto_config();
  c.seq_len = 99;
  test::expect_input_error([&] { choose_auto_plan(c, test::tiny_gpt(), topo); }, {"sequence_length", "99"});
  // Without a device peak the cost model cannot price compute: said, not guessed.
  test::expect_input_error(
      [&] { choose_auto_plan(auto_config(), test::tiny_gpt(), Topology::load("flat").resolve(4)); },
      {"peak_tflops"});
  // "auto" reaching the run builder unresolved is an error, not a preset lookup.
  test::expect_input_error([&] { plan_from_config(auto_config(), test::tiny_gpt(), topo); },
                           {"auto", "planner"});
}

TEST(PlanConfig, ReadsCustomPlanAndCheckedPlanName) {
  const Topology topo = four_ranks();
  auto cfg = TrainConfig::from_json(
      nlohmann::json::parse(R"({"tierzero": {"plan": "custom", "plan_name": "mine", "W_fwd": "node",
                                             "G": "gcd", "O": "node"}})"),
      "c.json");
  const PartitionPlan p = plan_from_config(cfg, test::tiny_gpt(), topo);
  EXPECT_EQ(p.name(), "mine");
  EXPECT_EQ(p.tier(ModelState::w_fwd), 1);
  EXPECT_EQ(p.tier(ModelState::w_bwd), 1);
  EXPECT_EQ(p.tier(ModelState::grad), 0);
  EXPECT_EQ(p.tier(ModelState::optim), 1);
  test::expect_input_error(
      [] { TrainConfig::from_json(nlohmann::json::parse(R"({"tierzero": {"plan": ""}})"), "c.json"); },
      {"c.json", "plan", "custom"});
  test::expect_input_error(
      [] {
        TrainConfig::from_json(nlohmann::json::parse(R"({"tierzero": {"plan_name": "a\u0001b"}})"), "c.json");
      },
      {"c.json", "plan_name"});
}

// The chosen plan runs: 4 ranks as threads, two steps, finite losses, and each rank's ledger holds
// exactly the bytes per tier the cost model priced for the winner.
TEST(AutoPlan, ChosenPlanTrainsOnFourRanksMovingThePredictedBytes) {
  const Topology topo = four_ranks();
  const GptConfig model = test::tiny_gpt();
  const AutoPlan choice = choose_auto_plan(auto_config(), model, topo);
  const TrainRun run = make_train_run(choice.config, model, topo, 4);
  const auto tokens = test::synthetic_tokens(4000, model.vocab_size);
  std::mutex mu;
  std::vector<std::string> failures;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, model, run.plan, run.engine);
    DataLoader loader(tokens, run.micro_batch, run.engine.seq, mesh.world().rank(), 4, run.engine.seed);
    for (int s = 0; s < run.steps; ++s) {
      const EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
      std::lock_guard lock(mu);
      if (!std::isfinite(st.loss) || st.skipped)
        failures.push_back(fmt::format("step {}: loss {}", s, st.loss));
      for (const auto& t : choice.ranked.front().cost.tiers) {
        const double got = st.traffic.count(t.name) ? st.traffic.at(t.name).bytes : 0.0;
        if (std::abs(got - t.bytes) > 1e-9 * t.bytes)
          failures.push_back(fmt::format("rank {} step {} tier {}: ledger {} B, predicted {} B",
                                         mesh.world().rank(), s, t.name, got, t.bytes));
      }
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << choice.ranked.front().plan.name() << ": " << f;
}

}  // namespace
}  // namespace tz
