// The overlapped engine against its schedule and against time: every preset issues exactly the
// step schedule's collectives in the schedule's order (pipelined boundary and prefetch included, in
// both collective modes, with accumulation and every prefetch depth) and runs its step graph's
// nodes in the graph's order with every condition met, and a run whose sends and
// receives are randomly delayed gives bitwise the losses, norms and weights of an undelayed run.
#include <gtest/gtest.h>

#include "comm/thread_world.hpp"
#include "delay_transport.hpp"
#include "engine/collective_issuer.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

PartitionPlan with(PartitionPlan p, int accum, int prefetch, DTypeMode mode, CollectiveAlgo algo) {
  PlanOptions o = p.options();
  o.micro_batch_size = 2;
  o.grad_accum_steps = accum;
  o.prefetch_depth = prefetch;
  o.dtype_mode = mode;
  o.collectives = algo;
  o.quant_block = 32;  // small blocks, so the tiny model's qgZ takes the quantized path
  return p.with_options(o);
}

std::string describe(const IssuedCollective& c) {
  return fmt::format("{} mb {} range {}", collective_purpose_name(c.purpose), c.micro_batch, c.range);
}

TEST(EngineOrder, IssueOrderEqualsTheScheduleForEveryPreset) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  struct Shape {
    int accum, prefetch;
  };
  for (int world : {3, 8}) {
    const Topology topo = test::topology_for_world(world);
    for (const auto& name : PartitionPlan::preset_names())
      for (CollectiveAlgo algo : {CollectiveAlgo::hierarchical, CollectiveAlgo::flat})
        for (Shape sh : {Shape{1, 1}, Shape{2, 0}, Shape{1, 2}}) {
          const PartitionPlan plan =
              with(PartitionPlan::preset(name, topo), sh.accum, sh.prefetch, DTypeMode::bf16, algo);
          EngineOptions opts = test::engine_options({});
          opts.trace_collectives = true;
          run_thread_mesh(topo, [&](Mesh& mesh) {
            ShardedEngine engine(mesh, config, plan, opts);
            DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), world, 5);
            const auto expected = issue_order(engine.schedule());
            const std::string what =
                fmt::format("{} {} accum {} prefetch {} on {} ranks, rank {}", name,
                            collective_algo_name(algo), sh.accum, sh.prefetch, world, mesh.world().rank());
            for (int s = 0; s < 2; ++s) {
              const EngineStep st =
                  engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
              ASSERT_EQ(st.issued.size(), expected.size()) << what << " step " << s;
              for (std::size_t i = 0; i < expected.size(); ++i)
                ASSERT_EQ(st.issued[i], expected[i])
                    << what << " step " << s << " collective " << i << ": " << describe(st.issued[i])
                    << " vs " << describe(expected[i]);
              // The same step as the graph the cost model prices: every node once, each stream in
              // the graph's order, every condition met.
              ASSERT_EQ(check_executed_order(engine.graph(), st.executed), "") << what << " step " << s;
              EXPECT_GE(st.exposed_boundary_s, 0.0) << what;
              EXPECT_LE(st.exposed_boundary_s, st.seconds) << what;
            }
          });
        }
  }
}

struct RunResult {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<float> params;
};

RunResult run(const Topology& topo, const PartitionPlan& plan, const TransportWrap& wrap = {}) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const EngineOptions opts = test::engine_options({});
  const test::EngineRun r = test::run_engine(
      topo, plan, config, tokens, {.seq = opts.seq, .micro_batch = 2, .steps = 3, .seed = 5}, opts, {}, wrap);
  RunResult out;
  for (const EngineStep& st : r.steps) {
    out.losses.push_back(st.loss);
    out.norms.push_back(st.grad_norm);
  }
  out.params = r.params;
  return out;
}

// Sends and receives delayed by up to 300 us at random: collectives, host tasks and the pipelined
// boundary complete in other orders, yet every preset (quantized ones in bf16 as they run) gives
// bitwise the same run.
TEST(EngineOverlap, DelayedTransportChangesNoResult) {
  const Topology topo = test::topology_for_world(8);
  for (const auto& name : PartitionPlan::preset_names()) {
    const PartitionPlan base = PartitionPlan::preset(name, topo);
    const bool quantized = base.options().qwz || base.options().qgz;
    for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16}) {
      if (mode == DTypeMode::bf16 && !quantized && name != "three-level") continue;
      const PartitionPlan plan = with(base, 2, 1, mode, CollectiveAlgo::hierarchical);
      const RunResult plain = run(topo, plan);
      const RunResult delayed = run(topo, plan, test::delayed_transports(300));
      const std::string what = fmt::format("{} {}", name, dtype_mode_name(mode));
      ASSERT_EQ(plain.losses.size(), 3u) << what;
      EXPECT_EQ(plain.losses, delayed.losses) << what;
      EXPECT_EQ(plain.norms, delayed.norms) << what;
      EXPECT_TRUE(plain.params == delayed.params) << what << ": final weights differ";
    }
  }
}

}  // namespace
}  // namespace tz
