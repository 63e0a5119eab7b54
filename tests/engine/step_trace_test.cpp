// The check that holds the engine's executed order to its step graph (engine/step_trace.hpp): a
// real step's order passes, and every way of breaking it is caught and named.
#include "engine/step_trace.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

void expect_refused(const StepGraph& graph, const std::vector<int>& executed, const std::string& words) {
  const std::string why = check_executed_order(graph, executed);
  EXPECT_NE(why.find(words), std::string::npos) << "got: '" << why << "', expected: " << words;
}

TEST(StepTrace, TheEnginesOrderPassesAndEveryBreakIsNamed) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const Topology topo = test::topology_for_world(2);
  PlanOptions o = PartitionPlan::preset("three-level", topo).options();
  o.micro_batch_size = 2;
  o.grad_accum_steps = 2;
  const PartitionPlan plan = PartitionPlan::preset("three-level", topo).with_options(o);
  EngineOptions opts = test::engine_options({});
  opts.trace_collectives = true;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, opts);
    DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 2, 5);
    const EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    const StepGraph& g = engine.graph();
    const std::vector<int>& ran = st.executed;
    ASSERT_EQ(check_executed_order(g, ran), "");
    ASSERT_EQ(ran.size(), g.nodes().size());

    std::vector<int> bad = ran;
    bad.pop_back();
    expect_refused(g, bad, "never ran");
    bad = ran;
    bad.push_back(ran.front());
    expect_refused(g, bad, "ran twice");
    bad = ran;
    bad.push_back(-1);
    expect_refused(g, bad, "is not a node of the step graph");
    // Two computations swapped: out of the compute stream's order.
    bad = ran;
    const auto f0 = std::find(bad.begin(), bad.end(), g.forward_node(0, 0));
    const auto f1 = std::find(bad.begin(), bad.end(), g.forward_node(0, 1));
    std::iter_swap(f0, f1);
    expect_refused(g, bad, "on its stream");
    // The first AdamW moved before the non-finite vote that decides it.
    bad = ran;
    const int adam = g.find(StepOp::adamw, 0);
    int vote = -1;
    for (std::size_t i = 0; i < engine.schedule().collectives().size(); ++i)
      if (engine.schedule().collectives()[i].purpose == CollectivePurpose::nonfinite_flag)
        vote = g.collective_node(static_cast<int>(i));
    ASSERT_GE(vote, 0);
    bad.erase(std::find(bad.begin(), bad.end(), adam));
    bad.insert(std::find(bad.begin(), bad.end(), vote), adam);
    expect_refused(g, bad, "which it waits for");
  });
}

}  // namespace
}  // namespace tz
