// The bytes per tier a real run records equal the plan's StepSchedule exactly, for every preset,
// quantized ones included, and so do the bytes each step reports (per tier; by collective kind, what
// completed during the step, which over the run is all but the last refresh); the state memory the
// engine allocates equals the memory plan's prediction.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

PartitionPlan for_run(PartitionPlan p, int micro_batch, int accum, DTypeMode mode,
                      CollectiveAlgo collectives = CollectiveAlgo::hierarchical) {
  PlanOptions o = p.options();
  o.micro_batch_size = micro_batch;
  o.grad_accum_steps = accum;
  o.dtype_mode = mode;
  o.collectives = collectives;
  return p.with_options(o);
}

// Every preset, hierarchical and with flat collectives (one ring per multi-tier group, booked under
// the group's label: "world", "gcd+node", ...).
void expect_ledger_equals_schedule(CollectiveAlgo collectives) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (int world : {3, 8}) {
    const Topology topo = test::topology_for_world(world);
    for (const auto& name : PartitionPlan::preset_names()) {
      for (DTypeMode mode : {DTypeMode::bf16, DTypeMode::fp32}) {
        const PartitionPlan plan = for_run(PartitionPlan::preset(name, topo), 2, 2, mode, collectives);
        EngineOptions opts = test::engine_options({});
        run_thread_mesh(topo, [&](Mesh& mesh) {
          ShardedEngine engine(mesh, config, plan, opts);
          DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), world, 5);
          const auto expected = engine.schedule().bytes_per_tier();
          const auto kinds0 = mesh.ledger().snapshot_by_kind();
          TrafficByKey steps_by_kind;  // summed over the steps' reports
          const auto algorithms = engine.schedule().algorithm_counts();
          for (int s = 0; s < 2; ++s) {
            const auto before = mesh.ledger().snapshot();
            const auto algorithms_before = mesh.ledger().algorithms();
            EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
            engine.settle();  // the step's weight refresh is still in flight when step() returns
            const auto recorded = mesh.ledger().since(before);
            const std::string what =
                fmt::format("{} {} {} on {} ranks, rank {}, step {}", name, dtype_mode_name(mode),
                            collective_algo_name(collectives), world, mesh.world().rank(), s);
            for (const auto& [tier, bytes] : expected) {
              // What the communicators recorded, and what the step reports: equal up to the rounding
              // of the ledger's double accumulation (a missing 8-byte scalar is 1e-4).
              const double got = recorded.count(tier) ? recorded.at(tier).bytes : 0.0;
              EXPECT_NEAR(got, bytes, 1e-9 * bytes) << what << ", ledger, tier " << tier;
              const double reported = st.traffic.count(tier) ? st.traffic.at(tier).bytes : 0.0;
              EXPECT_NEAR(reported, bytes, 1e-9 * bytes) << what << ", EngineStep::traffic, tier " << tier;
            }
            for (const auto& [tier, t] : recorded)
              EXPECT_TRUE(expected.count(tier) || t.bytes == 0) << "unexpected traffic on " << tier;
            // Each step ran the algorithm its plan chose (ranks as threads: shared memory wherever
            // the options allow), step for step.
            std::map<std::string, std::uint64_t> ran = mesh.ledger().algorithms();
            for (const auto& [key, n] : algorithms_before) ran[key] -= n;
            std::erase_if(ran, [](const auto& kv) { return kv.second == 0; });
            EXPECT_EQ(ran, algorithms) << what;
            EXPECT_EQ(mesh.ledger().shared_memory_fallbacks(), 0u) << what;
            for (const auto& [tier, t] : st.traffic)
              EXPECT_TRUE(expected.count(tier) || t.bytes == 0) << "unexpected traffic on " << tier;
            for (const auto& [kind, k] : st.by_kind) {
              EXPECT_TRUE(k.ops == 0 || k.seconds > 0) << what << ", kind " << kind;
              steps_by_kind[kind].bytes += k.bytes;
              steps_by_kind[kind].ops += k.ops;
            }
            double tier_seconds = 0, kind_seconds = 0;
            for (const auto& [tier, t] : st.traffic) tier_seconds += t.seconds;
            for (const auto& [kind, k] : st.by_kind) kind_seconds += k.seconds;
            EXPECT_NEAR(kind_seconds, tier_seconds, 1e-9 + 1e-9 * tier_seconds) << what;
          }
          // Each step reports by kind what completed since the previous one ended: over the run that
          // is everything but the last refresh (an all-gather) finishing after step() returned.
          for (const auto& [kind, total] : mesh.ledger().since_by_kind(kinds0)) {
            const TierTraffic& reported = steps_by_kind[kind];
            if (kind == "all_gather") {
              EXPECT_LE(reported.bytes, total.bytes) << name << " rank " << mesh.world().rank();
            } else {
              EXPECT_DOUBLE_EQ(reported.bytes, total.bytes) << name << " " << kind;
              EXPECT_EQ(reported.ops, total.ops) << name << " " << kind;
            }
          }
        });
      }
    }
  }
}

TEST(EngineTraffic, LedgerEqualsScheduleForEveryPreset) {
  expect_ledger_equals_schedule(CollectiveAlgo::hierarchical);
}

TEST(EngineTraffic, LedgerEqualsScheduleForEveryPresetWithFlatCollectives) {
  expect_ledger_equals_schedule(CollectiveAlgo::flat);
}

TEST(EngineMemory, AllocatedStatesEqualTheMemoryPlan) {
  const GptConfig config = test::tiny_gpt();
  for (int world : {1, 6, 8}) {
    const Topology topo = test::topology_for_world(world);
    for (const auto& name : PartitionPlan::preset_names()) {
      const PartitionPlan plan = for_run(PartitionPlan::preset(name, topo), 2, 1, DTypeMode::bf16);
      run_thread_mesh(topo, [&](Mesh& mesh) {
        ShardedEngine engine(mesh, config, plan, test::engine_options({}));
        const MemoryPlan predicted = engine.predicted_memory();
        const EngineMemory got = engine.allocated_memory();
        EXPECT_EQ(got.w_fwd, predicted.w_fwd_bytes) << name << " on " << world;
        EXPECT_EQ(got.w_bwd, predicted.w_bwd_bytes) << name << " on " << world;
        EXPECT_EQ(got.grad, predicted.grad_bytes) << name << " on " << world;
        EXPECT_EQ(got.optim, predicted.optim_bytes) << name << " on " << world;
      });
    }
  }
}

}  // namespace
}  // namespace tz
