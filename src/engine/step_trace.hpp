// The engine's executed order as nodes of its step graph (plan/step_graph.hpp): with tracing on,
// every acquisition is recorded as the model starts it (before the gathers it issues), every
// collective as it is issued, and the boundary's computes as they begin, so that a test can hold
// what the engine ran to the graph the cost model prices: the same nodes, each stream in the
// graph's order, every condition met (EngineStep::executed).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "plan/step_graph.hpp"

namespace tz {

class StepTrace {
 public:
  StepTrace(const StepGraph& graph, const StepSchedule& schedule);

  void set_enabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  // Acquisition `position` of the forward (or backward) pass of `micro_batch`.
  void acquisition(bool backward, int micro_batch, int position);
  // The collective of the schedule with this key; the n-th of a step with the same key is the
  // schedule's n-th (a tied range is gathered twice in a forward).
  void collective(CollectivePurpose purpose, int micro_batch, int range);
  // A boundary compute (backward_done, optimizer_check, adamw of `range`).
  void boundary(StepOp op, int range = -1);
  // The nodes recorded since the last call (-1 for an event the graph does not have), and a new step.
  std::vector<int> take();

 private:
  using Key = std::tuple<CollectivePurpose, int, int>;
  const StepGraph& graph_;
  std::map<Key, std::vector<int>> nodes_of_;  // the schedule's collectives' nodes per key, in order
  std::map<Key, std::size_t> seen_;
  bool enabled_ = false;
  std::vector<int> executed_;
};

// Whether `executed` runs `graph` (one step): every node exactly once; compute nodes in list order;
// collectives in schedule order; each node after its conditions (a node waiting for the end or start
// of another comes after it, except that an acquisition may issue, as it starts, the gather it
// waits for). Empty when it does; else what is wrong, naming the nodes.
std::string check_executed_order(const StepGraph& graph, const std::vector<int>& executed);

}  // namespace tz
