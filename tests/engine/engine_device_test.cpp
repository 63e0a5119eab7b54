// The engine on the strict emulated device (device/emulated_backend.hpp): its state, gathers,
// gradients, activations and collectives' buffers are device memory the host cannot dereference, so a
// run that completes touched device bytes only through the backend. Every preset plan (the quantized
// zeropp included, and W_bwd kept on an inner tier by hpZ), in fp32 and bf16, at 1, 2, 3, 4 and 8
// ranks as threads, gives bitwise the losses, gradient norms and final weights of the cpu backend.
#include <gtest/gtest.h>

#include <cstring>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

using test::RunSpec;

void expect_same_run(const test::EngineRun& got, const test::EngineRun& want, const std::string& what) {
  ASSERT_EQ(got.steps.size(), want.steps.size()) << what;
  for (std::size_t s = 0; s < got.steps.size(); ++s) {
    EXPECT_EQ(std::memcmp(&got.steps[s].loss, &want.steps[s].loss, sizeof(float)), 0)
        << what << " step " << s << ": loss " << got.steps[s].loss << " vs " << want.steps[s].loss;
    EXPECT_EQ(got.steps[s].grad_norm, want.steps[s].grad_norm) << what << " step " << s;
  }
  ASSERT_EQ(got.params.size(), want.params.size()) << what;
  EXPECT_EQ(std::memcmp(got.params.data(), want.params.data(), got.params.size() * sizeof(float)), 0)
      << what << ": final weights differ";
}

class EngineOnDevices : public ::testing::TestWithParam<int> {};

TEST_P(EngineOnDevices, EveryPresetIsBitwiseTheCpuBackend) {
  const int world = GetParam();
  const Topology topo = test::topology_for_world(world);
  RunSpec spec;
  spec.steps = 2;
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
      expect_same_run(test::run_engine_on_device(DeviceKind::emulated, topo, plan, spec, tokens, 60),
                      test::run_engine_on_device(DeviceKind::cpu, topo, plan, spec, tokens, 60), what);
    }
}

// The other families' layers (RMSNorm, rotary, grouped-query attention, SwiGLU, exact GELU, the parallel
// residual, an untied head) on the emulated device, the quantized zeropp plan included: bitwise the cpu
// backend too.
TEST(EngineOnDevicesFamilies, LlamaAndNeoxAreBitwiseTheCpuBackend) {
  const int world = 3;
  const Topology topo = test::topology_for_world(world);
  RunSpec spec;
  spec.steps = 2;
  for (const char* family : {"llama", "gpt_neox"}) {
    const GptConfig config = test::tiny_model(family);
    const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
    for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16})
      for (const char* name : {"zero3", "three-level", "zeropp"}) {
        if (mode == DTypeMode::fp32 && std::string(name) == "zeropp") continue;  // quantization: bf16 plans
        const PartitionPlan plan = test::with_run_options(PartitionPlan::preset(name, topo), spec, mode);
        const std::string what = fmt::format("{} {} {} on {} ranks", family, name,
                                             mode == DTypeMode::fp32 ? "fp32" : "bf16", world);
        expect_same_run(
            test::run_engine_on_device(DeviceKind::emulated, topo, plan, spec, tokens, 60, config),
            test::run_engine_on_device(DeviceKind::cpu, topo, plan, spec, tokens, 60, config), what);
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, EngineOnDevices, ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace tz
