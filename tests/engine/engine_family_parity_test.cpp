// Every unquantized plan trains a Llama and a GPT-NeoX as one process does (the GPT-2 suite is
// engine_parity_test.cpp): per-step losses and gradient norms to 1e-5 relative and final parameters to
// 1e-5 normalized error in fp32, at world sizes 1, 2, 3, 4 and 8; grouped-query shapes, an untied head
// and a vocabulary no world divides included.
#include <gtest/gtest.h>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

struct FamilyWorld {
  std::string family;
  int world;
};

class EngineFamilyParity : public ::testing::TestWithParam<FamilyWorld> {};

TEST_P(EngineFamilyParity, EveryUnquantizedPresetMatchesOneProcessInFp32) {
  const auto [family, world] = GetParam();
  const Topology topo = test::topology_for_world(world);
  const GptConfig config = test::tiny_model(family);
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  test::RunSpec spec;
  spec.steps = 4;
  const auto ref = test::reference_run(config, tokens, world, spec);
  for (const auto& pc : test::unquantized_presets()) {
    const PartitionPlan plan = test::with_run_options(pc.make(topo), spec, DTypeMode::fp32);
    const auto got = test::run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
    const std::string what = fmt::format("{} {} on {} ranks", family, pc.name, world);
    ASSERT_EQ(got.steps.size(), ref.steps.size()) << what;
    for (std::size_t i = 0; i < ref.steps.size(); ++i) {
      EXPECT_NEAR(got.steps[i].loss, ref.steps[i].loss, 1e-5 * std::abs(ref.steps[i].loss))
          << what << " step " << i;
      EXPECT_NEAR(got.steps[i].grad_norm, ref.steps[i].grad_norm, 1e-5 * ref.steps[i].grad_norm + 1e-6)
          << what << " step " << i;
    }
    EXPECT_LE(test::normalized_error(got.params, ref.params), 1e-5) << what << ": final parameters";
  }
}

// bf16 weights carry 8 bits of mantissa: losses agree to ~1e-2, parameters to a few 1e-3.
TEST(EngineFamilyBf16, ThreeLevelStaysWithinBf16Tolerance) {
  const int world = 4;
  const Topology topo = test::topology_for_world(world);
  for (const char* family : {"llama", "gpt_neox"}) {
    const GptConfig config = test::tiny_model(family);
    const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
    test::RunSpec spec;
    spec.steps = 4;
    const auto ref = test::reference_run(config, tokens, world, spec);
    const PartitionPlan plan =
        test::with_run_options(PartitionPlan::preset("three-level", topo), spec, DTypeMode::bf16);
    const auto got = test::run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
    for (std::size_t i = 0; i < ref.steps.size(); ++i)
      EXPECT_NEAR(got.steps[i].loss, ref.steps[i].loss, 2e-2 * std::abs(ref.steps[i].loss))
          << family << " step " << i;
    EXPECT_LE(test::normalized_error(got.params, ref.params), 2e-2) << family;
  }
}

std::vector<FamilyWorld> family_worlds() {
  std::vector<FamilyWorld> v;
  for (const char* f : {"llama", "gpt_neox"})
    for (int w : {1, 2, 3, 4, 8}) v.push_back({f, w});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Families, EngineFamilyParity, ::testing::ValuesIn(family_worlds()),
                         [](const auto& info) {
                           return fmt::format("{}_world{}", info.param.family, info.param.world);
                         });

}  // namespace
}  // namespace tz
