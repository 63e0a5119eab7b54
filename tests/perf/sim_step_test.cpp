// A whole step's collectives on the simulated transport against the cost model's closed forms, and
// the simulated ranks' traffic ledger against the step schedule's bytes, for every preset.
#include "perf/sim_step.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "perf/auto_planner.hpp"

namespace tz::perf {
namespace {

// Small enough that 8 rank threads run a step's collectives in well under a second.
ModelShape small_model() {
  return model_shape_from_json(
      nlohmann::json::parse(
          R"({"n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 256})"),
      "small");
}

TEST(SimStep, EveryPresetMatchesClosedFormAndScheduleOnFrontierMini) {
  const ModelShape m = small_model();
  const Topology topo = Topology::load("frontier-mini");
  for (const auto& name : PartitionPlan::preset_names())
    for (CollectiveAlgo algo : {CollectiveAlgo::hierarchical, CollectiveAlgo::flat}) {
      PlanOptions base;
      base.grad_accum_steps = 2;
      base.collectives = algo;
      const std::string what = name + " " + std::string(collective_algo_name(algo));
      const PartitionPlan plan = preset_with_options(name, topo, base);
      const SimStepResult r = simulate_step_comm(m, topo, plan);
      // Absolute slack: the simulated clocks run near 1000 s (sim_step.cpp), where one double ulp is
      // 1.1e-13 s, and a step updates them hundreds of times (flat rings: 7 steps per collective).
      const double ulps = 1e-11;
      EXPECT_NEAR(r.simulated_total_s, r.closed_form_total_s, 1e-9 * r.closed_form_total_s + ulps) << what;
      for (const auto& t : r.tiers) {
        EXPECT_NEAR(t.simulated_s, t.closed_form_s, 1e-9 * t.closed_form_s + ulps) << what << " " << t.name;
        EXPECT_EQ(t.ledger_bytes, t.schedule_bytes) << what << " " << t.name;
      }
      if (algo == CollectiveAlgo::flat && name == "zero3") {
        ASSERT_EQ(r.tiers.size(), 4u);
        EXPECT_EQ(r.tiers[3].name, "world");  // the flat ring's own row
        EXPECT_GT(r.tiers[3].ledger_bytes, 0);
      }
    }
}

TEST(SimStep, SlowReductionsAreChargedAsTheClosedFormSays) {
  const ModelShape m = small_model();
  const Topology topo = Topology::load("frontier-mini");
  const PartitionPlan plan = preset_with_options("zero3", topo, {});
  const SimStepResult fast = simulate_step_comm(m, topo, plan);
  const SimStepResult slow = simulate_step_comm(m, topo, plan, {.reduce_GBps = 5});
  EXPECT_GT(slow.simulated_total_s, fast.simulated_total_s);
  EXPECT_NEAR(slow.simulated_total_s, slow.closed_form_total_s, 1e-9 * slow.closed_form_total_s);
}

}  // namespace
}  // namespace tz::perf
