// The sharded engine on the GPU: model state, gathers, gradients, activations and every collective's
// buffers in CUDA memory (the thread transport stages them through host memory). Every preset plan,
// zeropp's quantized collectives included, in fp32 and bf16, at 1, 2, 3 and 4 ranks as threads,
// trains as the cpu backend does: the same losses, gradient norms and final weights within fp32
// rounding of the GPU's summation orders; and the runs on the GPU agree across world sizes as the
// cpu ones do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "comm/thread_world.hpp"
#include "cuda/cuda_test_support.hpp"
#include "engine/engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

void engine_expect_close(const test::EngineRun& got, const test::EngineRun& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.steps.size(), want.steps.size()) << what;
  for (std::size_t s = 0; s < got.steps.size(); ++s) {
    EXPECT_NEAR(got.steps[s].loss, want.steps[s].loss, tol * std::abs(want.steps[s].loss))
        << what << " step " << s;
    EXPECT_NEAR(got.steps[s].grad_norm, want.steps[s].grad_norm, 10 * tol * want.steps[s].grad_norm)
        << what << " step " << s;
  }
  ASSERT_EQ(got.params.size(), want.params.size()) << what;
  const double error = test::normalized_error(got.params, want.params);
  EXPECT_LT(error, tol) << what << ": final weights";
  double loss_error = 0;
  for (std::size_t s = 0; s < got.steps.size(); ++s)
    loss_error =
        std::max(loss_error, std::abs(double(got.steps[s].loss) - want.steps[s].loss) / want.steps[s].loss);
  std::printf("%-32s loss rel diff %.2e  weights rel error %.2e\n", what.c_str(), loss_error, error);
}

class EngineOnCuda : public ::testing::TestWithParam<int> {};

TEST_P(EngineOnCuda, EveryPresetTrainsAsOnTheCpuBackend) {
  TZ_REQUIRE_CUDA();
  const int world = GetParam();
  const Topology topo = test::topology_for_world(world);
  test::RunSpec spec;
  spec.steps = 3;
  spec.grad_accum = 2;
  const auto tokens = test::synthetic_tokens(4000, test::tiny_gpt().vocab_size);
  std::vector<std::pair<std::string, PartitionPlan>> plans;
  for (const auto& c : test::unquantized_presets()) plans.emplace_back(c.name, c.make(topo));
  plans.emplace_back("zeropp", PartitionPlan::preset("zeropp", topo));
  for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16})
    for (const auto& [name, preset] : plans) {
      if (mode == DTypeMode::fp32 && name == "zeropp") continue;  // quantization runs in bf16 plans
      const PartitionPlan plan = test::with_run_options(preset, spec, mode);
      const std::string what =
          fmt::format("{} {} on {} ranks", name, mode == DTypeMode::fp32 ? "fp32" : "bf16", world);
      // bf16 weights round the GPU's slightly different fp32 results to bf16: an ulp there is 2^-8.
      const double tol = mode == DTypeMode::fp32 ? 1e-4 : 2e-2;
      engine_expect_close(test::run_engine_on_device(DeviceKind::cuda, topo, plan, spec, tokens, 120),
                          test::run_engine_on_device(DeviceKind::cpu, topo, plan, spec, tokens, 120), tol,
                          what);
    }
}

INSTANTIATE_TEST_SUITE_P(Worlds, EngineOnCuda, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace tz
