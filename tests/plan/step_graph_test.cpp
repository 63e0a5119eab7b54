// The step graph (plan/step_graph.hpp) by hand on a small layout: its nodes and the conditions the
// engine's order and the cost model's timeline both follow.
#include "plan/step_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "plan/partition_plan.hpp"
#include "plan_test_util.hpp"

namespace tz {
namespace {

using plan_test::mini;
using plan_test::small_ranges;

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct Built {
  ShardLayout layout;
  StepSchedule schedule;
  StepGraph graph;
};

Built build(const PlanOptions& options, BoundaryMode mode,
            const AcquisitionOrder& order = sequential_order(3), const std::string& preset = "zero3") {
  const Topology t = mini();
  ShardLayout layout(small_ranges(), t, PartitionPlan::preset(preset, t).with_options(options));
  StepSchedule schedule(layout, order);
  StepGraph graph(layout, schedule, order, mode);
  return {std::move(layout), std::move(schedule), std::move(graph)};
}

int refresh_node(const Built& b, int range) {
  const auto& cols = b.schedule.collectives();
  for (int i = 0; i < static_cast<int>(cols.size()); ++i)
    if (cols[i].purpose == CollectivePurpose::weight_refresh && cols[i].range == range)
      return b.graph.collective_node(i);
  return -1;
}

TEST(StepGraph, AcquisitionsFirstThenTheBoundaryThenTheCollectivesInScheduleOrder) {
  const Built b = build({.prefetch_depth = 1, .grad_accum_steps = 2}, BoundaryMode::pipelined);
  const auto& nodes = b.graph.nodes();
  ASSERT_EQ(b.graph.acquisitions(), 2 * (3 + 3));
  for (int a = 0; a < b.graph.acquisitions(); ++a) {
    EXPECT_EQ(nodes[a].acquisition, a);
    EXPECT_EQ(nodes[a].op, a % 6 < 3 ? StepOp::forward : StepOp::backward);
    EXPECT_EQ(nodes[a].micro_batch, a / 6);
    EXPECT_EQ(nodes[a].range, a % 6 < 3 ? a % 6 : 2 - (a % 6 - 3));  // 0 1 2 | 2 1 0
  }
  EXPECT_EQ(b.graph.forward_node(1, 2), 8);
  EXPECT_EQ(b.graph.backward_node(1, 0), 9);
  // backward_done, the check, then AdamW in order of first forward use.
  EXPECT_EQ(nodes[12].op, StepOp::backward_done);
  EXPECT_EQ(nodes[13].op, StepOp::optimizer_check);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(b.graph.find(StepOp::adamw, r), 14 + r);
  const auto& cols = b.schedule.collectives();
  for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
    EXPECT_EQ(b.graph.collective_node(i), 17 + i);
    EXPECT_EQ(nodes[17 + i].collective, i);
    EXPECT_EQ(nodes[17 + i].stream, StepStream::comm);
  }
  EXPECT_EQ(nodes.size(), 17 + cols.size());
  EXPECT_EQ(b.graph.node_name(8), "forward mb1 h1");
  EXPECT_EQ(b.graph.node_name(b.graph.collective_node(0)), "W_fwd all-gather emb mb0");
}

TEST(StepGraph, GathersAreIssuedAtTheStartOfThePrefetchingAcquisition) {
  for (int depth : {0, 1, 2}) {
    const Built b = build({.prefetch_depth = depth, .grad_accum_steps = 2}, BoundaryMode::pipelined);
    const auto& nodes = b.graph.nodes();
    int gathers = 0;
    for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
      const StepNode& g = nodes[n];
      if (g.op != StepOp::collective) continue;
      const CollectivePurpose p = b.schedule.collectives()[g.collective].purpose;
      if (p != CollectivePurpose::weight_gather_fwd && p != CollectivePurpose::weight_gather_bwd) continue;
      ++gathers;
      const int a = g.acquisition;
      EXPECT_EQ(nodes[a].range, g.range) << "depth " << depth;
      EXPECT_TRUE(contains(nodes[a].after_end, n)) << "acquisition " << a << " waits for its gather";
      if (depth == 0) {
        EXPECT_EQ(g.after_end, a > 0 ? std::vector<int>{a - 1} : std::vector<int>{});
        EXPECT_TRUE(g.after_start.empty());
      } else {
        EXPECT_EQ(g.after_start, a - depth > 0 ? std::vector<int>{a - depth} : std::vector<int>{});
      }
      // The previous step's refresh of the range, or its AdamW where W is sliced from O (zero3).
      const int before = g.after_previous_end.at(0);
      const int refresh = refresh_node(b, g.range);
      EXPECT_EQ(before, refresh >= 0 ? refresh : b.graph.find(StepOp::adamw, g.range));
    }
    // Per micro-batch: 3 forward gathers and the backward's that the forward's tail does not serve.
    EXPECT_EQ(gathers, 2 * (3 + 3 - b.schedule.reused_in_backward())) << "depth " << depth;
  }
}

