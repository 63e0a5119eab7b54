// Delay injection through a whole training run: every preset, quantized ones included, gives the
// same losses, gradient norms and final master weights, bit for bit, with and without seeded random
// sleeps before every send, receive and shared-memory publication of every communicator (ranks as
// threads; the mpirun collective suite runs the same check over MPI). A result that changes names
// an ordering bug: a buffer reused or read before the collective that fills it has finished.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

using test::RunSpec;

test::EngineRun run(const Topology& topo, const PartitionPlan& plan, const std::vector<std::int32_t>& tokens,
                    const RunSpec& s, const CommOptions& comm) {
  return test::run_engine(topo, plan, test::tiny_gpt(), tokens, s, test::engine_options(s), comm);
}

class EngineDelayInjection : public ::testing::TestWithParam<int> {};

TEST_P(EngineDelayInjection, EveryPresetBitwiseUnchanged) {
  const int world = GetParam();
  const Topology topo = test::topology_for_world(world);
  const auto tokens = test::synthetic_tokens(2000, test::tiny_gpt().vocab_size);
  RunSpec spec;
  spec.steps = 3;
  CommOptions plain;
  plain.shared_slot_bytes = 256;  // the shared-memory collectives take many rounds
  plain.timeout_s = 120;
  CommOptions delayed = plain;
  delayed.delay_injection = {.seed = 2024, .max_us = 200};
  for (const std::string& name : PartitionPlan::preset_names()) {
    PartitionPlan plan = PartitionPlan::preset(name, topo);
    PlanOptions o = plan.options();
    o.micro_batch_size = spec.micro_batch;
    o.grad_accum_steps = spec.grad_accum;
    plan = plan.with_options(o);
    const test::EngineRun a = run(topo, plan, tokens, spec, plain),
                          b = run(topo, plan, tokens, spec, delayed);
    const std::string what = name + " on " + std::to_string(world) + " ranks";
    ASSERT_EQ(a.steps.size(), b.steps.size()) << what;
    for (std::size_t i = 0; i < a.steps.size(); ++i) {
      EXPECT_EQ(std::memcmp(&a.steps[i].loss, &b.steps[i].loss, sizeof(float)), 0)
          << what << " step " << i << ": loss " << a.steps[i].loss << " vs " << b.steps[i].loss;
      EXPECT_EQ(std::memcmp(&a.steps[i].grad_norm, &b.steps[i].grad_norm, sizeof(double)), 0)
          << what << " step " << i << ": grad norm " << a.steps[i].grad_norm << " vs "
          << b.steps[i].grad_norm;
      EXPECT_EQ(a.steps[i].skipped, b.steps[i].skipped) << what << " step " << i;
    }
    ASSERT_EQ(a.params.size(), b.params.size()) << what;
    EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0)
        << what << ": final master weights differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, EngineDelayInjection, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace tz
