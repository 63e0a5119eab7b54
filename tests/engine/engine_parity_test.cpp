// Every unquantized plan trains the same model as one process: per-step losses to
// 1e-5 relative and final parameters to 1e-5 normalized error in fp32 mode, at world sizes
// 1, 2, 3, 4, 6, 8, with a vocabulary and widths that do not divide the world.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

using test::PlanCase;
using test::RunSpec;
using test::with_run_options;

std::vector<PlanCase> unquantized_plans() {
  auto custom = [](std::string name, int wf, int wb, int g, int o) {
    return [=](const Topology&) { return PartitionPlan(name, {wf, wb, g, o}, PlanOptions{}); };
  };
  std::vector<PlanCase> plans = test::unquantized_presets();
  // Hand-written assignments: W on the node with a GCD-pair secondary, G and O on the system;
  // W over the system, G on the GCD pair, O on the node (replicated across nodes).
  plans.push_back({"custom-a", custom("custom-a", 1, 0, 2, 2)});
  plans.push_back({"custom-b", custom("custom-b", 2, 2, 0, 1)});
  return plans;
}

using test::EngineRun;
using test::run_engine;

// Relative tolerances: per-step loss, per-step gradient norm, final parameters (normalized error).
void expect_parity(const EngineRun& got, const test::ReferenceRun& ref, double loss_tol, double param_tol,
                   const std::string& what, double norm_tol = 1e-4) {
  ASSERT_EQ(got.steps.size(), ref.steps.size()) << what;
  for (std::size_t i = 0; i < ref.steps.size(); ++i) {
    const double l = got.steps[i].loss, r = ref.steps[i].loss;
    EXPECT_LE(std::abs(l - r), loss_tol * std::abs(r))
        << what << " step " << i << ": loss " << l << " vs " << r;
    EXPECT_LE(std::abs(got.steps[i].grad_norm - ref.steps[i].grad_norm),
              norm_tol * ref.steps[i].grad_norm + 1e-6)
        << what << " step " << i << ": grad norm";
    EXPECT_FALSE(got.steps[i].skipped) << what << " step " << i;
  }
  EXPECT_LE(test::normalized_error(got.params, ref.params), param_tol) << what << ": final parameters";
}

class EngineParity : public ::testing::TestWithParam<int> {};

TEST_P(EngineParity, EveryUnquantizedPlanMatchesOneProcessInFp32) {
  const int world = GetParam();
  const Topology topo = test::topology_for_world(world);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const RunSpec spec;
  const auto ref = test::reference_run(config, tokens, world, spec);
  for (const auto& pc : unquantized_plans()) {
    const PartitionPlan plan = with_run_options(pc.make(topo), spec, DTypeMode::fp32);
    const auto got = run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
    expect_parity(got, ref, 1e-5, 1e-5, fmt::format("{} on {} ranks ({})", pc.name, world, topo.name()));
  }
}

TEST_P(EngineParity, Bf16ModeStaysWithinBf16Tolerance) {
  const int world = GetParam();
  const Topology topo = test::topology_for_world(world);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const RunSpec spec;
  const auto ref = test::reference_run(config, tokens, world, spec);
  for (const char* name : {"zero3", "three-level"}) {
    const PartitionPlan plan = with_run_options(PartitionPlan::preset(name, topo), spec, DTypeMode::bf16);
    const auto got = run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
    // bf16 weights carry 8 bits of mantissa: losses agree to ~1e-2, parameters to a few 1e-3.
    expect_parity(got, ref, 2e-2, 2e-2, fmt::format("{} bf16 on {} ranks", name, world), 2e-2);
  }
}

// More ranges than the engine's gradient buffers (the pool holds four): buffers pass between ranges of
// different sizes from step to step, and each must come back all zero for its next range, whatever
// larger range it held before (in bf16 mode it is cleared while being narrowed for the reduction).
TEST(EngineGradientSlots, MoreRangesThanGradientBuffersMatchOneProcess) {
  const int world = 3;
  const Topology topo = test::topology_for_world(world);
  GptConfig config = test::tiny_gpt();
  config.n_layer = 5;  // 7 ranges, of three sizes
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec spec;
  spec.steps = 4;
  const auto ref = test::reference_run(config, tokens, world, spec);
  for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16}) {
    const bool fp32 = mode == DTypeMode::fp32;
    const PartitionPlan plan = with_run_options(PartitionPlan::preset("zero3", topo), spec, mode);
    const auto got = run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
    expect_parity(got, ref, fp32 ? 1e-5 : 2e-2, fp32 ? 1e-5 : 2e-2, fp32 ? "zero3 fp32" : "zero3 bf16",
                  fp32 ? 1e-4 : 2e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, EngineParity, ::testing::Values(1, 2, 3, 4, 6, 8),
                         [](const auto& info) { return fmt::format("world{}", info.param); });

TEST(EngineAccumulation, KMicroBatchesEqualOneKTimesLargerBatch) {
  const Topology topo = test::topology_for_world(4);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec accum;
  accum.grad_accum = 3;
  accum.steps = 4;
  // Reference: one process, batch 4 x 2, accumulating 3 micro-batches == the 4-rank engine with k = 3.
  const auto ref = test::reference_run(config, tokens, 4, accum);
  const PartitionPlan plan =
      with_run_options(PartitionPlan::preset("three-level", topo), accum, DTypeMode::fp32);
  expect_parity(run_engine(topo, plan, config, tokens, accum, test::engine_options(accum)), ref, 1e-5, 1e-5,
                "three-level, accumulation 3");
}

TEST(EngineClipping, NormEqualsSingleProcessIncludingReplicatedOptimizerState) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec clip;
  clip.grad_clip = 0.05f;  // small enough to clip every step
  clip.steps = 4;
  for (int world : {2, 4, 8}) {
    const Topology topo = test::topology_for_world(world);
    const auto ref = test::reference_run(config, tokens, world, clip);
    for (const char* name : {"mics", "ddp", "zero3"}) {  // mics and ddp: O replicated across tiers
      const PartitionPlan plan = with_run_options(PartitionPlan::preset(name, topo), clip, DTypeMode::fp32);
      const auto got = run_engine(topo, plan, config, tokens, clip, test::engine_options(clip));
      for (std::size_t i = 0; i < ref.steps.size(); ++i)
        EXPECT_NEAR(got.steps[i].grad_norm, ref.steps[i].grad_norm, 1e-5 * ref.steps[i].grad_norm)
            << name << " on " << world << " ranks, step " << i;
      expect_parity(got, ref, 1e-5, 1e-5, fmt::format("{} clipped on {} ranks", name, world));
    }
  }
}

TEST(EnginePrefetch, DeeperPrefetchGivesTheSameResult) {
  const Topology topo = test::topology_for_world(8);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec spec;
  spec.steps = 3;
  const auto ref = test::reference_run(config, tokens, 8, spec);
  for (int depth : {0, 2, 3}) {
    const PartitionPlan plan =
        with_run_options(PartitionPlan::preset("zero3", topo), spec, DTypeMode::fp32, depth);
    expect_parity(run_engine(topo, plan, config, tokens, spec, test::engine_options(spec)), ref, 1e-5, 1e-5,
                  fmt::format("zero3 prefetch {}", depth));
  }
}

}  // namespace
}  // namespace tz