TEST(StepGraph, PipelinedBoundaryFollowsEachRangesFinalGradient) {
  // three-level: G -> O, a replica all-reduce and a refresh for every range.
  const Built b = build({.prefetch_depth = 1, .grad_accum_steps = 2}, BoundaryMode::pipelined,
                        sequential_order(3), "three-level");
  const auto& nodes = b.graph.nodes();
  const auto& cols = b.schedule.collectives();
  auto node_of = [&](CollectivePurpose p, int micro, int range) {
    for (int i = 0; i < static_cast<int>(cols.size()); ++i)
      if (cols[i].purpose == p && cols[i].micro_batch == micro && cols[i].range == range)
        return b.graph.collective_node(i);
    return -1;
  };
  const int done = b.graph.find(StepOp::backward_done), check = b.graph.find(StepOp::optimizer_check);
  for (int r = 0; r < 3; ++r) {
    const int red0 = node_of(CollectivePurpose::grad_reduce, 0, r),
              red1 = node_of(CollectivePurpose::grad_reduce, 1, r);
    const int g2o = node_of(CollectivePurpose::grad_boundary_reduce, -1, r);
    const int rep = node_of(CollectivePurpose::grad_replica_reduce, -1, r);
    const int refresh = node_of(CollectivePurpose::weight_refresh, -1, r);
    ASSERT_GE(red1, 0);
    // The reduction after the backward acquisition of its range (position 2 - r).
    EXPECT_EQ(nodes[red0].after_end, std::vector<int>{b.graph.backward_node(0, 2 - r)});
    EXPECT_EQ(nodes[red1].after_end, std::vector<int>{b.graph.backward_node(1, 2 - r)});
    EXPECT_TRUE(contains(nodes[done].after_end, red0) && contains(nodes[done].after_end, red1));
    if (g2o >= 0) {
      EXPECT_EQ(nodes[g2o].after_end, std::vector<int>{red1}) << "the last micro-batch's reduction";
      EXPECT_TRUE(contains(nodes[done].after_end, g2o));
    }
    if (rep >= 0) {
      EXPECT_EQ(nodes[rep].after_end, std::vector<int>{g2o >= 0 ? g2o : red1});
    }
    ASSERT_GE(refresh, 0);
    EXPECT_EQ(nodes[refresh].after_end, std::vector<int>{b.graph.find(StepOp::adamw, r)});
  }
  const int norm = node_of(CollectivePurpose::grad_norm, -1, -1);
  const int vote = node_of(CollectivePurpose::nonfinite_flag, -1, -1);
  const int loss = node_of(CollectivePurpose::loss_sum, -1, -1);
  EXPECT_EQ(nodes[norm].after_end, std::vector<int>{done});
  EXPECT_TRUE(contains(nodes[check].after_end, norm));
  EXPECT_EQ(nodes[vote].after_end, std::vector<int>{check});
  EXPECT_TRUE(contains(nodes[b.graph.find(StepOp::adamw, 0)].after_end, vote));
  EXPECT_EQ(nodes[loss].after_end, std::vector<int>{b.graph.forward_node(1, 2)});
}

TEST(StepGraph, ExposedBoundaryRunsPhaseAfterPhase) {
  const Built b = build({.prefetch_depth = 1, .grad_accum_steps = 1}, BoundaryMode::exposed);
  const auto& nodes = b.graph.nodes();
  const auto& cols = b.schedule.collectives();
  const int done = b.graph.find(StepOp::backward_done), reds = b.graph.find(StepOp::reductions_done),
            reps = b.graph.find(StepOp::replicas_done), opt = b.graph.find(StepOp::optimizer),
            refreshes = b.graph.find(StepOp::refreshes_done), step_done = b.graph.find(StepOp::step_done);
  ASSERT_TRUE(done >= 0 && reds >= 0 && reps >= 0 && opt >= 0 && refreshes >= 0 && step_done >= 0);
  EXPECT_EQ(b.graph.find(StepOp::adamw), -1);
  EXPECT_EQ(nodes[0].after_previous_end, std::vector<int>{step_done});
  for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
    const StepNode& n = nodes[b.graph.collective_node(i)];
    switch (cols[i].purpose) {
      case CollectivePurpose::grad_boundary_reduce:
        EXPECT_EQ(n.after_end, std::vector<int>{done});
        break;
      case CollectivePurpose::grad_replica_reduce:
        EXPECT_EQ(n.after_end, std::vector<int>{reds});
        break;
      case CollectivePurpose::weight_refresh:
        EXPECT_EQ(n.after_end, std::vector<int>{opt});
        EXPECT_TRUE(contains(nodes[refreshes].after_end, b.graph.collective_node(i)));
        break;
      case CollectivePurpose::loss_sum:
        EXPECT_EQ(n.after_end, std::vector<int>{refreshes});
        EXPECT_EQ(nodes[step_done].after_end, std::vector<int>{b.graph.collective_node(i)});
        break;
      case CollectivePurpose::weight_gather_fwd:
      case CollectivePurpose::weight_gather_bwd:
        EXPECT_EQ(n.after_previous_end, std::vector<int>{step_done});
        break;
      default:
        break;
    }
  }
}

// A tied embedding reported last (grads_ready): its reduction waits for the acquisition after which
// the model reports it, not for its own last acquisition.
TEST(StepGraph, ReductionsFollowTheGradsReadyOrder) {
  const AcquisitionOrder order{{0, 1, 2, 0}, {0, 2, 1, 0}, {2, 1, 0}};
  const Built b = build({.prefetch_depth = 1}, BoundaryMode::pipelined, order);
  const auto& cols = b.schedule.collectives();
  for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
    if (cols[i].purpose != CollectivePurpose::grad_reduce) continue;
    const int after = b.graph.nodes()[b.graph.collective_node(i)].after_end.at(0);
    const int expected_position = cols[i].range == 2 ? 1 : cols[i].range == 1 ? 2 : 3;
    EXPECT_EQ(after, b.graph.backward_node(0, expected_position)) << "range " << cols[i].range;
  }
}

}  // namespace
}  // namespace tz
